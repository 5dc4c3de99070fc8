"""USearch vector files kept in step with SQLite: verified at open, rebuilt when stale."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
from usearch.index import Index

from ..errors import IndexCorrupt
from .codec import for_search
from .sqlite import GraphStore, VectorState

VECTOR_FILES = {"chunk": "chunks.usearch", "entity": "entities.usearch", "relation": "relations.usearch"}


class VectorIndex:
    """Approximate nearest-neighbour index of one kind of vector (chunk, entity, relation).

    SQLite is the source of truth. The ``.usearch`` file is trusted only when its size,
    CRC-32 and vector count match what SQLite recorded at the last save for the current
    generation; otherwise it is rebuilt from the vectors stored in SQLite.
    """

    def __init__(self, directory: Path, kind: str, dim: int, dtype: str, store: GraphStore) -> None:
        self.path = directory / VECTOR_FILES[kind]
        self.kind = kind
        self.dim = dim
        self.dtype = dtype
        self.store = store
        self.index: Index | None = None
        self.generation: int | None = None
        self.rebuilt = False
        self.viewed = False

    def open(self, writable: bool = False) -> VectorIndex:
        """Load the file (memory-mapped unless writable), rebuilding it when it is stale."""
        state = self.store.vector_state(self.kind)
        self.generation = state["generation"]
        if self._file_is_current(state):
            loaded = Index.restore(str(self.path), view=not writable)
            if loaded is not None and len(loaded) == state["saved_count"]:
                self.index, self.rebuilt, self.viewed = loaded, False, not writable
                return self
        self.index, self.rebuilt, self.viewed = self._rebuild(), True, False
        return self

    def is_stale(self) -> bool:
        """True when SQLite has moved on since this index was loaded."""
        return self.store.vector_state(self.kind)["generation"] != self.generation

    def __len__(self) -> int:
        return len(self.index) if self.index is not None else 0

    def add(self, keys: list[int], vectors: np.ndarray) -> None:
        """Add vectors under integer keys (the SQLite row ids)."""
        if keys:
            self._writable().add(np.asarray(keys, dtype=np.uint64), for_search(vectors, self.dtype))

    def remove(self, keys: list[int]) -> None:
        """Remove keys (missing ones are ignored)."""
        if keys:
            self._writable().remove(np.asarray(keys, dtype=np.uint64))

    def search(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosine similarities) of the k nearest vectors, best first."""
        if self.index is None or len(self.index) == 0:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32)
        matches = self.index.search(for_search(vector, self.dtype), min(k, len(self.index)))
        return np.asarray(matches.keys), 1.0 - np.asarray(matches.distances, dtype=np.float32)

    def save(self, generation: int) -> None:
        """Atomically write the file and record it as holding ``generation``."""
        index = self._writable()
        tmp = self.path.with_suffix(".usearch.tmp")
        index.save(str(tmp))
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self.store.record_vector_file(
            self.kind, generation, len(index), self.path.stat().st_size, _crc32(self.path)
        )
        self.generation = generation

    def compact(self) -> None:
        """Rewrite the file from SQLite's codes: the slots of removed vectors are dropped."""
        generation = int(self.store.vector_state(self.kind)["generation"])
        self.index, self.viewed, self.rebuilt = self._rebuild(), False, True
        self.save(generation)

    def _file_is_current(self, state: VectorState) -> bool:
        if state["saved_generation"] != state["generation"] or not self.path.is_file():
            return False
        if self.path.stat().st_size != state["saved_bytes"]:
            return False
        return _crc32(self.path) == state["saved_crc32"]

    def _rebuild(self) -> Index:
        index = self._empty()
        for ids, vectors in self.store.iter_vectors(self.kind):
            index.add(ids, for_search(vectors, self.dtype))
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


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc
