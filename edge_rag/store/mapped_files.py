"""Arrays the build writes once beside the index and queries memory-map (``walk/``).

The random walk's matrix, its BM25 postings, its title table and the graph's names are stored as
``.npy`` files and mapped read-only (``numpy.load(mmap_mode="r")``): a query touches the pages of
the rows its walk reaches, and the operating system may drop them again, so resident memory
follows the query, not the corpus.

A folder ``walk/<stamp>/`` holds one generation: its ``stamp.json`` names the index generations
(chunk, entity, relation) it was derived from, and a reader uses it only while those are the
index's current ones (otherwise the arrays are derived in memory). A new generation is written to
a new folder and ``walk/current`` names it, replaced atomically; a reader that mapped the old
folder keeps its files until it lets them go (unlinked files stay readable on POSIX).
Encrypted indexes write no such files (they would hold the corpus's words in the clear).
Design: docs/design/ppr.md
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = "walk"
CURRENT = "current"
STAMP = "stamp.json"
FORMAT = 2  # the files' layout; a stamp of another format is not read (ppr.md)


class StringTable:
    """Strings in one UTF-8 blob with offsets, each with an integer value, ordered by a 64-bit
    hash of the string: a lookup is one binary search of the hashes (numpy's, over the mapped
    array) and one comparison of the string found, with no dictionary of every string in memory."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, values: np.ndarray, hashes: np.ndarray) -> None:
        self.blob, self.offsets, self.values, self.hashes = blob, offsets, values, hashes

    @staticmethod
    def arrays(items: Mapping[str, int]) -> dict[str, np.ndarray]:
        """The four arrays of a table holding ``items`` (string → value)."""
        encoded = [(_hash(k.encode("utf-8")), k.encode("utf-8"), v) for k, v in items.items()]
        encoded.sort(key=lambda e: (e[0], e[1]))
        lengths = np.fromiter((len(e[1]) for e in encoded), dtype=np.int64, count=len(encoded))
        blob = b"".join(e[1] for e in encoded)
        return {"blob": np.array(bytearray(blob), dtype=np.uint8),
                "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                "values": np.fromiter((e[2] for e in encoded), dtype=np.int64, count=len(encoded)),
                "hashes": np.fromiter((e[0] for e in encoded), dtype=np.uint64, count=len(encoded))}

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, n: int) -> bytes:
        return bytes(self.blob[int(self.offsets[n]) : int(self.offsets[n + 1])])

    def get(self, key: str) -> int | None:
        """The value of ``key``, or None."""
        wanted = key.encode("utf-8")
        digest = _hash(wanted)
        at = int(np.searchsorted(self.hashes, np.uint64(digest)))
        while at < len(self) and int(self.hashes[at]) == digest:
            if self[at] == wanted:
                return int(self.values[at])
            at += 1
        return None


def _hash(key: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


class StringList(Sequence[str]):
    """Strings in a given order, in one UTF-8 blob with offsets (read a slice at a time)."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self.blob, self.offsets = blob, offsets

    @staticmethod
    def arrays(strings: Sequence[str]) -> dict[str, np.ndarray]:
        """The two arrays of a list holding ``strings``."""
        encoded = [s.encode("utf-8") for s in strings]
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
        blob = np.array(bytearray(b"".join(encoded)), dtype=np.uint8)
        return {"blob": blob, "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)}

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, n: Any) -> Any:
        if isinstance(n, slice):
            return self.block(*n.indices(len(self))[:2])
        return bytes(self.blob[int(self.offsets[n]) : int(self.offsets[n + 1])]).decode("utf-8")

    def block(self, start: int, end: int) -> list[str]:
        """The strings ``start`` to ``end`` (exclusive), decoded in one pass."""
        ends = self.offsets[start : end + 1].tolist()
        data = bytes(self.blob[ends[0] : ends[-1]])
        return [data[a - ends[0] : b - ends[0]].decode("utf-8") for a, b in zip(ends, ends[1:])]


def write(directory: Path, stamp: dict[str, Any], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write one generation's arrays and make it the current one; older folders are removed."""
    root = directory / FOLDER
    name = "g-" + "-".join(str(g) for g in stamp["generations"])
    target, tmp = root / name, root / f"{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for key, array in arrays.items():
        np.save(tmp / f"{key}.npy", np.ascontiguousarray(array), allow_pickle=False)
    (tmp / STAMP).write_text(json.dumps({**stamp, "format": FORMAT}), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    pointer = root / f"{CURRENT}.tmp"
    pointer.write_text(name, encoding="utf-8")
    os.replace(pointer, root / CURRENT)
    for old in root.iterdir():
        if old.is_dir() and old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return target


def current_stamp(directory: Path) -> dict[str, Any] | None:
    """The stamp of the current generation of arrays, or None when there is none."""
    folder = _current(directory)
    if folder is None:
        return None
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if stamp.get("format") == FORMAT else None


def load(directory: Path, names: Iterable[str]) -> dict[str, np.ndarray] | None:
    """The current generation's arrays, memory-mapped read-only (None if one is missing)."""
    folder = _current(directory)
    if folder is None:
        return None
    try:
        return {n: np.load(folder / f"{n}.npy", mmap_mode="r", allow_pickle=False) for n in names}
    except (OSError, ValueError):
        return None


def current_bytes(directory: Path) -> int:
    """Bytes of the current generation's files (0 when there is none)."""
    folder = _current(directory)
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) if folder is not None else 0


def remove(directory: Path) -> None:
    """Remove every stored generation (an index whose arrays must not be trusted)."""
    shutil.rmtree(directory / FOLDER, ignore_errors=True)


def table(arrays: Mapping[str, np.ndarray], prefix: str) -> StringTable:
    """The ``StringTable`` stored under ``prefix`` in a set of arrays."""
    return StringTable(arrays[f"{prefix}_blob"], arrays[f"{prefix}_offsets"], arrays[f"{prefix}_values"],
                       arrays[f"{prefix}_hashes"])


def table_names(prefixes: Sequence[str]) -> list[str]:
    """The array names of the tables stored under these prefixes."""
    return [f"{p}_{part}" for p in prefixes for part in ("blob", "offsets", "values", "hashes")]


def _current(directory: Path) -> Path | None:
    root = directory / FOLDER
    try:
        name = (root / CURRENT).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    folder = root / name
    return folder if name and folder.is_dir() else None
