"""The one vector codec: f16 blobs at rest in SQLite, f32 into USearch (which stores f32, f16 or i8).

Every vector the index keeps (chunks, entity names, relations) is written to SQLite as the
native-order bytes of its f16 values: half the bytes of f32, and more precision than cosine
ranking needs. SQLite is the source of truth; the USearch files are rebuilt from these blobs.
USearch takes f32 input and converts it to its own scalar kind, the ``vector_dtype`` setting
(``f32``, ``f16`` or ``i8``), so ``i8`` quantisation happens inside USearch, never here.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

AT_REST = np.float16


def encode(vector: np.ndarray) -> bytes:
    """The blob of one vector."""
    return np.asarray(vector).astype(AT_REST).tobytes()


def encode_rows(vectors: np.ndarray) -> list[bytes]:
    """The blobs of the rows of a matrix."""
    rows = np.asarray(vectors).astype(AT_REST)
    return [row.tobytes() for row in rows]


def decode(blob: bytes) -> np.ndarray:
    """The f16 vector of a blob (read-only: it shares the blob's memory)."""
    return np.frombuffer(blob, dtype=AT_REST)


def decode_rows(blobs: Iterable[bytes]) -> np.ndarray:
    """The f16 matrix of several blobs, one row each."""
    return np.stack([decode(blob) for blob in blobs])


def for_search(vectors: np.ndarray) -> np.ndarray:
    """Vectors as USearch takes them (f32)."""
    return np.asarray(vectors).astype(np.float32)
