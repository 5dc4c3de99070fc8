"""The index's SQLite file: schema, manifest, documents, chunks and vectors at rest.

Design: docs/design/storage.md
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from ..config import Settings
from ..errors import EmbedderMismatch, IndexCorrupt, IndexLocked, NoSuchDocument, NotAnIndex, SchemaMismatch
from .cipher import Key, check_key, connect, database_errors
from .codec import code_rows, decode_rows, encode_rows
from .graph_arrays import WalkTables
from .graph_tables import GraphTables, inserted_id, marks, parts
from .migrations import VECTOR_TABLES, migrate
from .schema import DDL, SCHEMA_VERSION, VECTOR_KINDS
from .synced import SyncedTables

DB_FILE = "index.sqlite"
BUSY_SECONDS = 30  # how long a connection waits for another's lock before it fails (storage.md)
PAGE_SIZE = 8192  # bytes per page of a new plain file (storage.md)


@dataclass(frozen=True)
class DocumentRecord:
    """One stored document (its text lives in its chunks)."""

    id: str
    source: str
    content_sha256: str
    n_chars: int
    n_chunks: int
    metadata: dict[str, Any] = field(default_factory=dict)
    added_at: str = ""


class VectorState(TypedDict):
    """A vector file's bookkeeping: the current generation of its kind in SQLite, and the
    generation, vector count, bytes and CRC-32 recorded when the file was last saved."""

    generation: int
    saved_generation: int | None
    saved_count: int | None
    saved_bytes: int | None
    saved_crc32: int | None


@dataclass(frozen=True)
class ChunkRecord:
    """One stored chunk with the source of its document."""

    id: int
    doc_id: str
    ord: int
    text: str
    n_tokens: int
    source: str


class IndexStore:
    """Typed access to the index's SQLite file (documents, chunks, the graph's tables, sync and vector
    state); every write goes through ``write()``."""

    def __init__(self, conn: sqlite3.Connection, path: Path, key: Key | None = None) -> None:
        self.conn = conn
        self.path = path
        self.key = key
        self.graph = GraphTables(conn)
        self.walk = WalkTables(conn)
        self.synced = SyncedTables(conn)

    @classmethod
    def open(cls, directory: Path, settings: Settings, create: bool = True,
             key: Key | None = None) -> IndexStore:
        """Open the index in ``directory``, creating it when allowed and absent; with a key the
        file is SQLCipher's (``cipher``), created encrypted or refused without the right key."""
        path = directory / DB_FILE
        _check_directory(directory, path, create)
        check_key(path, key)
        directory.mkdir(parents=True, exist_ok=True)
        try:
            conn = connect(path, key, timeout=30, isolation_level=None, check_same_thread=False)
            _configure(conn, settings, encrypted=key is not None)
            store = cls(conn, path, key)
            store._ensure_schema()
        except database_errors() as exc:
            raise IndexCorrupt(f"{path} is not a readable edge-rag index: {exc}") from None
        return store

    @staticmethod
    def check(directory: Path) -> None:
        """NotAnIndex unless ``directory`` holds an index's SQLite file."""
        _check_directory(directory, directory / DB_FILE, create=False)

    @property
    def encrypted(self) -> bool:
        """True for a SQLCipher index (opened with a key)."""
        return self.key is not None

    def close(self) -> None:
        """Close the connection (checkpointing the WAL when this is the last one)."""
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[None]:
        """One atomic write transaction: all of it commits, or none of it. Inside another one it
        is a savepoint: undone alone when it fails, committed only with the outer transaction."""
        if self.conn.in_transaction:
            with self._savepoint():
                yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        self.conn.execute("SAVEPOINT nested")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO nested")
            self.conn.execute("RELEASE nested")
            raise
        self.conn.execute("RELEASE nested")

    @contextmanager
    def unmapped(self) -> Iterator[None]:
        """Read through SQLite's bounded page cache instead of memory-mapping the file.

        A bulk insert touches most of the file (and ``VACUUM`` all of it); mapped pages count in
        the writer's resident memory up to ``sqlite_mmap_mb`` (issue 16's build bound), while
        the page cache stays within ``sqlite_cache_mb``. Readers keep the mapping."""
        mapped = self._pragma("mmap_size")
        self.conn.execute("PRAGMA mmap_size = 0")
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA mmap_size = {mapped}")

    # -- manifest -------------------------------------------------------------------------

    def data_version(self) -> tuple[int, int]:
        """A value that changes whenever any connection commits to the index (SQLite's
        ``data_version`` moves on other connections' commits, ``total_changes`` on this one's)."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0]), self.conn.total_changes

    def manifest(self) -> dict[str, str]:
        """All manifest entries."""
        return dict(self.conn.execute("SELECT key, value FROM manifest").fetchall())

    def bind_embedder(self, identity: dict[str, str]) -> None:
        """Record the embedder on first use; refuse a different one afterwards."""
        manifest = self.manifest()
        if "embedder_name" not in manifest:
            with self.write():
                self.set_manifest({f"embedder_{k}": v for k, v in identity.items()})
            return
        recorded = {k: manifest.get(f"embedder_{k}") for k in identity}
        if recorded != identity:
            raise EmbedderMismatch(
                f"index {self.path.parent} was built with embedder {recorded['name']} "
                f"(dim {recorded['dimension']}, sha256 {str(recorded['sha256'])[:12]}), "
                f"but {identity['name']} (dim {identity['dimension']}, sha256 "
                f"{identity['sha256'][:12]}) is configured; use the same embedder or a new index"
            )

    def index_settings(self) -> dict[str, Any]:
        """Settings recorded at creation that every later insert must keep."""
        return json.loads(self.manifest().get("index_settings", "{}"))

    def _ensure_schema(self) -> None:
        if not self._count("sqlite_schema WHERE type = 'table' AND name = 'manifest'"):
            self._create_schema()
            return
        version = self.manifest().get("schema_version")
        if version in [str(v) for v in range(1, SCHEMA_VERSION)]:
            migrate(self, int(version))
            return
        if version != str(SCHEMA_VERSION):
            raise SchemaMismatch(
                f"index {self.path.parent} has schema version {version}; this edge-rag "
                f"reads version {SCHEMA_VERSION}: rebuild the index or use a matching edge-rag"
            )

    def _create_schema(self) -> None:
        with self.write():
            self.run_ddl()
            self.set_manifest({"schema_version": str(SCHEMA_VERSION), "created_at": _now()})

    def run_ddl(self) -> None:
        """Create what the schema has and the file lacks (every statement is IF NOT EXISTS)."""
        for statement in DDL.split(";"):
            if statement.strip():
                self.conn.execute(statement)
        self.conn.executemany(
            "INSERT OR IGNORE INTO vector_files(kind) VALUES (?)", [(k,) for k in VECTOR_KINDS]
        )

    def record_index_settings(self, values: dict[str, Any]) -> None:
        """Store the chunking and vector settings the index was created with."""
        with self.write():
            self.set_manifest({"index_settings": json.dumps(values, sort_keys=True)})

    def set_manifest(self, values: dict[str, str]) -> None:
        self.conn.executemany(
            "INSERT INTO manifest(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        )

    # -- documents and chunks --------------------------------------------------------------

    def document_id_for_hash(self, content_sha256: str) -> str | None:
        """Id of the document with this content hash, if stored."""
        row = self.conn.execute(
            "SELECT id FROM documents WHERE content_sha256 = ?", (content_sha256,)
        ).fetchone()
        return row[0] if row else None

    def document(self, doc_id: str) -> DocumentRecord:
        """A stored document by id."""
        row = self.conn.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()
        if row is None:
            raise NoSuchDocument(f"no document {doc_id!r} in {self.path.parent}")
        return _document(row)

    def documents(self) -> list[DocumentRecord]:
        """Every stored document, oldest first."""
        rows = self.conn.execute("SELECT * FROM documents ORDER BY rowid").fetchall()
        return [_document(row) for row in rows]

    def add_document(self, doc: DocumentRecord) -> None:
        """Insert the document row (call inside ``write()``, before its chunks)."""
        self.conn.execute(
            "INSERT INTO documents(id, source, content_sha256, n_chars, n_chunks, metadata, added_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (doc.id, doc.source, doc.content_sha256, doc.n_chars, doc.n_chunks,
             json.dumps(doc.metadata, sort_keys=True), doc.added_at or _now()),
        )

    def finish_document(self, doc_id: str, n_chunks: int) -> None:
        """Record the final chunk count of a document being written."""
        self.conn.execute("UPDATE documents SET n_chunks = ? WHERE id = ?", (n_chunks, doc_id))

    def add_chunks(self, doc_id: str, first_ord: int, texts: Sequence[str],
                   n_tokens: Sequence[int], vectors: np.ndarray) -> list[int]:
        """Insert chunks with their vectors (4-bit blobs at rest); returns their ids."""
        blobs = encode_rows(vectors)
        ids = []
        for i, text in enumerate(texts):
            cursor = self.conn.execute(
                "INSERT INTO chunks(doc_id, ord, text, n_tokens, vector) VALUES (?, ?, ?, ?, ?)",
                (doc_id, first_ord + i, text, int(n_tokens[i]), blobs[i]),
            )
            ids.append(inserted_id(cursor))
        return ids

    def delete_document(self, doc_id: str) -> list[int]:
        """Delete a document and its chunks (call inside ``write()``); returns chunk ids."""
        self.document(doc_id)
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
        self.conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return ids

    def chunks(self, ids: Sequence[int]) -> dict[int, ChunkRecord]:
        """Chunks by id (ids that no longer exist are absent)."""
        out: dict[int, ChunkRecord] = {}
        for start in range(0, len(ids), 500):
            part = [int(i) for i in ids[start : start + 500]]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                "SELECT c.id, c.doc_id, c.ord, c.text, c.n_tokens, d.source FROM chunks c "
                f"JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})",
                part,
            )
            out.update({row[0]: ChunkRecord(*row) for row in rows})
        return out

    def chunk_positions(self) -> dict[int, tuple[str, int]]:
        """(document id, position in it) of every chunk, by chunk id."""
        return {row[0]: (row[1], row[2]) for row in self.conn.execute("SELECT id, doc_id, ord FROM chunks")}

    def document_chunks(self, doc_id: str) -> list[ChunkRecord]:
        """A document's chunks in order."""
        rows = self.conn.execute(
            "SELECT c.id, c.doc_id, c.ord, c.text, c.n_tokens, d.source FROM chunks c "
            "JOIN documents d ON d.id = c.doc_id WHERE c.doc_id = ? ORDER BY c.ord",
            (doc_id,),
        )
        return [ChunkRecord(*row) for row in rows]

    # -- vectors at rest ------------------------------------------------------------------

    def iter_vectors(self, kind: str, batch: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(ids, unit vectors) of every stored vector of a kind, in batches."""
        table = VECTOR_TABLES[kind]
        cursor = self.conn.execute(f"SELECT id, vector FROM {table} WHERE vector IS NOT NULL")
        while rows := cursor.fetchmany(batch):
            ids = np.array([r[0] for r in rows], dtype=np.uint64)
            yield ids, decode_rows(r[1] for r in rows)

    def iter_codes(self, kind: str, batch: int = 8192) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(ids, int8 matrix: 4-bit levels, or a migrated-from 8-bit code) of every stored vector of
        a kind, in batches, as stored."""
        table = VECTOR_TABLES[kind]
        cursor = self.conn.execute(f"SELECT id, vector FROM {table} WHERE vector IS NOT NULL")
        while rows := cursor.fetchmany(batch):
            yield np.array([r[0] for r in rows], dtype=np.uint64), code_rows(r[1] for r in rows)

    def vector_ids(self, kind: str) -> np.ndarray:
        """The ids of every stored vector of a kind, in table order, read as one comma-joined
        string, not a Python row per id (docs/design/storage.md). ``ORDER BY id`` keeps the
        table's order: without it the chunks' covering index on (doc_id, ord) answers."""
        sql = (f"SELECT group_concat(id, ',') FROM (SELECT id FROM {VECTOR_TABLES[kind]} "
               "WHERE vector IS NOT NULL ORDER BY id)")
        return np.fromstring(self.conn.execute(sql).fetchone()[0] or "", dtype=np.uint64, sep=",")

    def vectors_by_id(self, kind: str, ids: Sequence[int]) -> Iterator[tuple[list[int], np.ndarray]]:
        """(ids, unit vectors) of the rows of a kind among ``ids`` that have a vector, in batches."""
        table = VECTOR_TABLES[kind]
        for part in parts(list(ids)):
            rows = self.conn.execute(f"SELECT id, vector FROM {table} WHERE vector IS NOT NULL AND "
                                     f"id IN ({marks(part)})", part).fetchall()
            if rows:
                yield [r[0] for r in rows], decode_rows(r[1] for r in rows)

    def bump_generation(self, kind: str) -> None:
        """Mark the vectors of a kind as changed (call inside the changing transaction)."""
        self.conn.execute("UPDATE vector_files SET generation = generation + 1 WHERE kind = ?", (kind,))

    def vector_state(self, kind: str) -> VectorState:
        """Current generation and what was recorded when the vector file was last saved."""
        row = self.conn.execute(
            "SELECT generation, saved_generation, saved_count, saved_bytes, saved_crc32 "
            "FROM vector_files WHERE kind = ?", (kind,)
        ).fetchone()
        return VectorState(generation=row[0], saved_generation=row[1], saved_count=row[2],
                           saved_bytes=row[3], saved_crc32=row[4])

    def record_vector_file(self, kind: str, generation: int, count: int, size: int, crc: int) -> None:
        """Remember which generation the vector file on disk holds."""
        with self.write():
            self.conn.execute(
                "UPDATE vector_files SET saved_generation = ?, saved_count = ?, saved_bytes = ?, "
                "saved_crc32 = ? WHERE kind = ?", (generation, count, size, crc, kind)
            )

    # -- statistics and upkeep --------------------------------------------------------------

    def table_bytes(self) -> dict[str, int]:
        """Bytes of each table with its indexes, largest first (SQLite's ``dbstat``; empty where
        the SQLite build lacks it). Pages on the free list are reported as ``(free)``."""
        try:
            with self.unmapped():  # it visits every page: mapping them all would inflate RSS
                rows = self.conn.execute(
                    "SELECT coalesce(s.tbl_name, d.name), sum(d.pgsize) FROM dbstat d "
                    "LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY 1").fetchall()
        except database_errors():  # no dbstat (SQLCipher's build has none)
            return {}
        out = dict(sorted(((str(n), int(b)) for n, b in rows), key=lambda kv: (-kv[1], kv[0])))
        free = self._pragma("freelist_count") * self._pragma("page_size")
        return {**out, "(free)": free} if free else out

    def free_share(self) -> float:
        """Share of the file's pages that are free (left by deletes, reclaimed by ``compact``)."""
        return self._pragma("freelist_count") / max(1, self._pragma("page_count"))

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the file and empty it (``TRUNCATE``): after a delete, the
        text it removed is then in no file (deleted rows are overwritten in the file). Waits for
        readers to leave the log (``busy_timeout``). Call outside a transaction."""
        busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            raise IndexLocked(f"{self.path.parent}: a reader held the write-ahead log for "
                              f"{BUSY_SECONDS} s; what was deleted stays in {DB_FILE}-wal until "
                              "the next delete or the last close")

    def compact(self) -> None:
        """Rewrite the file without free pages (``VACUUM``) and empty the write-ahead log.
        Call outside a transaction, holding the write lock."""
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _pragma(self, name: str) -> int:
        return int(self.conn.execute(f"PRAGMA {name}").fetchone()[0])

    def chunk_count(self) -> int:
        """How many chunks the index holds."""
        return self._count("chunks")

    def counts(self) -> dict[str, int]:
        """Row counts of what the index holds."""
        entities, keys = self._count("entities"), self._count("entity_keys")
        return {
            "documents": self._count("documents"),
            "chunks": self.chunk_count(),
            "entities": entities,
            "relations": self._count("relations WHERE kind = 'structural'"),
            "similar_edges": self._count("relations WHERE kind = 'similar'"),
            "entity_names": keys,
            "merges": keys - entities,
            "chunks_in_graph": self._count("chunk_graph"),
            "extraction_failures": int(self.conn.execute(
                "SELECT coalesce(sum(failures), 0) FROM chunk_graph").fetchone()[0]),
        }

    def _count(self, rows: str) -> int:
        # Rows of a table, optionally with a WHERE clause (the store speaks sqlite3 itself: README).
        return int(self.conn.execute(f"SELECT count(*) FROM {rows}").fetchone()[0])


def _check_directory(directory: Path, path: Path, create: bool) -> None:
    if directory.exists() and not directory.is_dir():
        raise NotAnIndex(f"{directory} is a file, not an index directory")
    if path.is_file():
        return
    if not create:
        raise NotAnIndex(f"{directory} is not an edge-rag index (no {DB_FILE})")
    if directory.is_dir() and any(directory.iterdir()):
        raise NotAnIndex(
            f"{directory} is not empty and holds no edge-rag index; choose an empty or new folder"
        )


def _configure(conn: sqlite3.Connection, settings: Settings, encrypted: bool = False) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_SECONDS * 1000}")
    # New files only (an existing file keeps its own): larger pages pack the chunk rows and the
    # graph's rows tighter than SQLite's default ones (storage.md). SQLCipher keeps its own page
    # size, so that its tools open the file with the key alone.
    if not encrypted:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    # Deleted rows are overwritten with zeros, not left on free pages (deletes stay deletes);
    # temporary tables, sorts and VACUUM's copy stay in memory, never in a plaintext temp file.
    conn.execute("PRAGMA secure_delete = ON")
    if encrypted:
        conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA cache_size = {-1024 * int(settings.sqlite_cache_mb)}")
    conn.execute(f"PRAGMA mmap_size = {1024 * 1024 * int(settings.sqlite_mmap_mb)}")


def _document(row: tuple) -> DocumentRecord:
    return DocumentRecord(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6])


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
