"""Reading sources into documents: files, folders, zip archives, JSON/JSONL records, strings.

Text policy: UTF-8 (a BOM is stripped; UTF-16 with a BOM is accepted). Invalid UTF-8 bytes
are decoded with replacement (U+FFFD) and the document carries a warning; a file with a NUL
character is binary and rejected (at once when it is in the first ``SNIFF`` bytes, else when the
stream reaches it). Empty or whitespace-only documents are rejected. Everything is streamed in
blocks, so a large file is never held in memory whole, and no stream yields more than the
document limit (a zip member is never inflated past it). A container (zip, ``.docx``, PDF, mbox)
is read within the budget of ``limits.py``: its members' declared and inflated bytes and their
count.

Design: docs/design/index.md
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import io
import json
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..errors import BadDocument, MissingExtra
from .document_titles import text_title
from .formats import CONTAINERS, FORMATS, Blob, reader_for
from .limits import Budget, Limits, as_limits, zip_entries

TEXT_SUFFIXES = (".txt", ".md")
RECORD_SUFFIXES = (".json", ".jsonl")
SUPPORTED = TEXT_SUFFIXES + RECORD_SUFFIXES + (".zip",) + tuple(FORMATS)
TEXT_FIELDS = ("text", "body", "content")
BLOCK = 1 << 16  # bytes per streamed read (index.md)
SNIFF = 8192  # bytes read first to tell a binary file (a NUL) before anything is decoded
# What reading a damaged file or archive member can raise, besides BadDocument. zipfile raises
# NotImplementedError for an unknown compression method, RuntimeError for an encrypted member.
READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError)


@dataclass
class Document:
    """A document to index: where it came from and how to read its text (streamed)."""

    source: str
    blocks: Callable[[], Iterator[str]]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_text(cls, text: str, source: str = "text", metadata: dict | None = None) -> Document:
        """A document from an in-memory string."""
        return cls(source, lambda: iter([text]), dict(metadata or {}))

    def fingerprint(self) -> tuple[str, int]:
        """(sha256 of the UTF-8 text, number of characters); rejects empty text."""
        digest, n_chars, blank = hashlib.sha256(), 0, True
        for block in self.blocks():
            digest.update(block.encode("utf-8"))
            n_chars += len(block)
            blank = blank and not block.strip()
        if blank:
            raise BadDocument(f"{self.source}: document is empty or whitespace only")
        return digest.hexdigest(), n_chars


@dataclass(frozen=True)
class Skipped:
    """A path a folder walk left out on purpose; the insert reports it as a warning."""

    source: str
    reason: str
    group: str = ""  # skips of one kind (an extension, a missing extra) are reported together

    def __str__(self) -> str:
        return f"{self.source}: {self.reason}"


Item = Document | BadDocument | Skipped


@dataclass
class SkipTally:
    """Skips of one group (an extension, a missing extra, attachments) counted into one warning."""

    groups: dict[str, tuple[Skipped, int]] = field(default_factory=dict)

    def add(self, skipped: Skipped) -> None:
        """Count a grouped skip (the first one of each group is kept as the example)."""
        first, count = self.groups.get(skipped.group, (skipped, 0))
        self.groups[skipped.group] = (first, count + 1)

    def warnings(self) -> list[str]:
        """One line per group: the reason, the count and an example."""
        return [f"{first.reason} ({count:,} skipped, e.g. {first.source})"
                for first, count in self.groups.values()]


def read_sources(paths: list[str | Path], limits: Limits | int,
                 follow_symlinks: bool = False) -> Iterator[Item]:
    """Documents from paths; a path that cannot be read yields a BadDocument instead.

    ``limits`` (or a document limit in bytes) bounds each document and container. A path given
    explicitly is read even through a symbolic link; inside a folder, a link that leads out of
    the folder is followed only with ``follow_symlinks`` (else it is Skipped).
    """
    limits = as_limits(limits)
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield BadDocument(f"{path}: no such file or directory")
        elif path.is_dir():
            yield from _read_folder(path, limits, follow_symlinks)
        elif not path.is_file():
            yield BadDocument(f"{path}: not a regular file (a pipe, socket or device); not read")
        else:
            yield from _read_file(path, limits)


def _read_folder(folder: Path, limits: Limits, follow_symlinks: bool) -> Iterator[Item]:
    for path in walk(folder, follow_symlinks):
        if isinstance(path, Path):
            yield from _read_file(path, limits)
        else:
            yield path


def walk(folder: Path, follow_symlinks: bool) -> Iterator[Path | Item]:
    """Supported files under ``folder`` in path order, plus what was skipped and why."""
    root = folder.resolve()
    found: list[Path | Item] = []
    seen = {root}
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            found.append(BadDocument(f"{current}: cannot read folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            found.extend(_visit(Path(entry.path), entry, root, follow_symlinks, seen, pending))
    yield from sorted(found, key=lambda item: item if isinstance(item, Path) else Path(item.source))


def _visit(path: Path, entry: os.DirEntry, root: Path, follow_symlinks: bool, seen: set[Path],
           pending: list[Path]) -> Iterator[Path | Item]:
    is_dir = entry.is_dir(follow_symlinks=True)
    if not is_dir and path.suffix.lower() not in SUPPORTED:
        if not path.name.startswith("."):  # hidden files (.DS_Store, .gitignore) go unmentioned
            yield unsupported(path)
        return
    link = entry.is_symlink()
    if link and not path.exists():
        yield Skipped(str(path), "broken symbolic link, skipped")
        return
    if not (link or is_dir):  # a plain entry of a folder the walk entered: inside, no need to resolve
        yield path if entry.is_file() else Skipped(
            str(path), "not a regular file (a pipe, socket or device), skipped")
        return
    resolved = path.resolve()
    if link and not follow_symlinks and not resolved.is_relative_to(root):
        yield Skipped(str(path), f"symbolic link out of the folder (to {resolved}), skipped; "
                      "set follow_symlinks = true to follow it")
    elif is_dir:
        # Each real folder is walked once: links back into the walk add nothing (and no loop).
        if resolved not in seen and (follow_symlinks or not link):
            seen.add(resolved)
            pending.append(path)
    elif entry.is_file(follow_symlinks=True):
        yield path
    else:
        yield Skipped(str(path), "not a regular file (a pipe, socket or device), skipped")


def unsupported(path: Path) -> Skipped:
    """The skip of a file whose type no reader knows (reported once per extension)."""
    suffix = path.suffix.lower() or "(no extension)"
    return Skipped(str(path), f"{suffix} files are not a supported type", group=f"type {suffix}")


def _read_file(path: Path, limits: Limits) -> Iterator[Item]:
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
        if suffix == ".zip":
            yield from _read_zip(path, limits)
            return
        if suffix not in CONTAINERS:
            check_size(str(path), size, limits.document)
        yield from _read_blob(Blob.from_path(path, size), limits)
    except MissingExtra as exc:
        yield Skipped(str(path), str(exc), group=f"extra {FORMATS[suffix].extra}")
    except BadDocument as exc:
        yield exc
    except READ_ERRORS as exc:
        yield BadDocument(f"{path}: cannot read: {exc}")


def _read_blob(blob: Blob, limits: Limits) -> Iterator[Item]:
    """The documents of a file's bytes, on disk or in memory, by its extension (a format whose
    extra is missing raises ``MissingExtra``)."""
    read = reader_for(blob.suffix)
    if read is not None:
        yield from read(blob, limits)
        return
    opener = capped_opener(blob.name, blob.open, limits.document)
    if blob.suffix in RECORD_SUFFIXES:
        yield from _read_records(blob.name, opener, blob.suffix)
    else:
        yield _text_document(blob.name, opener)


def read_upload(name: str, data: bytes, limits: Limits | int) -> Iterator[Item]:
    """Documents from a file's bytes held in memory (``edge-rag serve``'s uploads): ``name``'s suffix
    chooses the reader as for a file on disk, and nothing is written anywhere. A format whose extra
    is missing raises ``MissingExtra`` (a file on disk is Skipped instead)."""
    suffix = PurePosixPath(name).suffix.lower()
    limits = as_limits(limits)
    try:
        check_size(name, len(data), limits.document)
        if suffix not in SUPPORTED:
            raise BadDocument(f"{name}: unsupported file type (supported: {', '.join(SUPPORTED)})")
        if suffix == ".zip":
            yield from _read_zip(name, limits, data)
            return
        yield from _read_blob(Blob.from_bytes(name, data), limits)
    except BadDocument as exc:
        yield exc
    except READ_ERRORS as exc:
        yield BadDocument(f"{name}: cannot read: {exc}")


def _read_zip(path: Path | str, limits: Limits, data: bytes | None = None) -> Iterator[Item]:
    """The text and record members of a zip, within its budget: the entries its end record
    declares, then the sizes its directory declares, then the bytes inflated."""
    def opener() -> IO[bytes]:
        return io.BytesIO(data) if data is not None else open(path, "rb")

    budget = Budget(str(path), limits)
    with opener() as handle:
        budget.declare(zip_entries(handle), 0)
    archive = zipfile.ZipFile(opener())
    members = sorted((i for i in archive.infolist() if not i.is_dir() and _readable(i.filename)),
                     key=lambda i: i.filename)
    budget.declare(len(archive.infolist()), sum(i.file_size for i in members))
    for info in members:
        yield from _read_member(archive, info, f"{path}/{info.filename}", budget)


def _readable(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in TEXT_SUFFIXES + RECORD_SUFFIXES


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, source: str,
                 budget: Budget) -> Iterator[Item]:
    name, limits = info.filename, budget.limits
    opener = capped_opener(source, functools.partial(archive.open, name), limits.document, budget)
    try:
        _check_member_name(source, name)
        check_size(source, info.file_size, limits.document)
        if PurePosixPath(name).suffix.lower() in RECORD_SUFFIXES:
            yield from _read_records(source, opener, PurePosixPath(name).suffix.lower())
        else:
            yield _text_document(source, opener)
    except BadDocument as exc:
        yield exc
    except READ_ERRORS as exc:
        yield BadDocument(f"{source}: cannot read zip member (damaged, or it inflates to other "
                          f"than the archive says): {exc}")


def _check_member_name(source: str, name: str) -> None:
    """Refuse member names that would leave the archive if extracted (``../x``, ``/x``, ``C:x``)."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and parts[0][1:2] == ":"):
        raise BadDocument(f"{source}: unsafe zip member name (absolute or with '..'), refused")


def check_size(source: str, size: int, max_bytes: int) -> None:
    """Refuse a document of ``size`` bytes over the document limit."""
    if size > max_bytes:
        raise BadDocument(
            f"{source}: {size / 2**20:.1f} MB is over the {max_bytes / 2**20:.0f} MB document "
            "limit (setting max_document_mb)"
        )


def capped_opener(source: str, opener: Callable[[], IO[bytes]], max_bytes: int,
                  budget: Budget | None = None) -> Callable[[], IO[bytes]]:
    """An opener whose streams refuse to yield more than ``max_bytes`` (a size on disk or in a
    zip directory can understate what a stream delivers), counted into a container's budget."""
    return lambda: io.BufferedReader(_Capped(source, opener(), max_bytes, budget), BLOCK)


class _Capped(io.RawIOBase):
    """A binary stream that raises BadDocument once more than ``limit`` bytes were read, or
    once its container's budget is spent."""

    def __init__(self, source: str, inner: IO[bytes], limit: int, budget: Budget | None = None) -> None:
        super().__init__()
        self.source, self.inner, self.limit, self.count = source, inner, limit, 0
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(min(len(buffer), self.limit + 1 - self.count))
        self.count += len(data)
        if self.count > self.limit:
            raise BadDocument(f"{self.source}: more than the {self.limit / 2**20:.0f} MB document "
                              "limit when read (setting max_document_mb); refused")
        if self.budget is not None:
            self.budget.reach(self.source, self.count)
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


def _text_document(source: str, opener: Callable[[], IO[bytes]]) -> Document:
    with opener() as handle:
        head = handle.read(SNIFF)
    encoding = _sniff_encoding(source, head)
    title = text_title(head.decode(encoding, errors="ignore"), source)
    doc = Document(source, lambda: guarded(source, _decode_blocks(opener, encoding, doc)),
                   {"title": title})
    return doc


def guarded(source: str, blocks: Iterator[str]) -> Iterator[str]:
    """Blocks whose read errors (a corrupt zip member, a vanished file) become BadDocument."""
    try:
        yield from blocks
    except READ_ERRORS as exc:
        raise BadDocument(f"{source}: cannot read: {exc}") from None


def _sniff_encoding(source: str, head: bytes) -> str:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\x00" in head:
        raise BadDocument(f"{source}: binary file (NUL bytes), not text")
    return "utf-8-sig"


def _decode_blocks(opener: Callable[[], IO[bytes]], encoding: str, doc: Document) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    replaced = False
    with opener() as handle:
        while block := handle.read(BLOCK):
            text = decoder.decode(block)
            replaced = replaced or "\ufffd" in text
            if "\x00" in text:
                raise BadDocument(f"{doc.source}: binary file (NUL bytes), not text")
            yield text
        yield decoder.decode(b"", final=True)
    if replaced and not doc.warnings:
        doc.warnings.append(f"{doc.source}: invalid UTF-8 bytes replaced with U+FFFD")


def _read_records(source: str, opener: Callable[[], IO[bytes]], suffix: str) -> Iterator[Item]:
    with opener() as handle:
        stream = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="replace")
        records = _jsonl(source, stream) if suffix == ".jsonl" else _json(source, stream)
        others: list[int] = []  # records that are not objects: one error for all of them
        for number, record in enumerate(records):
            try:
                if isinstance(record, BadDocument):
                    raise record
                if isinstance(record, dict):
                    yield record_document(source, number, record)
                else:
                    others.append(number)
            except BadDocument as exc:
                yield exc
    if others:
        yield _not_objects(source, others)


def _not_objects(source: str, numbers: list[int]) -> BadDocument:
    shown = ", ".join(f"#{n}" for n in numbers[:3]) + (", ..." if len(numbers) > 3 else "")
    return BadDocument(f"{source}: {len(numbers):,} record(s) are not JSON objects ({shown}); "
                       f"a record must be an object with a text field ({', '.join(TEXT_FIELDS)})")


def _json(source: str, stream: IO[str]) -> Iterator[Any]:
    data = _parse(source, stream.read())
    yield from data if isinstance(data, list) else [data]


def _jsonl(source: str, stream: IO[str]) -> Iterator[Any]:
    """Each non-blank line's value, or a BadDocument for a bad line (the rest is still read)."""
    number = 0
    for line_no, line in enumerate(stream, 1):
        if line.strip():
            try:
                yield _parse(f"{source}#{number}", line, f" (line {line_no})")
            except BadDocument as exc:
                yield exc
            number += 1


def _parse(source: str, text: str, where: str = "") -> Any:
    if "\x00" in text:
        raise BadDocument(f"{source}: binary data (NUL bytes){where}, not JSON")
    try:
        return json.loads(text)
    except RecursionError:
        raise BadDocument(f"{source}: JSON nested too deeply{where}") from None
    except ValueError as exc:
        raise BadDocument(f"{source}: invalid JSON{where}: {exc}") from None


def record_document(source: str, number: int, record: Any) -> Document:
    if not isinstance(record, dict):
        raise BadDocument(f"{source}#{number}: a record must be a JSON object")
    title = record.get("title")
    title = title if isinstance(title, str) and title else None
    name = f"{source}#{record.get('id', title if title is not None else number)}"
    field_name = next((f for f in TEXT_FIELDS if isinstance(record.get(f), str)), None)
    if field_name is None:
        raise BadDocument(f"{name}: no text field (one of {', '.join(TEXT_FIELDS)})")
    metadata = {k: v for k, v in record.items()
                if k != field_name and isinstance(v, (str, int, float, bool))}
    text = f"{title}\n{record[field_name]}" if title is not None else record[field_name]
    doc = Document.from_text(text, name, metadata)
    if "\ufffd" in text:
        doc.warnings.append(f"{name}: invalid UTF-8 bytes replaced with U+FFFD")
    return doc
