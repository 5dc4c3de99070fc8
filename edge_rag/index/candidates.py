"""Candidate sets of eq. 1, searched once per entity name and kept in step as names come and go.

    N(e_i) = {e_j | cos(v_i, v_j) ≥ τ}

Interpretation: N(e_i) is read from the ``per_key`` nearest name vectors of e_i (itself among
them) and keeps those at cos ≥ τ; the cap bounds a name's degree in the candidate graph whose
weakly connected components (eq. 2) are aggregated. Each name is searched once and its set kept,
instead of once per build batch: a new name is searched with a range large enough to hold every
name at cos ≥ τ and enters the sets it now belongs to; a removed name drops every set that held
it. The sets are those a fresh search gives (up to the order of equal scores), and outlive the
process (``save``/``restore``, ``store.CANDIDATES_FILE``) while the index is as it was saved (the
entity vectors' generation and count, τ and the cap); an encrypted index keeps none.

Design: docs/design/aggregation.md
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..store import VectorIndex
from ..store.codec import as_stored, pack_pairs, pack_sets, pair_ids, unpack_pairs, unpack_sets

# The search of a name's candidates (docs/design/aggregation.md).
RANGE_FACTOR = 4  # a new name is searched for RANGE_FACTOR × per_key neighbours, more if all pass τ
TIES = 4  # names beyond the cap searched so that equal scores at the cap are broken by id
FORMAT = 1  # the saved sets' layout; a file of another format is not read


class Candidates:
    """The entity name vectors of an index with each name's candidate set (eq. 1) cached."""

    def __init__(self, vectors: VectorIndex, tau: float, per_key: int) -> None:
        self.vectors = vectors
        self.tau = tau
        self.per_key = per_key
        # id -> (−cos, id) pairs, best first, packed (``codec.pack_pairs``): lists of tuples took
        # several times the memory over a large build (aggregation.md).
        self._near: dict[int, bytes] = {}

    def of(self, ids: Sequence[int], vector_of: Callable[[int], np.ndarray]) -> list[list[int]]:
        """Each name's candidates (ids, itself excluded), given the ids and how to get the name
        vector of the n-th (read only for names whose set is not kept)."""
        missing = [n for n, i in enumerate(ids) if i not in self._near]
        if missing:
            found = self.vectors.search_many(as_stored(np.stack([vector_of(n) for n in missing])),
                                             self.per_key + TIES)
            for n, (keys, sims) in zip(missing, found):
                self._near[ids[n]] = pack_pairs(self._kept(keys, sims))
        return [[j for j in pair_ids(self._near[i]) if j != i] for i in ids]

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Add name vectors to the index, with their own sets and their place in others'."""
        if not ids:
            return
        vectors = as_stored(vectors)  # queried as stored: cosines are the same from either side
        self.vectors.add(list(ids), vectors)
        found = self._in_range(vectors)
        for i, (keys, sims) in zip(ids, found):
            self._near[i] = pack_pairs(self._kept(keys, sims))
        new = set(ids)
        for i, (keys, sims) in zip(ids, found):
            for j, sim in zip(keys.tolist(), sims.tolist()):
                if sim >= self.tau and j not in new and j in self._near:
                    self._near[j] = pack_pairs(self._enter(unpack_pairs(self._near[j]), -sim, i))

    def remove(self, ids: Sequence[int]) -> None:
        """Remove name vectors; every set that held one of them is searched again when asked."""
        if not ids:
            return
        self.vectors.remove(list(ids))
        gone = set(ids)
        for i in gone:
            self._near.pop(i, None)
        for i in [i for i, near in self._near.items() if not gone.isdisjoint(pair_ids(near))]:
            del self._near[i]

    def stamp(self, generation: int) -> dict[str, Any]:
        """What the kept sets depend on: the entity vectors (their generation and count), τ, the cap."""
        return {"format": FORMAT, "generation": generation, "count": len(self.vectors),
                "tau": self.tau, "per_key": self.per_key}

    def save(self, path: Path, stamp: dict[str, Any]) -> bool:
        """Write every kept set with ``stamp`` (``stamp()``), replacing the file atomically. Only a
        cache: when it cannot be written (a full disk), the old file goes and False is returned."""
        partial = path.with_name(path.name + ".part")
        arrays: dict[str, Any] = {**pack_sets(self._near), "stamp": np.array(json.dumps(stamp))}
        try:
            with open(partial, "wb") as out:
                np.savez(out, **arrays)
            os.replace(partial, path)
            return True
        except OSError:
            for stale in (partial, path):
                with contextlib.suppress(OSError):
                    stale.unlink(missing_ok=True)
            return False

    def restore(self, path: Path, stamp: dict[str, Any]) -> bool:
        """Keep the sets ``save`` wrote if its stamp is ``stamp``; True when they were taken."""
        try:
            with np.load(path) as saved:
                if json.loads(str(saved["stamp"])) != stamp:
                    return False
                near = unpack_sets(saved["ids"], saved["offsets"], saved["pairs"])
        except (OSError, ValueError, TypeError, IndexError, KeyError, zipfile.BadZipFile):
            return False  # none, or unreadable: the sets are searched again, as before
        self._near = near
        return True

    def _kept(self, keys: np.ndarray, sims: np.ndarray) -> list[tuple[float, int]]:
        # Equal scores at the cap are broken by id, as ``_enter`` breaks them (4-bit name
        # vectors tie more often than 8-bit ones did): a few more than the cap are searched.
        return sorted((-s, j) for j, s in zip(keys.tolist(), sims.tolist()) if s >= self.tau)[: self.per_key]

    def _enter(self, near: list[tuple[float, int]], negative: float, i: int) -> list[tuple[float, int]]:
        # Joins when the set has room under the cap or i beats its last member.
        if len(near) < self.per_key or negative < near[-1][0]:
            bisect.insort(near, (negative, i))
            del near[self.per_key:]
        return near

    def _in_range(self, vectors: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        # Every neighbour at cos ≥ τ: widen the search for rows whose last neighbour still passes.
        k = RANGE_FACTOR * self.per_key
        found = self.vectors.search_many(vectors, k)
        while True:
            short = [n for n, (keys, sims) in enumerate(found)
                     if len(keys) == k and sims[-1] >= self.tau]
            if not short or k >= len(self.vectors):
                return found
            k *= RANGE_FACTOR
            for n, wider in zip(short, self.vectors.search_many(vectors[short], k)):
                found[n] = wider
