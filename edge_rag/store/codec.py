"""The one vector codec: 4-bit codes at rest in SQLite, 8-bit codes for queries.

Every vector the index keeps (chunks, entity names, relations) is written to SQLite as 4 bits
per dimension (schema 5): the vector divided by a step of ``SPREAD`` standard deviations over 7,
rounded and clipped to the levels -7..7, two levels packed per byte behind a ``MARK`` byte. Cosine
ignores scale, so no scale is stored. The levels are searched as int8 rows (USearch's ``i8``
kind), so a vector file is rebuilt from SQLite bit for bit. A query keeps 8 bits (``codes``); a
stored vector used as a query (aggregation's candidate sets, eq. 1) queries with its own levels
(``query_codes``), so two stored vectors have one cosine whichever of them asks. ``f16``/``f32``
vector files take the decoded unit vectors. Schema 3 and 4 blobs are 8-bit codes (never -128); a
blob whose first byte is ``MARK`` is a 4-bit one, so either reads back right (``code_of``).

Design: docs/design/storage.md
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

AT_REST = np.int8
LEVELS = 127.0  # 8-bit query codes: ±127
STORED_LEVELS = 7  # 4-bit stored levels: -7..7 (the nibble -8 pads an odd dimension)
SPREAD = 2.5  # the stored levels span ±SPREAD standard deviations of a vector's components
MARK = b"\x80"  # first byte of a 4-bit blob (an 8-bit code is never -128)
PAD = -8  # the nibble that pads an odd dimension (storage.md)
FIXED_POINT_ROUNDS = 8  # times the stored levels are quantised again to reach their fixed point
AS_STORED_TOLERANCE = 1e-5  # a float32 round trip of levels stays far inside this


def codes(vectors: np.ndarray) -> np.ndarray:
    """The 8-bit codes of the rows of a matrix (or of one vector): max-abs scaled to ±127."""
    values = np.asarray(vectors, dtype=np.float32)
    peak = np.max(np.abs(values), axis=-1, keepdims=True)
    scaled = values * (LEVELS / np.where(peak > 0, peak, 1.0))
    return np.clip(np.rint(scaled), -LEVELS, LEVELS).astype(AT_REST)


def levels(vectors: np.ndarray) -> np.ndarray:
    """The stored 4-bit levels (-7..7, as int8) of the rows of a matrix (or of one vector).

    The levels are a fixed point: quantising a decoded blob again gives the same levels, so a
    vector read back and stored again (a name or relation kept through a rebuild) never drifts.
    One rounding seldom lands on one (the spread of the levels is not exactly the spread of the
    vector), so the levels are quantised again until they do (at most ``FIXED_POINT_ROUNDS``)."""
    out = _levels(np.asarray(vectors, dtype=np.float32))
    flat = out.reshape(-1, out.shape[-1])
    todo = np.arange(len(flat))
    for _ in range(FIXED_POINT_ROUNDS):
        again = _levels(flat[todo].astype(np.float32))
        moved = (again != flat[todo]).any(axis=1)
        if not moved.any():
            break
        flat[todo[moved]] = again[moved]
        todo = todo[moved]
    return out


def _levels(values: np.ndarray) -> np.ndarray:
    step = SPREAD * values.std(axis=-1, keepdims=True) / STORED_LEVELS
    scaled = values / np.where(step > 0, step, 1.0)
    return np.clip(np.rint(scaled), -STORED_LEVELS, STORED_LEVELS).astype(AT_REST)


def as_stored(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors as SQLite will hold them (their 4-bit levels, decoded)."""
    return unit(levels(vectors))


def pack(level_rows: np.ndarray) -> list[bytes]:
    """4-bit blobs of rows of levels: ``MARK``, then two levels a byte (low nibble first)."""
    rows = np.atleast_2d(level_rows).astype(np.int16)
    if rows.shape[1] % 2:
        rows = np.pad(rows, ((0, 0), (0, 1)), constant_values=PAD)
    nibbles = (rows & 0x0F).astype(np.uint8)
    packed = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)
    return [MARK + row.tobytes() for row in packed]


def unpack(packed: np.ndarray) -> np.ndarray:
    """Levels (int8 rows) of packed 4-bit rows (uint8, ``MARK`` removed): each byte looked up
    as its two levels (``_LEVEL_PAIRS``), one pass over the matrix (an exact-search kind is
    unpacked whole when an index opens; docs/design/storage.md)."""
    rows = np.take(_LEVEL_PAIRS, np.asarray(packed, dtype=np.uint8), axis=0).reshape(len(packed), -1)
    return rows[:, :-1] if len(rows) and rows.shape[1] and rows[0, -1] == PAD else rows


def _level_pairs() -> np.ndarray:
    """The two levels (low nibble, high nibble) of every byte value."""
    byte = np.arange(256, dtype=np.uint8)
    nibbles = np.stack([byte & 0x0F, byte >> 4], axis=-1).astype(np.int8)
    return np.where(nibbles > STORED_LEVELS, nibbles - 16, nibbles).astype(AT_REST)


_LEVEL_PAIRS = _level_pairs()


def code_of(blob: bytes) -> np.ndarray:
    """The int8 row a blob holds: a 4-bit blob's levels, or a schema 3/4 blob's 8-bit code."""
    if blob[:1] == MARK:
        return unpack(np.frombuffer(blob, dtype=np.uint8, offset=1)[None, :])[0]
    return np.frombuffer(blob, dtype=AT_REST)


def is_packed(blob: bytes) -> bool:
    """Whether a blob is a 4-bit one (schema 5)."""
    return blob[:1] == MARK


def encode(vector: np.ndarray) -> bytes:
    """The stored blob of one vector."""
    return pack(levels(vector))[0]


def encode_rows(vectors: np.ndarray) -> list[bytes]:
    """The stored blobs of the rows of a matrix."""
    return pack(levels(vectors))


def unit(code_rows: np.ndarray) -> np.ndarray:
    """Unit-length f32 vectors from int8 rows (cosine = dot product of these)."""
    values = np.asarray(code_rows, dtype=np.float32)
    norm = np.linalg.norm(values, axis=-1, keepdims=True)
    return values / np.where(norm > 0, norm, 1.0)


def decode(blob: bytes) -> np.ndarray:
    """The unit f32 vector of a blob."""
    return unit(code_of(blob))


def decode_rows(blobs: Iterable[bytes]) -> np.ndarray:
    """The unit f32 matrix of several blobs, one row each."""
    return unit(code_rows(blobs))


def code_rows(blobs: Iterable[bytes]) -> np.ndarray:
    """The int8 matrix of several blobs, one row each (no decoding); blobs of one length and
    kind are unpacked in one pass."""
    blobs = list(blobs)
    if blobs and len({len(b) for b in blobs}) == 1 and all(b[:1] == MARK for b in blobs):
        packed = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1)
        return unpack(packed[:, 1:])
    return np.stack([code_of(blob) for blob in blobs])


def search_form(code_matrix: np.ndarray, dtype: str = "i8") -> np.ndarray:
    """Int8 rows as USearch searches them at scalar kind ``dtype``: the rows themselves for
    ``i8`` (exactly what SQLite holds), unit f16 or f32 vectors otherwise."""
    if dtype == "i8":
        return np.ascontiguousarray(code_matrix, dtype=AT_REST)
    return unit(code_matrix).astype(np.float16 if dtype == "f16" else np.float32)


def query_codes(vectors: np.ndarray) -> np.ndarray:
    """The int8 query rows of float vectors: a vector that is a decoded stored one (its levels
    give it back) queries with its levels, any other with its 8-bit codes."""
    values = np.asarray(vectors, dtype=np.float32)
    stored = levels(values)
    same = np.abs(unit(stored) - unit(values)).max(axis=-1, keepdims=True) < AS_STORED_TOLERANCE
    return np.where(same, stored, codes(values)).astype(AT_REST)


def for_search(vectors: np.ndarray, dtype: str = "i8") -> np.ndarray:
    """Float query vectors as USearch searches them at scalar kind ``dtype`` (``query_codes``)."""
    return search_form(query_codes(vectors), dtype)


def for_storage(vectors: np.ndarray, dtype: str = "i8") -> np.ndarray:
    """Float vectors about to be stored, as USearch searches them: their stored levels, so a
    vector added in memory is searched exactly as the one read back from SQLite."""
    return search_form(levels(vectors), dtype)


def from_version_2(blobs: Iterable[bytes]) -> list[bytes]:
    """Blobs of schema version 1 and 2 (native-order f16 values) re-encoded as stored blobs."""
    return encode_rows(np.stack([np.frombuffer(blob, dtype=np.float16) for blob in blobs]))


def from_version_4(blobs: Iterable[bytes]) -> list[bytes]:
    """Blobs of schema version 3 and 4 (8-bit codes) re-encoded as stored 4-bit blobs."""
    return encode_rows(code_rows(blobs).astype(np.float32))


# (−cos as float32, as searched; id as int64): a candidate set packed in bytes, a fraction of
# what a list of tuples takes (storage.md).
PAIR = np.dtype([("negative", "<f4"), ("id", "<i8")])


def pack_pairs(pairs: list[tuple[float, int]]) -> bytes:
    """(score, id) pairs packed into bytes (``PAIR``), as a build keeps candidate sets."""
    return np.array(pairs, dtype=PAIR).tobytes()


def unpack_pairs(packed: bytes) -> list[tuple[float, int]]:
    """The (score, id) pairs ``pack_pairs`` packed."""
    return [(float(n), int(i)) for n, i in np.frombuffer(packed, dtype=PAIR).tolist()]


def pack_sets(sets: dict[int, bytes]) -> dict[str, np.ndarray]:
    """Packed pair sets by id as three arrays (ids, offsets into pairs, pairs), to be saved."""
    ids = np.fromiter(sets, dtype=np.int64, count=len(sets))
    packed = [sets[i] for i in ids.tolist()]
    sizes = np.fromiter((len(p) // PAIR.itemsize for p in packed), dtype=np.int64, count=len(packed))
    return {"ids": ids, "offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "pairs": np.frombuffer(b"".join(packed), dtype=PAIR)}


def unpack_sets(ids: np.ndarray, offsets: np.ndarray, pairs: np.ndarray) -> dict[int, bytes]:
    """The packed pair sets by id that ``pack_sets`` turned into arrays."""
    pairs = pairs.astype(PAIR)
    return {int(i): pairs[offsets[n] : offsets[n + 1]].tobytes() for n, i in enumerate(ids.tolist())}


def pair_ids(packed: bytes) -> list[int]:
    """The ids of packed pairs, in order."""
    return np.frombuffer(packed, dtype=PAIR)["id"].tolist()
