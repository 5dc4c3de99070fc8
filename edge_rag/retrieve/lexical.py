"""BM25 over the chunks' words, the lexical part of ``ppr``'s fusion (beyond the paper).

A dense vector of a long chunk (a conversation of twenty messages) averages its messages, so the
one line a question is about weighs little in it, and the int8 MiniLM matches paraphrase better
than rare words. BM25 (Robertson & Zaragoza, 2009) scores the words themselves: a term counts by
its inverse document frequency, saturated in the chunk by ``K1`` and normalised for length by
``B``. Terms are ``lexicon.index_terms`` (lower-cased crude stems without stopwords and question
words).

The index is term-major CSR arrays (term → chunk positions and weights). It is derived with the
walk and stored with it in ``walk/`` beside the index, not in SQLite (``walk_cache.py``); an
insert merges the new chunks' postings into the stored ones. A query costs one slice per term.

Design: docs/design/ppr.md
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..lexicon import index_terms

K1 = 0.9  # BM25's term-count saturation (docs/design/ppr.md)
B = 0.75  # BM25's length normalisation


@dataclass(frozen=True)
class ChunkTerms:
    """Every chunk's BM25 term weights, term-major: the chunks of term ``t`` are
    ``positions[indptr[t]:indptr[t + 1]]`` with weights idf(t) · saturated tf."""

    vocabulary: Mapping[str, int]
    indptr: np.ndarray
    positions: np.ndarray
    weights: np.ndarray
    idf: np.ndarray
    size: int
    tf: np.ndarray | None = None  # each posting's term count (kept so a rebuild can reuse it)

    @classmethod
    def build(cls, texts: Sequence[str]) -> ChunkTerms:
        """The index of ``texts``; a chunk's position is its place in the sequence."""
        counts = [Counter(index_terms(text)) for text in texts]
        vocabulary: dict[str, int] = {}
        terms = np.asarray([vocabulary.setdefault(t, len(vocabulary)) for c in counts for t in c], np.int64)
        chunks = np.repeat(np.arange(len(counts)), [len(c) for c in counts])
        tf = np.asarray([f for c in counts for f in c.values()], np.float64)
        lengths = np.asarray([sum(c.values()) for c in counts], np.float64)
        norm = lengths[chunks] / max(float(lengths.mean()) if len(lengths) else 0.0, 1.0)
        saturated = tf * (K1 + 1) / (tf + K1 * (1 - B + B * norm))
        df = np.bincount(terms, minlength=len(vocabulary))
        idf = np.log1p((len(counts) - df + 0.5) / (df + 0.5))
        order = np.argsort(terms, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        return cls(vocabulary, indptr, chunks[order].astype(np.int32),
                   (saturated * idf[terms])[order].astype(np.float32), idf.astype(np.float32), len(counts))

    def scores(self, text: str) -> np.ndarray:
        """BM25 of every chunk for the query ``text`` (each distinct term once)."""
        out = np.zeros(self.size, dtype=np.float32)
        for term in {self.vocabulary[t] for t in index_terms(text) if t in self.vocabulary}:
            start, end = self.indptr[term], self.indptr[term + 1]
            out[self.positions[start:end]] += self.weights[start:end]
        return out

    def spread(self, text: str) -> int:
        """How many chunks hold the rarest of ``text``'s terms: at least as many as hold the
        whole phrase (0 when a term is in no chunk, or ``text`` has no terms)."""
        found = [self.vocabulary.get(t) for t in index_terms(text)]
        if not found or None in found:
            return 0
        return min(int(self.indptr[t + 1] - self.indptr[t]) for t in found if t is not None)


FLUSH = 2048  # texts whose term counts are kept as Python lists before they become arrays (ppr.md)


class TermCounts:
    """``ChunkTerms.build`` fed one text at a time, its counts kept as arrays every ``FLUSH``
    texts (Python lists of a large corpus's term counts would not fit a small device)."""

    def __init__(self, vocabulary: dict[str, int] | None = None, base: ChunkTerms | None = None) -> None:
        self.vocabulary: dict[str, int] = vocabulary or {}
        self._base = base  # an earlier index all of whose chunks stay, ahead of the texts added
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._terms: list[int] = []
        self._tf: list[int] = []
        self._distinct: list[int] = []

    @classmethod
    def resumed(cls, earlier: ChunkTerms, keep: np.ndarray) -> TermCounts:
        """Counts that start with the chunks of an earlier index (which kept its ``tf``) where
        ``keep`` (one flag per earlier chunk) is set, in their order, without reading their texts.
        The result scores as a fresh build over the same texts does (term numbers may differ)."""
        assert earlier.tf is not None
        if keep.all() and np.diff(earlier.indptr).all():
            # Every earlier chunk stays (an insert): its term-major postings are taken as they
            # are and the new chunks' merged in by ``finish``, not sorted chunk-major and back
            # (two sorts of every posting; their cost is in docs/design/ppr.md).
            return cls(dict(earlier.vocabulary.items()), base=earlier)
        terms = np.repeat(np.arange(len(earlier.indptr) - 1), np.diff(earlier.indptr))
        kept = keep[earlier.positions]
        order = np.argsort(earlier.positions[kept], kind="stable")  # chunk-major
        # Terms only removed chunks held leave the vocabulary (nothing of a deleted text stays).
        number = np.full(len(earlier.indptr) - 1, -1, dtype=np.int64)
        used = np.unique(terms[kept])
        number[used] = np.arange(len(used))
        counts = cls({t: int(number[n]) for t, n in earlier.vocabulary.items() if 0 <= n < len(number)
                      and number[n] >= 0})
        distinct = np.bincount(earlier.positions, minlength=earlier.size)[keep]
        counts._parts.append((number[terms[kept][order]], earlier.tf[kept][order].astype(np.int64),
                              distinct.astype(np.int64)))
        return counts

    def add(self, text: str) -> None:
        """Count one chunk's terms (chunks are numbered in the order they are added)."""
        counts = Counter(index_terms(text))
        self._terms.extend(self.vocabulary.setdefault(t, len(self.vocabulary)) for t in counts)
        self._tf.extend(counts.values())
        self._distinct.append(len(counts))
        if len(self._distinct) >= FLUSH:
            self._flush()

    def finish(self) -> ChunkTerms:
        """The BM25 index of every text added (``ChunkTerms.build``'s arithmetic)."""
        self._flush()
        terms, tf, distinct = (np.concatenate([p[n] for p in self._parts]) if self._parts
                               else np.zeros(0, np.int64) for n in range(3))
        before = self._base.size if self._base is not None else 0
        chunks = np.repeat(np.arange(len(distinct)), distinct) + before
        df = np.bincount(terms, minlength=len(self.vocabulary))
        order = np.argsort(terms, kind="stable")
        if self._base is None:
            return self._index(df, chunks[order], tf[order], len(distinct))
        return self._merged(df, terms[order], chunks[order], tf[order], before + len(distinct))

    def _merged(self, df: np.ndarray, terms: np.ndarray, chunks: np.ndarray, tf: np.ndarray,
                n_chunks: int) -> ChunkTerms:
        """The index of the base's chunks and the added ones (term-sorted ``terms``, ``chunks``,
        ``tf``): each term's base postings, then its new ones, as one stable sort of them all
        by term gives (the base's are in chunk order and every new chunk comes after them)."""
        base = self._base
        assert base is not None and base.tf is not None
        # The base's term bounds, new terms (numbered after its own) holding none of its postings.
        was = np.concatenate([base.indptr, np.full(len(df) + 1 - len(base.indptr), base.indptr[-1])])
        earlier = np.diff(was)
        indptr = np.concatenate([[0], np.cumsum(df + earlier)]).astype(np.int64)
        # A new posting goes after its term's base postings and the new ones sorted before it.
        first = np.searchsorted(terms, terms)
        new_at = indptr[terms] + earlier[terms] + np.arange(len(terms)) - first
        shift = indptr[:-1] - was[:-1]  # how far each term's base postings move
        old_at = np.arange(len(base.positions)) + np.repeat(shift, earlier)
        positions, counts = np.empty(indptr[-1], dtype=np.int64), np.empty(indptr[-1], dtype=np.int64)
        positions[old_at], positions[new_at] = base.positions, chunks
        counts[old_at], counts[new_at] = base.tf, tf
        return self._index(df + earlier, positions, counts, n_chunks)

    def _index(self, df: np.ndarray, positions: np.ndarray, tf: np.ndarray, n_chunks: int) -> ChunkTerms:
        """The index from term-major postings (each term's chunks in order) and their counts."""
        terms = np.repeat(np.arange(len(df)), df)
        counts = tf.astype(np.float64)
        lengths = np.bincount(positions, weights=counts, minlength=n_chunks)
        norm = lengths[positions] / max(float(lengths.mean()) if n_chunks else 0.0, 1.0)
        saturated = counts * (K1 + 1) / (counts + K1 * (1 - B + B * norm))
        idf = np.log1p((n_chunks - df + 0.5) / (df + 0.5))
        indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        small = np.uint8 if counts.max(initial=0) <= np.iinfo(np.uint8).max else np.uint16
        return ChunkTerms(self.vocabulary, indptr, positions.astype(np.int32),
                          (saturated * idf[terms]).astype(np.float32), idf.astype(np.float32), n_chunks,
                          tf.astype(small))

    def _flush(self) -> None:
        if self._distinct:
            self._parts.append((np.asarray(self._terms, np.int64), np.asarray(self._tf, np.int64),
                                np.asarray(self._distinct, np.int64)))
            self._terms, self._tf, self._distinct = [], [], []
