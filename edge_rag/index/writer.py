"""Writing documents into an index: one document, one transaction, vectors kept in step.

Design: docs/design/index.md
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import BadDocument
from ..models.embedder import Embedder
from ..progress import Progress
from ..store import DocumentRecord, IndexStore, VectorIndex
from .chunking import Chunk, Chunker
from .graph_builder import GraphBuilder, GraphReport
from .reader import Document, Skipped, SkipTally

# How documents are embedded (docs/design/index.md).
EMBED_GROUP = 64  # chunks embedded and written per group
VECTOR_CACHE = 4096  # texts whose vectors one document remembers (its repeated lines embed once)
AHEAD = 4  # small documents chunked and being embedded ahead of the one being written


@dataclass
class _Staged:
    """A small document's chunks, with their distinct texts being embedded on a worker."""

    fingerprint: tuple[str, int]
    chunks: list[Chunk]
    texts: list[str]
    vectors: Future[np.ndarray]

    def vector_rows(self) -> np.ndarray:
        """One vector per chunk (repeated texts share theirs)."""
        row = {t: n for n, t in enumerate(self.texts)}
        return self.vectors.result()[[row[c.text] for c in self.chunks]]


Ready = _Staged | BadDocument | None


@dataclass
class InsertReport:
    """What an insert did: documents added, skipped as duplicates, or refused."""

    added: list[str] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    graph: GraphReport = field(default_factory=GraphReport)
    skips: SkipTally = field(default_factory=SkipTally, repr=False)

    @property
    def ok(self) -> bool:
        """True when no document was refused."""
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (the CLI's ``index --json`` output)."""
        graph = self.graph
        return {
            "added": self.added,
            "duplicates": [{"source": s, "doc_id": d} for s, d in self.duplicates],
            "failed": [{"source": s, "error": e} for s, e in self.failed],
            "warnings": self.warnings,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "graph": {"chunks": graph.chunks, "extracted": graph.extracted, "cached": graph.cached,
                      "failures": graph.failures, "seconds": round(graph.seconds, 3)},
        }


class Indexer:
    """Adds and deletes documents; the caller holds the index's write lock."""

    def __init__(self, store: IndexStore, chunk_vectors: VectorIndex, embedder: Embedder,
                 chunker: Chunker, save_every: int, graph: GraphBuilder) -> None:
        self.store = store
        self.chunk_vectors = chunk_vectors
        self.embedder = embedder
        self.chunker = chunker
        self.save_every = save_every
        self.graph = graph
        self._stop: Callable[[], None] | None = None

    def insert(self, documents: Iterable[Document | BadDocument | Skipped], progress: bool,
               stop: Callable[[], None] | None = None) -> InsertReport:
        """Insert documents one transaction each, then extract their chunks into the graph.

        Bad documents are reported, never fatal; skipped paths become warnings. Chunks left
        out of the graph by an earlier, interrupted run are extracted too. With ``stop`` the
        documents are one transaction, which whatever ``stop`` raises (it is called between
        documents and between groups of a document's chunks) rolls back whole.
        """
        if stop is not None:
            return self._insert_whole(documents, progress, stop)
        report, start, unsaved = InsertReport(), time.perf_counter(), 0
        bar = Progress("indexing", "doc", enabled=progress)
        for doc, ready in self._ahead(documents):
            unsaved += self._insert_reported(doc, ready, report)
            bar.set_postfix(chunks=report.chunks)
            bar.update()
            if unsaved >= self.save_every:
                self.save_vectors()
                unsaved = 0
        if unsaved:
            self.save_vectors()
        bar.close()
        report.warnings.extend(report.skips.warnings())
        report.graph = self.graph.update(progress)
        report.seconds = time.perf_counter() - start
        return report

    def _insert_whole(self, documents: Iterable[Document | BadDocument | Skipped], progress: bool,
                      stop: Callable[[], None]) -> InsertReport:
        report, start = InsertReport(), time.perf_counter()
        self._stop = stop
        try:
            with self.store.write():
                try:
                    self.write_documents(_stopping(documents, stop), report)
                    stop()
                except BaseException:
                    self.unwrite(report.added)
                    raise
        finally:
            self._stop = None
        self.finish(report, progress)
        report.seconds = time.perf_counter() - start
        return report

    def delete(self, doc_id: str) -> int:
        """Delete a document with its chunks, vectors and the graph it alone supports.

        Returns the number of chunks removed. It is one transaction: all of it or nothing. The
        write-ahead log is emptied after it (``IndexStore.checkpoint``): the text is in no file.
        """
        with self.store.write():
            chunk_ids = [c.id for c in self.store.document_chunks(doc_id)]
            touched = self.graph.tables.keys_of_chunks(chunk_ids)
            self.store.delete_document(doc_id)
            self.store.bump_generation("chunk")
            self.graph.refresh(touched)
        self.chunk_vectors.remove(chunk_ids)
        self.save_vectors()
        self.graph.save_vectors()
        self.graph.embed_pending()
        self.store.checkpoint()
        return len(chunk_ids)

    def write_documents(self, documents: Iterable[Document | BadDocument | Skipped],
                        report: InsertReport) -> None:
        """Insert documents as ``insert`` does but without its ending (vector files, graph): inside
        the caller's transaction each document is a savepoint, committed with the caller's."""
        for doc, ready in self._ahead(documents):
            self._insert_reported(doc, ready, report)

    def unwrite(self, doc_ids: Sequence[str]) -> None:
        """Forget the chunk vectors of documents written in a transaction about to roll back."""
        for doc_id in doc_ids:
            self.chunk_vectors.remove([c.id for c in self.store.document_chunks(doc_id)])

    def remove_rows(self, doc_ids: Sequence[str]) -> list[int]:
        """Delete documents and re-derive the graph they touched, inside the caller's transaction;
        returns their chunk ids (for ``forget_vectors`` once it commits)."""
        chunk_ids = [c.id for d in doc_ids for c in self.store.document_chunks(d)]
        if not chunk_ids:
            return []
        touched = self.graph.tables.keys_of_chunks(chunk_ids)
        for doc_id in doc_ids:
            self.store.delete_document(doc_id)
        self.store.bump_generation("chunk")
        self.graph.refresh(touched)
        return chunk_ids

    def forget_vectors(self, chunk_ids: Sequence[int]) -> None:
        """Drop deleted chunks from the chunk vectors (after their deletion committed)."""
        if chunk_ids:
            self.chunk_vectors.remove(list(chunk_ids))

    def finish(self, report: InsertReport, progress: bool) -> None:
        """What ends a run of ``write_documents`` and ``remove_rows``: the vector files saved, the
        new chunks extracted into the graph, the grouped skips reported."""
        self.save_vectors()
        report.warnings.extend(report.skips.warnings())
        report.graph = self.graph.update(progress)
        self.graph.save_vectors()
        self.graph.embed_pending()

    def save_vectors(self) -> None:
        """Persist the chunk vector file at the generation SQLite now holds."""
        self.chunk_vectors.save(int(self.store.vector_state("chunk")["generation"]))

    def _ahead(self, documents: Iterable[Document | BadDocument | Skipped]
               ) -> Iterator[tuple[Document | BadDocument | Skipped, Ready]]:
        """Each item, with a small new document's chunks staged: chunked here and embedded on
        the embedder's workers a few documents ahead of the one being written. Passages of one
        or two chunks are too few to spread over the workers one document at a time; staged,
        they keep the workers busy as the threaded session would (docs/design/index.md), and a
        build holds one session. The vectors are those the document would get alone; the write
        is as before, but a document commits once the next few have been read."""
        window: deque[tuple[Document | BadDocument | Skipped, Ready]] = deque()
        for doc in documents:
            window.append((doc, self._stage(doc) if isinstance(doc, Document) else None))
            if len(window) > AHEAD:
                yield window.popleft()
        yield from window

    def _stage(self, doc: Document) -> Ready:
        try:
            fingerprint = doc.fingerprint()
            if self.store.document_id_for_hash(fingerprint[0]) is not None:
                return None  # a duplicate: reported when its turn comes
            chunks = list(itertools.islice(self.chunker.chunks(doc.blocks()), EMBED_GROUP + 1))
        except BadDocument as exc:
            return exc  # raised when its turn comes, as it would have been then
        if not chunks or len(chunks) > EMBED_GROUP:
            return None  # a large document is streamed, a group of chunks at a time
        texts = list(dict.fromkeys(c.text for c in chunks))
        return _Staged(fingerprint, chunks, texts, self.embedder.embed_later(texts))

    def _insert_reported(self, doc: Document | BadDocument | Skipped, ready: Ready,
                         report: InsertReport) -> int:
        if isinstance(doc, Skipped):
            if doc.group:
                report.skips.add(doc)
            else:
                report.warnings.append(str(doc))
            return 0
        if isinstance(doc, BadDocument):
            report.failed.append((doc.source, str(doc)))
            return 0
        try:
            doc_id, n_chunks, duplicate = self._insert_one(doc, ready)
        except BadDocument as exc:
            report.failed.append((doc.source, str(exc)))
            return 0
        report.warnings.extend(doc.warnings)
        if duplicate:
            report.duplicates.append((doc.source, doc_id))
            return 0
        report.added.append(doc_id)
        report.chunks += n_chunks
        return 1

    def _insert_one(self, doc: Document, ready: Ready) -> tuple[str, int, bool]:
        sha, n_chars = ready.fingerprint if isinstance(ready, _Staged) else doc.fingerprint()
        existing = self.store.document_id_for_hash(sha)
        if existing is not None:
            return existing, 0, True
        doc_id = sha[:16]
        added: list[int] = []
        try:
            with self.store.write():
                self.store.add_document(DocumentRecord(doc_id, doc.source, sha, n_chars, 0, doc.metadata))
                if isinstance(ready, BadDocument):
                    raise ready
                n_chunks = self._write_staged(doc_id, ready, added) if ready else \
                    self._write_chunks(doc_id, self.chunker.chunks(doc.blocks()), added)
                if n_chunks == 0:
                    raise BadDocument(f"{doc.source}: document has no text to index")
                self.store.finish_document(doc_id, n_chunks)
                self.store.bump_generation("chunk")
        except BaseException:
            self.chunk_vectors.remove(added)
            raise
        return doc_id, n_chunks, False

    def _write_chunks(self, doc_id: str, chunks: Iterator[Chunk], added: list[int]) -> int:
        cache: dict[str, np.ndarray] = {}
        n_written = 0
        while group := list(itertools.islice(chunks, EMBED_GROUP)):
            if self._stop is not None:
                self._stop()
            vectors = self._embed_cached([c.text for c in group], cache)
            n_written += self._write_group(doc_id, n_written, group, vectors, added)
        return n_written

    def _write_staged(self, doc_id: str, staged: _Staged, added: list[int]) -> int:
        return self._write_group(doc_id, 0, staged.chunks, staged.vector_rows(), added)

    def _write_group(self, doc_id: str, first: int, group: list[Chunk], vectors: np.ndarray,
                     added: list[int]) -> int:
        ids = self.store.add_chunks(doc_id, first, [c.text for c in group], [c.n_tokens for c in group],
                                    vectors)
        self.chunk_vectors.add(ids, vectors)
        added.extend(ids)
        return len(ids)

    def _embed_cached(self, texts: list[str], cache: dict[str, np.ndarray]) -> np.ndarray:
        # Repeated text within one document (boilerplate, logs) is embedded once.
        if len(cache) > VECTOR_CACHE:
            cache.clear()
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            cache.update(zip(missing, self.embedder.embed_spread(missing)))
        return np.stack([cache[t] for t in texts])



def _stopping(items: Iterable[Document | BadDocument | Skipped],
              stop: Callable[[], None]) -> Iterator[Document | BadDocument | Skipped]:
    """The items, with ``stop`` called before each one is read."""
    iterator = iter(items)
    while True:
        stop()
        item = next(iterator, None)
        if item is None:
            return
        yield item
