"""The one vector codec: 8-bit codes at rest in SQLite, the same codes in the USearch files.

Every vector the index keeps (chunks, entity names, relations) is written to SQLite as one byte
per dimension: the vector scaled so its largest component is ±127, rounded (``i8`` codes, a
quarter of f32's bytes). Cosine ignores scale, so the scale is not stored. SQLite's codes are
the durable copy; an ``i8`` USearch file holds exactly these codes (they are handed to USearch
as int8, so it quantises nothing again), and any vector file is rebuilt from SQLite bit for bit.
``f16``/``f32`` vector files (the ``vector_dtype`` setting) take the decoded unit vectors.

Interpretation: the paper stores vectors in its graph database without saying at what
precision; all-MiniLM's cosine ranking survives 8 bits with max-abs scaling (measured in
``benchmarks/results/retrieval_*``: every method's recall@5 within 0.01 of f16's). USearch's
own f32 → i8 cast scales the *unit* vector by 127, which leaves a 384-d vector only ~5 levels
per component; scaling by the largest component uses all 255.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

AT_REST = np.int8
LEVELS = 127.0


def codes(vectors: np.ndarray) -> np.ndarray:
    """The i8 codes of the rows of a matrix (or of one vector): max-abs scaled to ±127."""
    values = np.asarray(vectors, dtype=np.float32)
    peak = np.max(np.abs(values), axis=-1, keepdims=True)
    scaled = values * (LEVELS / np.where(peak > 0, peak, 1.0))
    return np.clip(np.rint(scaled), -LEVELS, LEVELS).astype(AT_REST)


def encode(vector: np.ndarray) -> bytes:
    """The blob of one vector."""
    return codes(vector).tobytes()


def encode_rows(vectors: np.ndarray) -> list[bytes]:
    """The blobs of the rows of a matrix."""
    return [row.tobytes() for row in codes(vectors)]


def unit(code_rows: np.ndarray) -> np.ndarray:
    """Unit-length f32 vectors from i8 codes (cosine = dot product of these)."""
    values = np.asarray(code_rows, dtype=np.float32)
    norm = np.linalg.norm(values, axis=-1, keepdims=True)
    return values / np.where(norm > 0, norm, 1.0)


def decode(blob: bytes) -> np.ndarray:
    """The unit f32 vector of a blob."""
    return unit(np.frombuffer(blob, dtype=AT_REST))


def decode_rows(blobs: Iterable[bytes]) -> np.ndarray:
    """The unit f32 matrix of several blobs, one row each."""
    return unit(np.stack([np.frombuffer(blob, dtype=AT_REST) for blob in blobs]))


def code_rows(blobs: Iterable[bytes]) -> np.ndarray:
    """The i8 code matrix of several blobs, one row each (no decoding)."""
    return np.stack([np.frombuffer(blob, dtype=AT_REST) for blob in blobs])


def search_form(code_matrix: np.ndarray, dtype: str = "i8") -> np.ndarray:
    """Codes as USearch searches them at scalar kind ``dtype``: the i8 codes themselves for
    ``i8`` (exactly what SQLite holds), unit f16 or f32 vectors otherwise."""
    if dtype == "i8":
        return np.ascontiguousarray(code_matrix, dtype=AT_REST)
    return unit(code_matrix).astype(np.float16 if dtype == "f16" else np.float32)


def for_search(vectors: np.ndarray, dtype: str = "i8") -> np.ndarray:
    """Float vectors as USearch searches them at scalar kind ``dtype`` (via their codes)."""
    return search_form(codes(vectors), dtype)


def from_version_2(blobs: Iterable[bytes]) -> list[bytes]:
    """Blobs of schema version 1 and 2 (native-order f16 values) re-encoded as i8 codes."""
    return encode_rows(np.stack([np.frombuffer(blob, dtype=np.float16) for blob in blobs]))
