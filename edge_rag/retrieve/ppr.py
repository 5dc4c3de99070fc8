"""Personalized PageRank retrieval (``ppr``, beyond the paper): a random walk with restart over the
weighted graph of §3.1, entities and chunks alike.

The walk starts from TR's query entities E^e (eqs. 18–19), weighted by their specificity, from the
passages the question names by title and from its nearest chunks; it steps along relations
weighted by w(r) (eq. 25), entity→chunk links, title links and next-chunk links. A candidate
chunk scores cos(q, c) + ``FUSION``·π(c) / max π + ``LEXICAL``·bm25(c) / max bm25, and the best
chunk of each document comes first. A question of two events is also ranked clause by clause.
``WalkGraph.pagerank`` solves it by forward push over the part of the graph its mass reaches.

The writer stores the matrix beside the index (``walk_cache.py``) and queries map it; without a
current stored one (an encrypted index, the -Weights ablation) the open index derives it in memory.

Design: docs/design/ppr.md
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..lexicon import entity_key
from ..questions import clauses, query_terms
from ..store.graph_arrays import GraphArrays
from .base import timed
from .graph_reader import GraphReader
from .lexical import ChunkTerms, TermCounts
from .title_links import TitleIndex
from .types import EntityHit, Retrieval, RetrievedChunk

if TYPE_CHECKING:
    from ..store import IndexStore

# The walk's constants; docs/design/ppr.md gives how each was chosen.
DAMPING = 0.5  # d: the share of a node's mass passed along its edges each round
SPECIFICITY = 0.5  # a seed weighs confidence / (chunks that mention it) ** SPECIFICITY
TOLERANCE = 1e-5  # the push stops when no node holds more residual than this per neighbour
MAX_ROUNDS = 200  # a bound on push rounds
PUSH_DENSE = 0.25  # a local round pushing along over 4 edges a node sums over every node
LOCAL_FROM = 60_000  # nodes from which the walk scans only the nodes its mass reached
FUSION = 1.0  # weight of π / max π in a candidate chunk's score
LEXICAL = 0.25  # weight of bm25 / max bm25 in a candidate chunk's score
CHUNK_SEEDS = 10  # the nearest chunks that seed the walk ...
CHUNK_SEED_SHARE = 0.3  # ... with this share of the restart mass
NEXT_CHUNK = 1.0  # weight of the edge from a chunk to the next chunk of its document
TITLE_LINK = 300.0  # weight of the edge from a chunk to the first chunk of a title it names
TITLE_SEED_SHARE = 0.8  # the question's titles' share of the named seed mass
CANDIDATES = 50  # chunks the walk and BM25 each put into the fusion
DENSE_K = max(CHUNK_SEEDS, CANDIDATES)  # the nearest chunks a question's walk reads
WHOLE_FIRST = 3  # the whole question's documents ahead of its clauses' (``interleave``)
MEMORY_SHARE = 0.2  # a follow-up's restart mass on what the turn before it named and cited


@dataclass(frozen=True)
class Memory:
    """What the turn before a follow-up left (docs/design/dialogue.md): the names it mentioned and
    the chunks it cited; the walk restarts there with ``MEMORY_SHARE`` of its mass."""

    names: tuple[str, ...] = ()
    chunks: tuple[int, ...] = ()


@dataclass(frozen=True)
class WalkGraph:
    """The graph's transition probabilities in CSR form, one row per node (entities first, then
    chunks) listing where a walker at that node steps next."""

    entity_ids: np.ndarray
    chunk_ids: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    width: np.ndarray
    dangling: np.ndarray
    entity_chunks: np.ndarray
    titles: TitleIndex | None = None
    lexical: ChunkTerms | None = None
    read: ChunkReading | None = None

    @classmethod
    def from_store(cls, store: IndexStore, use_weights: bool = True,
                   earlier: ChunkReading | None = None) -> WalkGraph:
        """The graph of an open store, with its documents' title links (see ``title_links.py``) and
        its chunks' BM25 index (``lexical.py``), derived in memory from one consistent read.
        ``earlier``: what an earlier walk read from the chunk texts, reused for the chunks it
        covers while the documents' titles are the same (only newer chunks' texts are read)."""
        with store.walk.snapshot():
            arrays = store.walk.arrays()
            first = store.walk.first_chunks()
            titled = store.walk.titles()
            index = (TitleIndex.build((t, first[d]) for d, t in titled.items() if d in first)
                     if titled else None)
            digest = titles_digest(titled, first)
            reading = ChunkReading.start(arrays.chunk_ids, digest, earlier)
            for rows in store.walk.chunk_texts(after=reading.after):
                for chunk_id, doc_id, text in rows:
                    reading.terms.add(text)
                    if index is not None:
                        found = index.find(text, capitalised=True)
                        reading.pairs.extend((chunk_id, t) for t in found if t != first.get(doc_id))
        read = reading.finish(arrays.chunk_ids)
        links = (read.links[:, 0], read.links[:, 1]) if index is not None else None
        return replace(cls.build(arrays, use_weights, index, links, read.words), read=read)

    @classmethod
    def build(cls, arrays: GraphArrays, use_weights: bool = True, titles: TitleIndex | None = None,
              title_links: tuple[np.ndarray, np.ndarray] | None = None,
              lexical: ChunkTerms | None = None) -> WalkGraph:
        """Symmetric weighted adjacency → row-stochastic steps, row-compressed; ``title_links``
        are (chunk id, chunk id) pairs joined with weight ``TITLE_LINK``; ``lexical`` indexes
        the chunks in ``arrays.chunk_ids`` order."""
        n = len(arrays.entity_ids) + len(arrays.chunk_ids)
        source, target, weight = _edges(arrays, use_weights)
        if title_links is not None and len(title_links[0]):
            ends = [np.searchsorted(arrays.chunk_ids, ids) + len(arrays.entity_ids) for ids in title_links]
            source, target = np.concatenate([source, ends[0]]), np.concatenate([target, ends[1]])
            weight = np.concatenate([weight, np.full(len(ends[0]), TITLE_LINK)])
        source, target = np.concatenate([source, target]), np.concatenate([target, source])
        weight = np.concatenate([weight, weight])
        degree = np.bincount(source, weights=weight, minlength=n)
        order = np.argsort(source * n + target, kind="stable")  # lexsort's order, in half its time
        rows, cols = source[order], target[order]
        counts = np.bincount(rows, minlength=n)
        chunks_of = np.bincount(_positions(arrays.entity_ids, arrays.link_entity),
                                minlength=len(arrays.entity_ids))
        return cls(arrays.entity_ids, arrays.chunk_ids, np.concatenate([[0], np.cumsum(counts)]),
                   cols.astype(np.int64), (weight[order] / degree[rows]).astype(np.float64),
                   np.maximum(counts, 1).astype(np.float64), counts == 0, chunks_of, titles, lexical)

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.entity_ids) + len(self.chunk_ids)

    def entity_nodes(self, ids: np.ndarray) -> np.ndarray:
        """Node positions of entity ids (-1 where absent)."""
        return _positions(self.entity_ids, ids, missing=-1)

    def chunk_nodes(self, ids: np.ndarray) -> np.ndarray:
        """Node positions of chunk ids (-1 where absent)."""
        found = _positions(self.chunk_ids, ids, missing=-1)
        return np.where(found >= 0, found + len(self.entity_ids), -1)

    def pagerank(self, seeds: np.ndarray, damping: float = DAMPING,
                 tolerance: float = TOLERANCE) -> np.ndarray:
        """Personalized PageRank for the restart distribution ``seeds`` (summing to 1).

        Forward push (Andersen, Chung & Lang, 2006), every node over the threshold at once: a
        node keeps 1 − d of its residual mass and passes d of it along its edges; dangling
        nodes pass theirs back to the seeds. It stops when no node holds more residual than
        ``tolerance`` per neighbour, so each node's error is below that, and a query touches
        only the part of the graph its mass reaches instead of every edge once per iteration.
        From ``LOCAL_FROM`` nodes on, only the nodes the mass has reached are scanned
        (``touched``): a round costs the neighbourhood, not the graph (issue 46), and sums the
        same pushes in the same order as a scan of every node does (equal ranks, bit for bit).
        """
        if self.size < LOCAL_FROM:
            return self._pagerank_dense(seeds, damping, tolerance)
        rank = np.zeros(self.size)
        residual = seeds.astype(np.float64)
        seed_nodes = np.flatnonzero(residual)
        seed_mass, touched = seeds[seed_nodes], seed_nodes
        seen = np.zeros(self.size, dtype=bool)
        seen[seed_nodes] = True
        for _ in range(MAX_ROUNDS):
            active = np.sort(touched[residual[touched] > tolerance * self.width[touched]])
            if not active.size:
                break
            mass = residual[active]
            residual[active] = 0.0
            rank[active] += (1 - damping) * mass
            residual[seed_nodes] += damping * float(mass[self.dangling[active]].sum()) * seed_mass
            edges, counts = self._edges_of(active)
            pushed = self.data[edges] * np.repeat(damping * mass, counts)
            reached = self._push(residual, self.indices[edges], pushed)
            fresh = reached[~seen[reached]]
            seen[fresh] = True
            touched = np.concatenate([touched, fresh])
        return rank

    def _pagerank_dense(self, seeds: np.ndarray, damping: float, tolerance: float) -> np.ndarray:
        """``pagerank`` scanning every node each round: cheaper below ``LOCAL_FROM`` nodes."""
        rank = np.zeros(self.size)
        residual = seeds.astype(np.float64)
        threshold = tolerance * self.width
        for _ in range(MAX_ROUNDS):
            active = np.flatnonzero(residual > threshold)
            if not active.size:
                break
            mass = residual[active]
            residual[active] = 0.0
            rank[active] += (1 - damping) * mass
            residual += damping * float(mass[self.dangling[active]].sum()) * seeds
            edges, counts = self._edges_of(active)
            pushed = self.data[edges] * np.repeat(damping * mass, counts)
            residual += np.bincount(self.indices[edges], weights=pushed, minlength=self.size)
        return rank

    def _edges_of(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the nodes' edges in ``indices``/``data`` (row by row) and each row's count."""
        starts, counts = self.indptr[nodes], self.indptr[nodes + 1] - self.indptr[nodes]
        return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum()), counts

    def _push(self, residual: np.ndarray, targets: np.ndarray, pushed: np.ndarray) -> np.ndarray:
        """Add the pushed mass to its targets (summed per target in edge order, as one bincount
        over every node would); returns the nodes reached. Many pushes are summed over every
        node (no sort), few over the distinct targets."""
        if PUSH_DENSE * len(targets) > self.size:
            sums = np.bincount(targets, weights=pushed, minlength=self.size)
            reached = np.flatnonzero(sums)
            residual[reached] += sums[reached]
            return reached
        reached, at = np.unique(targets, return_inverse=True)
        residual[reached] += np.bincount(at, weights=pushed, minlength=len(reached))
        return reached


class PPRRetriever:
    """Chunks by personalized PageRank from the question's entities, fused with the cosine."""

    name = "ppr"

    def __init__(self, graph: GraphReader, walk: Callable[[], WalkGraph] | None = None,
                 memory: Memory | None = None) -> None:
        self.graph = graph
        self.settings = graph.view.settings
        self.walk = walk or (lambda: WalkGraph.from_store(graph.view.store, self.settings.use_weights))
        self.memory = memory

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """Seeds, the walk, then the best chunks by walk probability and cosine; a question of
        two events (``questions.clauses``) also ranks each event's clause and interleaves them."""
        result = Retrieval(question, self.name)
        chunks, entities = self.rank(question, top_k, result.timings_ms)
        parts = clauses(question)
        if parts:
            ranked = [self.rank(part, top_k, result.timings_ms)[0] for part in parts]
            chunks = interleave([chunks, *ranked], top_k)
        result.chunks = chunks
        names = self.graph.entities(entities)
        result.entities = [EntityHit(name=names[e].name, type=names[e].type, score=round(s, 6))
                           for e, s in sorted(entities.items(), key=lambda kv: -kv[1]) if e in names]
        return result

    def rank(self, question: str, top_k: int,
             timings: dict[str, float]) -> tuple[list[RetrievedChunk], dict[int, float]]:
        """One text's ranked chunks (best chunk of each document first) and its entity seeds;
        stage times add up in ``timings``."""
        view = self.graph.view
        with timed(timings, "keywords"):
            terms, grams = query_terms(question)
            exact = self.graph.tables.entity_of_keys(entity_key(t) for t in terms + grams)
            missing = [t for t in terms if entity_key(t) not in exact]
            exact = longest_matches(exact)
        with timed(timings, "embed"):
            query = view.embedder.embed_one(question)  # remembered: auto's planner embedded it
            vectors = view.embedder.embed(missing) if missing else np.zeros((0, len(query)), np.float32)
        with timed(timings, "entities"):
            walk = self.walk()
            spread = self._spread(walk.lexical, exact, {entity_key(t) for t in terms})
            entities = self.seed_entities(walk, list(exact.values()), vectors, spread)
        with timed(timings, "search"):
            keys, sims = view.chunk_vectors.search(query, DENSE_K)
            dense = {int(k): float(s) for k, s in zip(keys, sims)}
        with timed(timings, "walk"):
            titled = walk.titles.find(question) if walk.titles else []
            rank = walk.pagerank(self._remember(walk, restart(walk, entities, dense, titled)))
        with timed(timings, "chunks"):
            lexical = walk.lexical.scores(question) if walk.lexical is not None and not titled else None
            return self.fuse(walk, rank, query, dense, top_k, lexical), entities

    def _remember(self, walk: WalkGraph, seeds: np.ndarray) -> np.ndarray:
        """The restart with ``MEMORY_SHARE`` moved to the previous turn's names and chunks (a
        follow-up's walk only; without a memory the seeds are returned as they are)."""
        if self.memory is None:
            return seeds
        ids = self.graph.tables.entity_of_keys(entity_key(n) for n in self.memory.names)
        named = _part(walk.entity_nodes(np.asarray(sorted(set(ids.values())), dtype=np.int64)),
                      [1.0] * len(set(ids.values())))
        cited = _part(walk.chunk_nodes(np.asarray(self.memory.chunks, dtype=np.int64)),
                      [1.0] * len(self.memory.chunks))
        parts = [p for p in (named, cited) if p is not None]
        if not parts or seeds.sum() <= 0:
            return seeds
        remembered = np.zeros_like(seeds)
        for nodes, weights in parts:
            np.add.at(remembered, nodes, weights / weights.sum() / len(parts))
        return (1.0 - MEMORY_SHARE) * seeds + MEMORY_SHARE * remembered

    def seed_entities(self, walk: WalkGraph, named: list[int], vectors: np.ndarray,
                      spread: dict[int, int] | None = None) -> dict[int, float]:
        """Entity id → seed weight: match confidence × specificity (docs/design/ppr.md), for the
        entities the terms name exactly and the nearest entity of each other term's vector;
        ``spread`` raises an entity's chunk count to its words' (``_spread``)."""
        spread = spread or {}
        confidence = dict.fromkeys(named, 1.0)
        for vector in vectors:
            for entity in self.graph.search_entities(vector, 1):
                confidence[entity.id] = max(confidence.get(entity.id, 0.0), entity.score)
        ids = np.asarray(sorted(confidence), dtype=np.int64)
        nodes = walk.entity_nodes(ids)
        return {int(e): confidence[int(e)] / max(1, int(walk.entity_chunks[n]), spread.get(int(e), 0))
                ** SPECIFICITY for e, n in zip(ids, nodes) if n >= 0 and confidence[int(e)] > 0}

    @staticmethod
    def _spread(words: ChunkTerms | None, exact: dict[str, int], terms: set[str]) -> dict[int, int]:
        """Entity id → chunks holding its words, for the n-grams that are no specific term."""
        if words is None:
            return {}
        return {node: words.spread(key) for key, node in exact.items() if key not in terms}

    def fuse(self, walk: WalkGraph, rank: np.ndarray, query: np.ndarray, dense: dict[int, float],
             top_k: int, lexical: np.ndarray | None = None) -> list[RetrievedChunk]:
        """The candidates (best by walk, by cosine and by BM25) ranked by
        cos + FUSION · π / max π + LEXICAL · bm25 / max bm25."""
        walked = rank[len(walk.entity_ids):]
        words = lexical if lexical is not None else np.zeros(len(walked), dtype=np.float32)
        near = _positions(walk.chunk_ids, np.asarray(list(dense), dtype=np.int64), missing=-1)
        pool = np.concatenate([_best(walked), _best(words), near[near >= 0]])
        graph = (FUSION * walked / (walked.max(initial=0.0) or 1.0)
                 + LEXICAL * words / (float(words.max(initial=0.0)) or 1.0))
        candidates = {int(walk.chunk_ids[i]): float(graph[i]) for i in pool}
        cosine = dict(dense)
        vectors = self.graph.view.store.walk.chunk_vectors([c for c in candidates if c not in cosine])
        cosine.update((c, float(v.astype(np.float32) @ query)) for c, v in vectors.items())
        found = ranked(self.graph.view.store, {c: cosine.get(c, 0.0) + g for c, g in candidates.items()})
        return documents_first(found)[:top_k]


def ranked(store: IndexStore, scores: dict[int, float]) -> list[RetrievedChunk]:
    """Chunks by score, best first (a chunk deleted since is left out)."""
    scored = sorted(((s, c) for c, s in scores.items()), reverse=True)
    records = store.chunks([c for _, c in scored])
    return [RetrievedChunk(c, records[c].doc_id, records[c].source, records[c].text, round(s, 6))
            for s, c in scored if c in records]


def interleave(lists: list[list[RetrievedChunk]], top_k: int) -> list[RetrievedChunk]:
    """The whole question's first ``WHOLE_FIRST`` documents, then the lists taken rank by rank
    (the whole question's, then each clause's), a document once, then the rest of the whole
    question's chunks: every event of the question gets a place among the first documents."""
    out = lists[0][:WHOLE_FIRST]
    seen = {c.doc_id for c in out}
    for depth in range(max(len(chunks) for chunks in lists)):
        for chunks in lists:
            if depth < len(chunks) and chunks[depth].doc_id not in seen:
                seen.add(chunks[depth].doc_id)
                out.append(chunks[depth])
    taken = {c.chunk_id for c in out}
    return (out + [c for c in lists[0] if c.chunk_id not in taken])[:top_k]


def documents_first(chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The best chunk of each document in rank order, then the other chunks in rank order."""
    best: dict[str, RetrievedChunk] = {}
    for chunk in chunks:
        best.setdefault(chunk.doc_id, chunk)
    first = list(best.values())
    taken = {c.chunk_id for c in first}
    return first + [c for c in chunks if c.chunk_id not in taken]


def restart(walk: WalkGraph, entities: dict[int, float], dense: dict[int, float],
            titled: list[int] | None = None) -> np.ndarray:
    """The restart distribution: the entity seeds and, with ``TITLE_SEED_SHARE`` of their mass,
    the chunks the question names by title; ``CHUNK_SEED_SHARE`` on the nearest chunks."""
    parts = [_part(walk.entity_nodes(np.asarray(list(entities), dtype=np.int64)), list(entities.values())),
             _part(walk.chunk_nodes(np.asarray(titled or [], dtype=np.int64)), [1.0] * len(titled or []))]
    named = [p for p in parts if p is not None]
    shares = [1.0 - TITLE_SEED_SHARE, TITLE_SEED_SHARE] if len(named) == 2 else [1.0] * len(named)
    near = sorted(dense.items(), key=lambda kv: -kv[1])[:CHUNK_SEEDS]
    chunks = _part(walk.chunk_nodes(np.asarray([c for c, _ in near], dtype=np.int64)),
                   [max(s, 0.0) for _, s in near])
    if chunks is not None:
        named.append(chunks)
        shares = [s * (1.0 - CHUNK_SEED_SHARE) for s in shares] + [CHUNK_SEED_SHARE if shares else 1.0]
    seeds = np.zeros(walk.size, dtype=np.float64)
    for (nodes, weights), share in zip(named, shares):
        np.add.at(seeds, nodes, share * weights / weights.sum())
    total = seeds.sum()
    return seeds / total if total > 0 else seeds


def _best(values: np.ndarray) -> np.ndarray:
    """Positions of the ``CANDIDATES`` largest positive values."""
    top = np.argsort(-values)[:CANDIDATES]
    return top[values[top] > 0]


def _part(nodes: np.ndarray, weights: list[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """Seed nodes present in the walk with positive weight, or None when there are none."""
    values = np.asarray(weights, dtype=np.float64)
    keep = (nodes >= 0) & (values > 0)
    return (nodes[keep], values[keep]) if keep.any() else None


def _edges(arrays: GraphArrays, use_weights: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every undirected edge once (node positions): relations, chunk–entity links, next chunks."""
    n_e = len(arrays.entity_ids)
    entity = lambda ids: _positions(arrays.entity_ids, ids, missing=-1)
    chunk = lambda ids: np.where((at := _positions(arrays.chunk_ids, ids, missing=-1)) >= 0, at + n_e, -1)
    order = np.lexsort((arrays.chunk_ord, arrays.chunk_doc))
    same = arrays.chunk_doc[order][1:] == arrays.chunk_doc[order][:-1]
    value = arrays.relation_value if use_weights else np.ones_like(arrays.relation_value)
    source = np.concatenate([entity(arrays.relation_source), entity(arrays.link_entity),
                             n_e + order[:-1][same]])
    target = np.concatenate([entity(arrays.relation_target), chunk(arrays.link_chunk),
                             n_e + order[1:][same]])
    weight = np.concatenate([value.astype(np.float64), np.ones(len(arrays.link_chunk)),
                             np.full(int(same.sum()), NEXT_CHUNK)])
    keep = (source >= 0) & (target >= 0) & (source != target) & (weight > 0)
    return source[keep], target[keep], weight[keep]


@dataclass(frozen=True)
class ChunkReading:
    """What a walk reads from the chunk texts: their BM25 counts (``words``, with ``tf``) and
    title links (chunk id pairs) of the chunks ``chunk_ids``, found with the titles ``titles``
    (a digest). A later walk reuses it (``start``) and reads only the chunks added since."""

    chunk_ids: np.ndarray
    words: ChunkTerms
    links: np.ndarray
    titles: str

    @staticmethod
    def start(chunk_ids: np.ndarray, titles: str, earlier: ChunkReading | None) -> _Reading:
        """A reading of ``chunk_ids`` that begins from ``earlier`` when it can: same titles, its
        stored counts, and every chunk it lacks newer than all it has (row ids only grow)."""
        if earlier is None or earlier.titles != titles or earlier.words.tf is None:
            return _Reading(titles)
        last = int(earlier.chunk_ids.max(initial=-1))
        keep = np.isin(earlier.chunk_ids, chunk_ids)
        if int(keep.sum()) + int(np.count_nonzero(chunk_ids > last)) != len(chunk_ids):
            return _Reading(titles)
        links = earlier.links[np.isin(earlier.links[:, 0], chunk_ids)].tolist()
        return _Reading(titles, TermCounts.resumed(earlier.words, keep), [(a, b) for a, b in links], last)


@dataclass
class _Reading:
    titles: str
    terms: TermCounts = field(default_factory=TermCounts)
    pairs: list[tuple[int, int]] = field(default_factory=list)
    after: int = -1  # chunks up to this id come from the earlier reading

    def finish(self, chunk_ids: np.ndarray) -> ChunkReading:
        links = np.asarray(self.pairs, dtype=np.int64).reshape(-1, 2)
        return ChunkReading(chunk_ids, self.terms.finish(), links, self.titles)


def titles_digest(titled: dict[str, str], first: dict[str, int]) -> str:
    """A digest of the documents' titles and first chunks (what title links are found with)."""
    pairs = sorted((d, t, first.get(d, -1)) for d, t in titled.items())
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def longest_matches(matched: dict[str, int]) -> dict[str, int]:
    """The matched names that are no run of whole words inside another matched name: "Anna Berg"
    matched, its "Anna" and "Berg" do not seed (in a large collection they are other nodes)."""
    spaced = [f" {key} " for key in matched]
    return {key: node for key, node in matched.items()
            if not any(f" {key} " in other and other != f" {key} " for other in spaced)}


def _positions(sorted_ids: np.ndarray, ids: np.ndarray, missing: int | None = None) -> np.ndarray:
    """Positions of ``ids`` in the sorted array ``sorted_ids``; ``missing`` where absent."""
    if len(sorted_ids) == 0:
        return np.full(len(ids), -1 if missing is not None else 0, dtype=np.int64)
    at = np.clip(np.searchsorted(sorted_ids, ids), 0, len(sorted_ids) - 1)
    found = sorted_ids[at] == ids
    if missing is None:
        return at[found]
    return np.where(found, at, missing)
