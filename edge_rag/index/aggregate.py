"""Entity aggregation (paper §3.1): hybrid similarity within components, merges and Similar edges.

Candidate generation (eq. 1) is ``candidates.py``'s and the weakly connected components (eq. 2)
``graph_builder.py``'s; this module takes one component and applies eqs. 3–5:

    S(e_i, e_j) = λ·EditSim(l_i, l_j) + (1 − λ)·AttrSim(a_i, a_j)
    EditSim = 1 − Levenshtein(l_i, l_j) / max(|l_i|, |l_j|)        AttrSim = Jaccard(a_i, a_j)

Pairs with S ≥ δ are related by a ``similar`` edge with score S, unless their names carry
different numbers ("2026-01-06" and "2026-01-07" are near in edit distance but never the same
thing). Pairs that are the same entity beyond doubt are merged instead (see ``same_entity``).
The result is a function of the component's contents, so it does not depend on the order
entities were inserted in.
Design: docs/design/aggregation.md
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

# Types an extractor uses when it does not know better; they agree with any specific type.
GENERIC_TYPES = frozenset({"", "unknown", "entity", "name", "other", "thing"})
ARTICLES = re.compile(r"^(?:the|a|an)\s+")
NON_ALNUM = re.compile(r"[\W_]+")
DIGITS = re.compile(r"\d+")
BLOCK_CELLS = 1 << 19  # (key, key) pairs scored at once: a few MiB of matrices (aggregation.md)


@dataclass(frozen=True)
class EntityKey:
    """One surface entity (all mentions whose normalised name is ``key``) as aggregation sees it."""

    key: str
    type: str
    attributes: frozenset[str]
    mentions: int


@dataclass(frozen=True)
class AggregationParams:
    """τ (candidates), λ (edit vs attribute weight), δ (similar edge) and the merge threshold."""

    tau: float = 0.8
    lam: float = 0.6
    delta: float = 0.6
    merge: float = 0.9


@dataclass(frozen=True)
class Aggregation:
    """A component's result: groups of keys that become one node, and similar edges."""

    groups: list[list[str]]
    similar: list[tuple[str, str, float]]


def compact(key: str) -> str:
    """The name with articles, case, spaces and punctuation removed ("The Anna-Berg" → "annaberg")."""
    return NON_ALNUM.sub("", ARTICLES.sub("", key.casefold()))


def types_agree(a: str, b: str) -> bool:
    """Equal types, or one of them generic."""
    return a == b or a in GENERIC_TYPES or b in GENERIC_TYPES


def same_entity(a: EntityKey, b: EntityKey, score: float, params: AggregationParams) -> bool:
    """The merge rule: types agree and either the names differ only in spacing, case, articles
    and punctuation, or the hybrid score reaches the merge threshold with the very same type and
    the same numbers in both names (so "2026-01-06" and "2026-01-07" stay apart)."""
    if not types_agree(a.type, b.type):
        return False
    if compact(a.key) == compact(b.key) and compact(a.key):
        return True
    return score >= params.merge and a.type == b.type and same_numbers(a, b)


def same_numbers(a: EntityKey, b: EntityKey) -> bool:
    """Both names carry the same numbers (dates, times and amounts differ in nothing else)."""
    return DIGITS.findall(a.key) == DIGITS.findall(b.key)


def hybrid_scores(keys: Sequence[EntityKey], lam: float) -> np.ndarray:
    """The matrix S of eq. 3 over a component (diagonal included)."""
    everything = np.arange(len(keys))
    return _Scorer(keys, lam).scores(everything, everything)


def jaccard_matrix(sets: Sequence[frozenset[str]]) -> np.ndarray:
    """Pairwise Jaccard similarity; two empty sets score 0 (no evidence either way)."""
    member, sizes = _membership(sets)
    return _jaccard(member, sizes, np.arange(len(sets)), np.arange(len(sets)))


@dataclass(frozen=True)
class ScoredPairs:
    """The pairs i < j of a component with S(i, j) at a threshold, as parallel arrays."""

    rows: np.ndarray
    cols: np.ndarray
    scores: np.ndarray

    def at(self, threshold: float, alike: np.ndarray | None = None) -> ScoredPairs:
        """The pairs with S ≥ threshold (and, given labels per key, ``alike`` ones)."""
        keep = self.scores >= threshold
        if alike is not None:
            keep &= _alike(alike, self.rows, self.cols)
        return ScoredPairs(self.rows[keep], self.cols[keep], self.scores[keep])

    def triples(self) -> list[tuple[int, int, float]]:
        """(i, j, S) of every pair, in order."""
        return list(zip(self.rows.tolist(), self.cols.tolist(), self.scores.tolist()))


def _alike(labels: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    # Pairs with an equal label in one of the columns of ``labels`` (one row per key; -1 never
    # matches).
    left, right = labels[rows], labels[cols]
    return ((left == right) & (left >= 0)).any(axis=1)


def scored_pairs(keys: Sequence[EntityKey], lam: float, threshold: float,
                 alike: np.ndarray | None = None) -> ScoredPairs:
    """The pairs with S ≥ threshold (and, given labels per key, ``alike`` ones), in row-major
    order. Given labels, S is computed only within each group of keys sharing a label: a
    component of thousands of dates, times and quantities has millions of pairs and few with
    the same numbers (docs/design/aggregation.md). S is computed a block of at most
    ``BLOCK_CELLS`` pairs at a time (a component never holds its n × n matrix) and only pairs a
    rule can use are kept."""
    scorer, n = _Scorer(keys, lam), len(keys)
    groups = [np.arange(n)] if alike is None else [g for column in alike.T for g in _label_groups(column)]
    parts = [part for members in groups for part in scorer.pairs(members, threshold)]
    if not parts:
        return ScoredPairs(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
    rows, cols, scores = (np.concatenate([p[i] for p in parts]) for i in range(3))
    # A pair alike in both columns is found twice; np.unique's order is row-major.
    _, first = np.unique(rows.astype(np.int64) * n + cols, return_index=True)
    return ScoredPairs(rows[first], cols[first], scores[first])


def _label_groups(labels: np.ndarray) -> list[np.ndarray]:
    # The ascending positions of each label (>= 0) that two or more keys share.
    valid = np.flatnonzero(labels >= 0)
    order = valid[np.argsort(labels[valid], kind="stable")]
    _, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    return [order[a : a + c] for a, c in zip(starts, counts) if c > 1]


class _Scorer:
    """S (eq. 3) for pairs of a component's keys: λ·EditSim + (1 − λ)·Jaccard of the attributes."""

    def __init__(self, keys: Sequence[EntityKey], lam: float) -> None:
        self.names = [k.key for k in keys]
        self.member, self.sizes = _membership([k.attributes for k in keys])
        self.lam = lam

    def pairs(self, members: np.ndarray, threshold: float) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(rows, cols, S) of the pairs i < j of ``members`` (ascending) with S ≥ threshold."""
        step, out = max(1, BLOCK_CELLS // len(members)), []
        for start in range(0, len(members), step):
            block = self.scores(members[start : start + step], members)
            rows, cols = np.nonzero(block >= threshold)
            keep = cols > rows + start
            rows, cols = rows[keep], cols[keep]
            left, right = members[rows + start].astype(np.int32), members[cols].astype(np.int32)
            out.append((left, right, block[rows, cols]))
        return out

    def scores(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """S of every key of ``left`` with every key of ``right`` (positions in the component)."""
        edit = process.cdist([self.names[i] for i in left], [self.names[i] for i in right],
                             scorer=Levenshtein.normalized_similarity, dtype=np.float32)
        edit *= self.lam
        edit += (1.0 - self.lam) * _jaccard(self.member, self.sizes, left, right)
        return edit


def _membership(sets: Sequence[frozenset[str]]) -> tuple[np.ndarray, np.ndarray]:
    # Only words that two or more sets share can meet in an intersection, so the membership
    # matrix has a column per shared word alone (a component's descriptions have thousands of
    # words used once); the set sizes count every word.
    counts = Counter(token for tokens in sets for token in tokens)
    vocabulary = {token: i for i, token in enumerate(sorted(t for t, n in counts.items() if n > 1))}
    member = np.zeros((len(sets), max(1, len(vocabulary))), dtype=np.float32)
    for row, tokens in enumerate(sets):
        member[row, [vocabulary[t] for t in tokens if t in vocabulary]] = 1.0
    return member, np.array([len(tokens) for tokens in sets], dtype=np.float32)


def _jaccard(member: np.ndarray, sizes: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    inter = member[left] @ member[right].T
    union = sizes[left, None] + sizes[None, right] - inter
    return np.divide(inter, union, out=inter, where=union > 0)


def aggregate(keys: Sequence[EntityKey], params: AggregationParams) -> Aggregation:
    """Merge groups and similar edges of one weakly connected component.

    Every pair of the component is judged (eqs. 3–5), but only pairs that can pass a rule are
    visited in Python: keys whose compact names are equal, and pairs whose score S reaches the
    merge or the similar threshold (found with numpy), so a component of thousands of names
    (a collection's dates) costs a few matrix passes, not millions of Python calls."""
    keys = sorted(keys, key=lambda k: k.key)
    numbers = _labels(keys, lambda k: tuple(DIGITS.findall(k.key)))
    compacts = _labels(keys, lambda k: compact(k.key), "")
    # Only pairs with the same numbers or the same compact name can merge or be similar.
    pairs = scored_pairs(keys, params.lam, min(params.merge, params.delta),
                         np.stack([numbers, compacts], axis=1))
    parent = list(range(len(keys)))
    for i, j, score in _merge_candidates(keys, pairs, params):
        if same_entity(keys[i], keys[j], score, params):
            _union(parent, i, j)
    groups = _groups(parent, keys)
    similar = _similar(keys, pairs.at(params.delta, numbers[:, None]), parent)
    return Aggregation([[k.key for k in g] for g in groups], similar)


def _labels(keys: Sequence[EntityKey], label: Callable[[EntityKey], Hashable],
            none: Hashable = None) -> np.ndarray:
    # One integer per distinct label (``none``: -1), so pairs are compared in numpy: a component
    # of dates has millions of pairs at δ, nearly all with different numbers.
    ids: dict[Hashable, int] = {}
    return np.array([-1 if (v := label(k)) == none else ids.setdefault(v, len(ids)) for k in keys],
                    dtype=np.int64)


def _merge_candidates(keys: Sequence[EntityKey], pairs: ScoredPairs,
                      params: AggregationParams) -> list[tuple[int, int, float]]:
    # The pairs ``same_entity`` can accept: S at the merge threshold (``pairs`` holds only those
    # with the same numbers or the same compact name), or equal compact names (whose score the
    # rule does not read). Union-find's groups do not depend on the order pairs are joined in.
    found = pairs.at(params.merge).triples()
    by_compact: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if name := compact(key.key):
            by_compact.setdefault(name, []).append(i)
    for members in by_compact.values():
        found.extend((a, b, 0.0) for n, a in enumerate(members) for b in members[n + 1:])
    return found


def representative(group: Iterable[EntityKey]) -> EntityKey:
    """The key that names a merged node: most mentioned, then longest, then alphabetical."""
    return min(group, key=lambda k: (-k.mentions, -len(k.key), k.key))


def components(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Weakly connected components (eq. 2), each sorted, in order of their first key."""
    index = {node: i for i, node in enumerate(sorted(set(nodes)))}
    parent = list(range(len(index)))
    for a, b in edges:
        if a in index and b in index:
            _union(parent, index[a], index[b])
    found: dict[int, list[str]] = {}
    for node, i in index.items():
        found.setdefault(_find(parent, i), []).append(node)
    return sorted(found.values())


def _similar(keys: Sequence[EntityKey], pairs: ScoredPairs,
             parent: list[int]) -> list[tuple[str, str, float]]:
    # One edge per pair of merged groups, scored by the best key pair between them (eq. 5);
    # ``pairs`` are those at δ whose names carry the same numbers.
    roots = np.array([_find(parent, i) for i in range(len(keys))], dtype=np.int64)
    a, b = roots[pairs.rows], roots[pairs.cols]
    apart = a != b
    low, high, scores = np.minimum(a, b)[apart], np.maximum(a, b)[apart], pairs.scores[apart]
    code = low * len(keys) + high
    order = np.lexsort((-scores, code))  # each group pair's best first
    first = order[np.r_[True, code[order][1:] != code[order][:-1]]] if len(order) else order
    return sorted((keys[i].key, keys[j].key, round(s, 6))
                  for i, j, s in zip(low[first].tolist(), high[first].tolist(), scores[first].tolist()))


def _groups(parent: list[int], keys: Sequence[EntityKey]) -> list[list[EntityKey]]:
    found: dict[int, list[EntityKey]] = {}
    for i, key in enumerate(keys):
        found.setdefault(_find(parent, i), []).append(key)
    return sorted(found.values(), key=lambda g: g[0].key)


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)
