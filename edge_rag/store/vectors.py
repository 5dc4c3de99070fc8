"""Vector search over SQLite's codes: exact in memory for small kinds, an HNSW file for large ones.

SQLite's 4-bit codes are the one durable copy of every vector. A kind (chunks, entity names,
relations) with fewer than ``vector_file_min`` vectors is searched exactly: its keys are read
when the index is opened, its codes from SQLite into one matrix at the first search, compared
with USearch's brute-force kernel, and no vector file exists. A larger kind also keeps a
``.usearch`` HNSW file, a cache of the same codes that is verified at open and rebuilt from
SQLite when stale.

Interpretation: the paper retrieves by vector similarity without naming an index structure.
Exact search returns the true nearest neighbours (HNSW approximates them) and at edge sizes costs
milliseconds, while an HNSW file repeats every vector next to its graph links.

Design: docs/design/storage.md
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index, MetricKind
from usearch.index import search as exact_search

from ..errors import IndexCorrupt
from .cipher import database_errors
from .codec import for_search, for_storage, search_form
from .sqlite import DB_FILE, VECTOR_TABLES, IndexStore, VectorState

# (query, row) pairs per exact-search call: a build searches thousands of new names at once, and
# the kernel holds a distance per pair (storage.md has the memory against the time).
EXACT_CELLS = 1 << 19
VECTOR_FILES = {"chunk": "chunks.usearch", "entity": "entities.usearch", "relation": "relations.usearch"}
# The entity names' kept candidate sets (``index/candidates.py``), beside the vector files.
CANDIDATES_FILE = "candidates.npz"
# Keys of the filler vectors that overwrite removed slots before a save (SQLite ids stay far
# below; storage.md).
FILLER_KEY = 1 << 63


class ExactVectors:
    """Vectors of one kind held as one matrix in memory and searched exactly (brute force).

    Adds and removes are buffered and applied in one pass before the next search, so a build
    that replaces names one at a time does not copy the matrix each time. A matrix opened
    ``deferred`` holds its keys at once and reads its rows at the first search (an insert only
    adds chunks and relations, and need not read them; docs/design/storage.md)."""

    def __init__(self, dim: int, keys: np.ndarray, rows: np.ndarray | None,
                 reader: Callable[[], ExactVectors] | None = None) -> None:
        self.dim = dim
        self._keys, self._rows, self._reader = keys, rows, reader
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._removed: set[int] = set()

    @classmethod
    def load(cls, store: IndexStore, kind: str, dim: int, dtype: str) -> ExactVectors:
        """Every vector of a kind as SQLite holds it, in the search form of ``dtype``: counted
        first and read into one matrix (not parts joined at the end, which held the matrix
        twice), through SQLite's page cache rather than its memory map (a chunk's code shares
        its row's pages with the chunk's text: mapping them held up to ``sqlite_mmap_mb`` more)."""
        table = VECTOR_TABLES[kind]
        with store.unmapped(), store.walk.snapshot():
            total = int(store.conn.execute(f"SELECT count(*) FROM {table} WHERE vector IS NOT NULL")
                        .fetchone()[0])
            keys = np.zeros(total, dtype=np.uint64)
            rows = search_form(np.zeros((total, dim), np.int8), dtype)
            at = 0
            for ids, codes in store.iter_codes(kind):
                keys[at : at + len(ids)], rows[at : at + len(ids)] = ids, search_form(codes, dtype)
                at += len(ids)
        return cls(dim, keys, rows)

    @classmethod
    def deferred(cls, store: IndexStore, kind: str, dim: int, dtype: str) -> ExactVectors:
        """The keys SQLite holds now; the rows when first needed (``load``, kept to these keys)."""
        return cls(dim, store.vector_ids(kind), None, lambda: cls.load(store, kind, dim, dtype))

    @property
    def keys(self) -> np.ndarray:
        """Every key, in row order."""
        self._merge()
        return self._keys

    @property
    def rows(self) -> np.ndarray:
        """The search-form rows of ``keys``."""
        self._merge()
        assert self._rows is not None
        return self._rows

    def __len__(self) -> int:
        return len(self._keys) - len(self._removed) + sum(len(keys) for keys, _ in self._pending)

    def add(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Append rows under keys (the caller removes a key before adding it again)."""
        self._pending.append((keys, rows))

    def remove(self, keys: np.ndarray) -> None:
        """Drop the rows of these keys (missing ones are ignored)."""
        gone = np.asarray(keys, dtype=np.uint64)
        self._pending = [(k[keep], r[keep]) for k, r in self._pending
                         if (keep := ~np.isin(k, gone)).any()]
        # Only keys present are remembered: a build drops every relation of the region it
        # rebuilds, most of them without a vector, and this kind may not be searched (merged)
        # before the build ends (a large build piled up millions of absent keys here).
        self._removed.update(int(k) for k in gone[np.isin(gone, self._keys)])

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosine similarities) of the k nearest rows of each query, best first: one
        row per query for a matrix of queries, a flat pair for one vector.

        USearch's exact kernel holds a distance for every (query, row) pair of a call, so a
        matrix of queries is searched in slices of at most ``EXACT_CELLS`` pairs (one call for a
        build's thousands of names took gigabytes; docs/design/storage.md)."""
        self._merge()
        if queries.ndim == 1:
            return self._search(queries, k)
        step = max(1, EXACT_CELLS // max(1, len(self._keys)))
        parts = [self._search(queries[i:i + step], k) for i in range(0, len(queries), step)]
        width = min(k, len(self._keys))  # a slice of one query comes back flat
        return (np.concatenate([keys.reshape(-1, width) for keys, _ in parts]),
                np.concatenate([sims.reshape(-1, width) for _, sims in parts]))

    def _search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        found = exact_search(self.rows, queries, min(k, len(self._keys)), MetricKind.Cos, exact=True)
        return self._keys[np.asarray(found.keys)], 1.0 - np.asarray(found.distances, dtype=np.float32)

    def to_hnsw(self, dtype: str) -> Index:
        """An HNSW index holding these rows."""
        index = Index(ndim=self.dim, metric="cos", dtype=dtype)
        if len(self):
            index.add(self.keys, self.rows)
        return index

    def _read(self) -> None:
        # SQLite may hold more by now (keys added since are pending here) or fewer (keys being
        # removed): the rows read are kept to the keys held, in SQLite's order.
        if self._reader is None:
            return
        read, self._reader = self._reader(), None
        held, rows = np.isin(read._keys, self._keys), read.rows
        self._keys, self._rows = (read._keys, rows) if held.all() else (read._keys[held], rows[held])

    def _merge(self) -> None:
        # Removals apply to the rows merged before them; a key added since is kept.
        self._read()
        assert self._rows is not None
        if self._removed:
            keep = ~np.isin(self._keys, np.fromiter(self._removed, dtype=np.uint64))
            self._keys, self._rows, self._removed = self._keys[keep], self._rows[keep], set()
        if self._pending:
            self._keys = np.concatenate([self._keys, *(keys for keys, _ in self._pending)])
            self._rows = np.concatenate([self._rows, *(rows for _, rows in self._pending)])
            self._pending = []


class VectorIndex:
    """Nearest-neighbour search over one kind of vector (chunk, entity, relation).

    SQLite's codes are the only durable copy. Below ``file_min`` vectors the kind is searched
    exactly from a matrix read out of SQLite, and no file is kept (a leftover one is removed at
    the next save). From ``file_min`` on, a ``.usearch`` HNSW file caches the codes; it is
    trusted only when its size, CRC-32 and vector count match what SQLite recorded at the last
    save for the current generation, and is otherwise rebuilt from SQLite. Without ``persist``
    (an encrypted index) no file is read or written: a large kind's HNSW index is built in memory.
    """

    def __init__(self, directory: Path, kind: str, dim: int, dtype: str, store: IndexStore,
                 file_min: int = 0, persist: bool = True) -> None:
        self.path = directory / VECTOR_FILES[kind]
        self.kind = kind
        self.dim = dim
        self.dtype = dtype
        self.store = store
        self.file_min = file_min
        self.persist = persist
        self.removed = False
        self.index: Index | None = None
        self.exact: ExactVectors | None = None
        self.generation: int | None = None
        self.rebuilt = False
        self.viewed = False
        self.twins = Twins(kind == "chunk")
        self._last: tuple[np.ndarray, int, np.ndarray, np.ndarray] | None = None

    def open(self, writable: bool = False) -> VectorIndex:
        """Load the vectors: the HNSW file (memory-mapped unless writable) when it is current,
        else SQLite's codes, searched exactly or rebuilt into an HNSW index by size."""
        state = self.store.vector_state(self.kind)
        self.generation, self._last = state["generation"], None
        if self.persist and (state["saved_count"] or 0) >= self.file_min and self._file_is_current(state):
            loaded = Index.restore(str(self.path), view=not writable)
            pairs = self.twins.read(self.twins_path)
            if loaded is not None and len(loaded) + len(pairs) == state["saved_count"]:
                self.index, self.exact, self.rebuilt, self.viewed = loaded, None, False, not writable
                self.twins.load(pairs)
                return self
        exact = ExactVectors.deferred(self.store, self.kind, self.dim, self.dtype)
        if len(exact) >= self.file_min:
            self.index, self.exact, self.viewed = self._to_hnsw(exact), None, False
            self.rebuilt = self.persist or self.path.exists()
        else:  # a file left from a larger past (or an older edge-rag) is removed at the next save
            self.index, self.exact, self.rebuilt, self.viewed = None, exact, self.path.exists(), False
            self.twins.load(np.zeros((0, 2), dtype=np.int64))
        return self

    @property
    def has_file(self) -> bool:
        """True when this kind is searched through an HNSW file rather than exactly."""
        return self.exact is None

    def is_stale(self) -> bool:
        """True when SQLite has moved on since this index was loaded."""
        return self.store.vector_state(self.kind)["generation"] != self.generation

    def __len__(self) -> int:
        if self.exact is not None:
            return len(self.exact)
        return (len(self.index) if self.index is not None else 0) + len(self.twins)

    def add(self, keys: list[int], vectors: np.ndarray) -> None:
        """Add vectors under integer keys (the SQLite row ids)."""
        if not keys:
            return
        self._last = None
        ids, rows = np.asarray(keys, dtype=np.uint64), for_storage(vectors, self.dtype)
        if self.exact is not None:
            self.exact.add(ids, rows)
        else:
            index = self._writable()
            fresh = self.twins.admit(index, ids, rows)
            if fresh.any():
                index.add(ids[fresh], rows[fresh])

    def remove(self, keys: list[int]) -> None:
        """Remove keys (missing ones are ignored)."""
        if not keys:
            return
        self._last = None
        if self.exact is not None:
            self.exact.remove(np.asarray(keys, dtype=np.uint64))
        else:
            index = self._writable()
            index.remove(self.twins.release(index, np.asarray(keys, dtype=np.uint64)))
            self.removed = True

    def search(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosine similarities) of the k nearest vectors, best first.

        The last search is remembered until the next add or remove: ``auto``'s planner looks at
        the question's nearest chunks and the method it picks searches them again. An exact
        search answers a smaller k from a larger one's first rows (the same rows it would
        find); an HNSW search only the same k."""
        if len(self) == 0:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32)
        last = self._last
        if (last is not None and (k == last[1] or (self.exact is not None and k < last[1]))
                and np.array_equal(last[0], vector)):
            return last[2][:k].copy(), last[3][:k].copy()
        keys, sims = self._search(vector, k)
        self._last = (np.array(vector, copy=True), k, keys, sims)
        return keys.copy(), sims.copy()

    def forget(self) -> None:
        """Forget the remembered last search (``search``): the next one searches afresh."""
        self._last = None

    def _search(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.exact is not None:
            return self.exact.search(for_search(vector, self.dtype), k)
        assert self.index is not None
        matches = self.index.search(for_search(vector, self.dtype), min(k, len(self.index)))
        return self.twins.expand(np.asarray(matches.keys),
                                 1.0 - np.asarray(matches.distances, dtype=np.float32), k)

    def search_many(self, vectors: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """``search`` for each row of a matrix, in one call."""
        if len(self) == 0 or len(vectors) == 0:
            return [(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32)) for _ in vectors]
        if len(vectors) == 1:  # USearch answers a batch of one as a single search
            return [self.search(vectors[0], k)]
        if self.exact is not None:
            keys, sims = self.exact.search(for_search(vectors, self.dtype), k)
            return list(zip(keys, sims))
        assert self.index is not None
        found = self.index.search(for_search(vectors, self.dtype), min(k, len(self.index)))
        counts = np.asarray(found.counts)  # type: ignore[union-attr]  # a batch (len > 1)
        return [self.twins.expand(np.asarray(found.keys[i][: counts[i]]),
                                  1.0 - np.asarray(found.distances[i][: counts[i]], dtype=np.float32), k)
                for i in range(len(vectors))]

    def save(self, generation: int) -> None:
        """Record that this index holds ``generation``: below ``file_min`` vectors, or without
        ``persist``, there is nothing to write (a leftover file is removed); otherwise the HNSW
        file is written atomically (removed vectors overwritten first) and its size, CRC-32 and
        count recorded in SQLite."""
        if not self.persist or (self.exact is not None and len(self.exact) < self.file_min):
            self.path.unlink(missing_ok=True)
            self.twins_path.unlink(missing_ok=True)
            self.generation = generation
            return
        if self.exact is not None:  # grown past file_min: from now on an HNSW file
            self.index, self.exact, self.viewed = self._to_hnsw(self.exact), None, False
        index = self._writable()
        if self.removed:
            _scrub(index, self.dim, self.dtype)
            self.removed = False
        self.twins.write(self.twins_path)
        tmp = self.path.with_suffix(".usearch.tmp")
        index.save(str(tmp))
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self.store.record_vector_file(
            self.kind, generation, len(index) + len(self.twins), self._files_bytes(), self._files_crc()
        )
        self.generation = generation

    def compact(self) -> None:
        """Reload from SQLite's codes and save: removed vectors leave no slots behind."""
        generation = int(self.store.vector_state(self.kind)["generation"])
        exact = ExactVectors.load(self.store, self.kind, self.dim, self.dtype)
        self.index, self.exact, self.viewed, self.rebuilt = None, exact, False, True
        self.save(generation)

    @property
    def twins_path(self) -> Path:
        """The file of keys whose vectors repeat another key's (``Twins``), beside the HNSW file."""
        return self.path.with_name(self.path.name + ".twins")

    def _file_is_current(self, state: VectorState) -> bool:
        if state["saved_generation"] != state["generation"] or not self.path.is_file():
            return False
        if self._files_bytes() != state["saved_bytes"]:
            return False
        return self._files_crc() == state["saved_crc32"]

    def _files_bytes(self) -> int:
        twins = self.twins_path.stat().st_size if self.twins_path.is_file() else 0
        return self.path.stat().st_size + twins

    def _files_crc(self) -> int:
        crc = _crc32(self.path)
        return _crc32(self.twins_path, crc) if self.twins_path.is_file() else crc

    def _to_hnsw(self, exact: ExactVectors) -> Index:
        """An HNSW index of the exact rows, repeated rows entered once (``Twins``)."""
        keep = self.twins.split(exact.keys, exact.rows)
        index = Index(ndim=self.dim, metric="cos", dtype=self.dtype)
        if keep.any():
            index.add(exact.keys[keep], exact.rows[keep])
        return index

    def _empty(self) -> Index:
        return Index(ndim=self.dim, metric="cos", dtype=self.dtype)

    def _writable(self) -> Index:
        if self.index is None:
            self.index = self._empty()
        elif self.viewed:
            restored = Index.restore(str(self.path), view=False)
            if restored is None:
                raise IndexCorrupt(f"{self.path} is no longer a readable vector file")
            self.index, self.viewed = restored, False
        return self.index


class Twins:
    """Keys whose vectors repeat another key's exactly, kept out of the HNSW graph.

    Many identical vectors (a signature or a quoted line that makes a chunk of its own in every
    mail) fill HNSW neighbour lists with each other at distance zero, and the search stops
    reaching other vectors (``tests/test_scale.py``; docs/design/storage.md). So the graph holds
    each distinct vector once, under its first key (the representative); its twins are listed
    here, returned with it by every search at the same similarity, and saved beside the HNSW
    file. Removing a representative promotes its first twin. Only the chunk kind has twins
    (``enabled``)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.of: dict[int, list[int]] = {}
        self.rep: dict[int, int] = {}
        self._codes: dict[bytes, int] | None = None

    def __len__(self) -> int:
        return len(self.rep)

    def read(self, path: Path) -> np.ndarray:
        """The (twin, representative) pairs saved at ``path`` (none when it is absent)."""
        if not self.enabled or not path.is_file():
            return np.zeros((0, 2), dtype=np.int64)
        try:
            return np.load(path, allow_pickle=False).reshape(-1, 2)
        except (OSError, ValueError):
            return np.zeros((0, 2), dtype=np.int64)

    def load(self, pairs: np.ndarray) -> None:
        """Take the pairs ``read`` gave."""
        self.of, self.rep, self._codes = {}, {}, None
        for twin, rep in pairs.tolist():
            self.rep[twin] = rep
            self.of.setdefault(rep, []).append(twin)

    def write(self, path: Path) -> None:
        """Save the pairs atomically beside the HNSW file (no file when there are none)."""
        if not self.rep:
            path.unlink(missing_ok=True)
            return
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as handle:
            np.save(handle, np.asarray(sorted(self.rep.items()), dtype=np.int64), allow_pickle=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)

    def split(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Start afresh from every row: which ones enter the graph (the first of each repeat)."""
        self.of, self.rep, self._codes = {}, {}, None
        if not self.enabled or len(keys) == 0:
            return np.ones(len(keys), dtype=bool)
        flat = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))
        _, first, inverse = np.unique(flat.ravel(), return_index=True, return_inverse=True)
        owner = first[inverse.ravel()]
        twins = np.flatnonzero(owner != np.arange(len(keys)))
        for n in twins.tolist():
            self._pair(int(keys[n]), int(keys[owner[n]]))
        keep = np.ones(len(keys), dtype=bool)
        keep[twins] = False
        return keep

    def admit(self, index: Index, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Rows about to be added: which ones enter the graph; the others become twins of the
        representative holding the same vector."""
        if not self.enabled:
            return np.ones(len(keys), dtype=bool)
        codes = self._codes_of(index)
        fresh = np.ones(len(keys), dtype=bool)
        for n, (key, row) in enumerate(zip(keys.tolist(), rows)):
            digest = _digest(row)
            owner = codes.get(digest)
            if owner is None:
                codes[digest] = key
            else:
                self._pair(key, owner)
                fresh[n] = False
        return fresh

    def release(self, index: Index, keys: np.ndarray) -> np.ndarray:
        """Keys about to be removed: the ones to remove from the graph. A twin just leaves its
        list; a representative hands its vector to its first twin."""
        if not self.enabled or not (self.rep or self._codes):
            return keys
        out = []
        for key in keys.tolist():
            if key in self.rep:
                owner = self.rep.pop(key)
                self.of[owner].remove(key)
                if not self.of[owner]:
                    del self.of[owner]
                continue
            out.append(key)
            if key in index:
                self._hand_over(index, key)
        return np.asarray(out, dtype=np.uint64)

    def expand(self, keys: np.ndarray, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Search results with each representative followed by its twins, cut to ``k``."""
        if not self.of:
            return keys, sims
        out_keys, out_sims = [], []
        for key, sim in zip(keys.tolist(), sims.tolist()):
            for one in (key, *self.of.get(key, ())):
                out_keys.append(one)
                out_sims.append(sim)
        return np.asarray(out_keys[:k], dtype=keys.dtype), np.asarray(out_sims[:k], dtype=np.float32)

    def _hand_over(self, index: Index, key: int) -> None:
        vector = np.asarray(index.get(key))
        digest = _digest(vector)
        twins = self.of.pop(key, [])
        if self._codes is not None and self._codes.get(digest) == key:
            del self._codes[digest]
        if not twins:
            return
        heir, rest = twins[0], twins[1:]
        del self.rep[heir]
        index.add(heir, vector)
        for twin in rest:
            self._pair(twin, heir)
        if self._codes is not None:
            self._codes[digest] = heir

    def _pair(self, twin: int, owner: int) -> None:
        self.rep[twin] = owner
        self.of.setdefault(owner, []).append(twin)

    def _codes_of(self, index: Index) -> dict[bytes, int]:
        if self._codes is None:
            keys = np.asarray(index.keys, dtype=np.uint64)
            rows = np.asarray(index.get(keys)) if len(keys) else np.zeros((0, index.ndim))
            self._codes = {_digest(row): int(key) for key, row in zip(keys.tolist(), rows)}
        return self._codes


def _digest(row: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(row).data, digest_size=16).digest()


def _scrub(index: Index, dim: int, dtype: str) -> None:
    """Overwrite the vectors of removed keys, which USearch keeps in its slots (and in the file it
    saves), so that a deleted document's vectors leave the file too: filler vectors are added until
    one takes a new slot (every free slot then holds a filler), then removed again."""
    filler = for_storage(np.full((1, dim), dim ** -0.5, dtype=np.float32), dtype)
    size, keys = index.serialized_length, list[int]()
    while not keys or index.serialized_length == size:
        keys.append(FILLER_KEY + len(keys))
        index.add(keys[-1], filler[0])
    index.remove(keys)


def _crc32(path: Path, crc: int = 0) -> int:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc


def in_memory_bytes(directory: Path, dtype: str = "i8", store: IndexStore | None = None) -> int:
    """Bytes the exact-search matrices of an index will hold in memory: every kind of vector
    without an HNSW file in ``directory``, at the width ``dtype`` searches it (0 without an index).
    ``store``: an encrypted index, open (it keeps every kind in memory)."""
    database = directory / DB_FILE
    if store is not None:
        return _in_memory(directory, store.conn, dtype, every=True)
    if not database.is_file():
        return 0
    own = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return _in_memory(directory, own, dtype, every=False)
    finally:
        own.close()


def _in_memory(directory: Path, conn: Any, dtype: str, every: bool) -> int:
    width = {"i8": 1, "f16": 2}.get(dtype, 4)
    try:
        return width * sum(_code_bytes(conn, VECTOR_TABLES[kind]) for kind, name in VECTOR_FILES.items()
                           if every or not (directory / name).is_file())
    except database_errors():  # an unreadable file is reported when the index opens
        return 0


def _code_bytes(conn: sqlite3.Connection, table: str) -> int:
    # One int8 per dimension in memory: a stored 4-bit blob holds two a byte after its mark.
    return int(conn.execute(
        "SELECT COALESCE(SUM(CASE WHEN substr(vector, 1, 1) = x'80' THEN 2 * (LENGTH(vector) - 1) "
        f"ELSE LENGTH(vector) END), 0) FROM {table}").fetchone()[0])

