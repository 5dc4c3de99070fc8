"""Keeping an index in step with a folder (``edge-rag sync``, ``EdgeRAG.sync``).

A sync compares the folder with what the index last read of it (``store/synced.py``): a new file
is read and inserted ("added"); a file whose size or mtime moved is hashed, and either only its
record is updated ("unchanged") or its new documents replace its old ones in ONE transaction
("replaced"; its unchanged documents are kept, not re-embedded); a file gone takes its documents
with it ("removed"); anything else is skipped on ``os.stat`` alone. A file that changes while it
is read is rolled back and left for the next sync ("busy"). Documents a sync did not add are
never deleted by it. A folder that cannot be listed whole removes nothing; unreadable files are
recorded and reported once; a file skipped for a missing extra is read once the extra is there.

Design: docs/design/sync.md
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadDocument, EdgeRagError
from ..progress import Progress
from ..store import IndexStore
from ..store.synced import FileState
from .limits import Limits
from .reader import BLOCK, Item, Skipped, SkipTally, read_sources, walk
from .writer import Indexer, InsertReport


@dataclass
class SyncPlan:
    """What a sync of a folder has to do, found from ``os.stat`` (and hashes where it moved)."""

    root: Path
    folder: str
    new: list[tuple[str, FileState]] = field(default_factory=list)
    changed: list[tuple[str, FileState]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    touched: list[tuple[str, FileState]] = field(default_factory=list)
    unchanged: int = 0
    walk_items: list[Item] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        """No document to write or remove (touched files only need their record updated)."""
        return not (self.new or self.changed or self.removed)


@dataclass
class SyncReport:
    """What a sync did (or, with ``dry_run``, would do): files by fate, documents and chunks."""

    folder: str
    dry_run: bool = False
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    busy: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    documents_added: int = 0
    documents_removed: int = 0
    chunks: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every file could be read."""
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (``edge-rag sync --json``)."""
        data = asdict(self)
        data["failed"] = [{"source": s, "error": e} for s, e in self.failed]
        data["seconds"] = round(self.seconds, 3)
        return data

    def summary(self) -> str:
        """One line of counts."""
        verb = "would sync" if self.dry_run else "synced"
        text = (f"{verb} {self.folder}: {len(self.added)} added, {len(self.replaced)} replaced, "
                f"{len(self.removed)} removed, {self.unchanged} unchanged")
        if self.busy:
            text += f", {len(self.busy)} changing while read (next time)"
        if not self.dry_run:
            text += (f"; documents +{self.documents_added} -{self.documents_removed}, "
                     f"{self.chunks} chunks in {self.seconds:.1f} s")
        return text + (f"; {len(self.failed)} refused" if self.failed else "")


class _Busy(Exception):
    """The file changed while it was read."""


def plan(store: IndexStore, root: Path, follow_symlinks: bool, index: Path | None = None) -> SyncPlan:
    """Compare the folder with the index's record of it; hashes only files whose stat moved. The
    ``index`` directory, when it lies inside the folder, is left out."""
    if not root.is_dir():
        raise EdgeRagError(f"{root}: not a folder (nothing synced, nothing removed)")
    found = SyncPlan(root, str(root.resolve()))
    known = store.synced.files(found.folder)
    present = set()
    inside = _inside(root, index)
    start = len(os.path.join(str(root), ""))  # walk paths are root/...: cut the prefix as a string
    for item in walk(root, follow_symlinks):
        where = str(item) if isinstance(item, Path) else item.source
        if inside is not None and (where + os.sep).startswith(inside):
            continue
        if isinstance(item, Path):
            rel = where[start:].replace(os.sep, "/")
            present.add(rel)
            _classify(found, rel, where, known.get(rel))
        else:
            found.walk_items.append(item)
    if not any(isinstance(i, BadDocument) for i in found.walk_items):
        found.removed = sorted(set(known) - present)
    return found


def _inside(root: Path, index: Path | None) -> str | None:
    """The index directory as a path under ``root`` as given (with a trailing separator), if it
    lies in the folder."""
    if index is None:
        return None
    try:
        return os.path.join(str(root / index.resolve().relative_to(root.resolve())), "")
    except ValueError:
        return None


def _classify(found: SyncPlan, rel: str, path: str, known: FileState | None) -> None:
    try:
        stat = os.stat(path)
    except OSError as exc:
        found.walk_items.append(BadDocument(f"{path}: cannot read: {exc.strerror or exc}"))
        return
    if known is None:
        found.new.append((rel, FileState(stat.st_size, stat.st_mtime_ns, "")))
    elif (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
        found.unchanged += 1
    else:
        state = FileState(stat.st_size, stat.st_mtime_ns, file_sha256(Path(path)))
        if state.sha256 == known.sha256:
            found.touched.append((rel, state))
            found.unchanged += 1
        else:
            found.changed.append((rel, state))


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK * 4):
            digest.update(block)
    return digest.hexdigest()


def dry_report(found: SyncPlan) -> SyncReport:
    """What the sync would do."""
    report = idle_report(found)
    report.dry_run, report.removed = True, list(found.removed)
    report.added = [rel for rel, _ in found.new]
    report.replaced = [rel for rel, _ in found.changed]
    return report


def touch(store: IndexStore, found: SyncPlan) -> None:
    """Record the new mtimes of files whose bytes did not change."""
    if found.touched:
        with store.write():
            for rel, state in found.touched:
                store.synced.set_file(found.folder, rel, state)


def idle_report(found: SyncPlan) -> SyncReport:
    """The report of a sync with nothing to write: the walk's warnings and errors only."""
    report = SyncReport(str(found.root), unchanged=found.unchanged)
    _walk_notes(found.walk_items, report)
    return report


def _walk_notes(items: list[Item], report: SyncReport) -> None:
    tally = SkipTally()
    for item in items:
        if isinstance(item, BadDocument):
            report.failed.append((item.source, str(item)))
        elif isinstance(item, Skipped) and item.group:
            tally.add(item)
        elif isinstance(item, Skipped):
            report.warnings.append(str(item))
    report.warnings.extend(tally.warnings())


class Syncer:
    """Applies a plan through an ``Indexer`` (the caller holds the index's write lock)."""

    def __init__(self, store: IndexStore, indexer: Indexer, limits: Limits | int,
                 follow_symlinks: bool) -> None:
        self.store = store
        self.indexer = indexer
        self.limits = limits
        self.follow_symlinks = follow_symlinks

    def apply(self, found: SyncPlan, progress: bool) -> SyncReport:
        """Remove, touch, then read new and changed files, one transaction per file."""
        start = time.perf_counter()
        report = SyncReport(str(found.root), unchanged=found.unchanged)
        inserted = InsertReport()
        self._remove(found, report)
        touch(self.store, found)
        bar = Progress("syncing", "file", len(found.new) + len(found.changed), enabled=progress)
        for rel, state in found.new:
            self._file(found, rel, state, report.added, report, inserted)
            bar.update()
        for rel, state in found.changed:
            self._file(found, rel, state, report.replaced, report, inserted)
            bar.update()
        bar.close()
        self.indexer.finish(inserted, progress)
        if report.documents_removed:
            self.store.checkpoint()  # the removed text leaves the write-ahead log too
        _walk_notes(found.walk_items, report)
        report.failed += inserted.failed
        report.warnings += inserted.warnings
        report.documents_added, report.chunks = len(inserted.added), inserted.chunks
        report.seconds = time.perf_counter() - start
        return report

    def _remove(self, found: SyncPlan, report: SyncReport) -> None:
        if not found.removed:
            return
        synced = self.store.synced
        with self.store.write():
            dead = [doc for rel in found.removed for doc in list(synced.links(found.folder, rel))
                    if synced.unlink(found.folder, rel, doc)]
            chunk_ids = self.indexer.remove_rows(dead)
            for rel in found.removed:
                synced.forget(found.folder, rel)
        self.indexer.forget_vectors(chunk_ids)
        report.removed = list(found.removed)
        report.documents_removed += len(dead)

    def _file(self, found: SyncPlan, rel: str, state: FileState, fate: list[str], report: SyncReport,
              inserted: InsertReport) -> None:
        path = found.root / rel
        try:
            if not state.sha256:
                state = state._replace(sha256=file_sha256(path))
            outcome = self._replace(found, rel, path, state, inserted)
        except _Busy:
            report.busy.append(rel)
            return
        except OSError as exc:  # vanished or unreadable between the walk and now
            inserted.failed.append((str(path), f"{path}: cannot read: {exc.strerror or exc}"))
            return
        if outcome is not None:
            removed, had_documents = outcome
            report.documents_removed += removed
            if had_documents:
                fate.append(rel)

    def _replace(self, found: SyncPlan, rel: str, path: Path, state: FileState,
                 inserted: InsertReport) -> tuple[int, bool] | None:
        """The file's documents in place of its old ones, one transaction. Returns (documents
        removed, whether the file gave any), or None when it was skipped for a missing extra."""
        marks = _Marks.of(inserted)
        extra = _ExtraWatch(read_sources([path], self.limits, self.follow_symlinks))
        with self.store.write():
            try:
                self.indexer.write_documents(extra, inserted)
                _check_unchanged(path, state)
            except BaseException:
                self.indexer.unwrite(inserted.added[marks.added:])
                marks.restore(inserted)  # rolled back: none of it happened
                raise
            if extra.missing:
                return None
            new = dict.fromkeys(inserted.added[marks.added:], True)
            for _, doc_id in inserted.duplicates[marks.duplicates:]:
                new.setdefault(doc_id, False)
            dead = self._relink(found.folder, rel, new)
            chunk_ids = self.indexer.remove_rows(dead)
            self.store.synced.set_file(found.folder, rel, state)
        self.indexer.forget_vectors(chunk_ids)
        return len(dead), bool(new)

    def _relink(self, folder: str, rel: str, new: dict[str, bool]) -> list[str]:
        synced = self.store.synced
        old = synced.links(folder, rel)
        for doc_id, owned in new.items():
            synced.link(folder, rel, doc_id, owned or old.get(doc_id, False))
        return [doc for doc in old if doc not in new and synced.unlink(folder, rel, doc)]


@dataclass(frozen=True)
class _Marks:
    """How far an insert report had come before a file: to undo the file's part of it."""

    added: int
    duplicates: int
    failed: int
    warnings: int
    chunks: int

    @classmethod
    def of(cls, report: InsertReport) -> _Marks:
        return cls(len(report.added), len(report.duplicates), len(report.failed), len(report.warnings),
                   report.chunks)

    def restore(self, report: InsertReport) -> None:
        del report.added[self.added:], report.duplicates[self.duplicates:]
        del report.failed[self.failed:], report.warnings[self.warnings:]
        report.chunks = self.chunks


class _ExtraWatch:
    """The items of one file, noting whether it was skipped for a missing extra."""

    def __init__(self, items: Iterable[Item]) -> None:
        self.items = items
        self.missing = False

    def __iter__(self) -> Iterator[Item]:
        for item in self.items:
            if isinstance(item, Skipped) and item.group.startswith("extra"):
                self.missing = True
            yield item


def _check_unchanged(path: Path, state: FileState) -> None:
    try:
        stat = os.stat(path)
    except OSError:
        raise _Busy() from None
    if (stat.st_size, stat.st_mtime_ns) != (state.size, state.mtime_ns):
        raise _Busy()
