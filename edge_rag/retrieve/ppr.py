"""Personalized PageRank retrieval (``ppr``): a random walk with restart over the weighted graph.

What is the paper's and what is not. The walk runs over §3.1's heterogeneous weighted graph —
entity nodes joined by structural relations weighted by ω_r and similar edges weighted by s_r,
which is eq. 25's unified weight w(r) — and G_index's entity→chunk links (``chunk_entities``),
and it starts from TR's query entities E^e (eqs. 18–19). The rest is beyond the paper, after
HippoRAG (Gutiérrez et al., 2024), whose no-LLM graph with PageRank reached recall@5 0.765 on
2WikiMultihopQA where expanding the query entities to their neighbours reached 0.747:

- Nodes are entities *and chunks*: a chunk is joined to each entity it mentions with weight 1,
  so the walk reaches passages through the entities they share, and the chunk's probability is
  its graph score. A chunk is also joined to the next chunk of its document (weight
  ``NEXT_CHUNK``): a long passage or conversation stays one neighbourhood.
- Seeds (the restart vector): TR's K_e — the question's name spans, dates, times, quantities
  and titles (full dates also in the graph's ``YYYY-MM-DD`` form, ``questions.iso_dates``: LiHua-World
  dev Single recall@5 0.871 → 0.901 when "on 20260405" seeds that day's conversations),
  each matched to a node by its exact normalised name, else to its nearest entity vector
  with the cosine as confidence — and every word n-gram of the question that is exactly
  an entity's name (in place of DR/TR's fuzzy matching, which cost 47 ms a question against
  2WikiMultihopQA's 44k names on the shared cores) and lies inside no longer match
  (``longest_matches``); terms made only of stopwords and question words, such as a film
  called "What Is", are no seeds. A seed's weight is its confidence times its specificity
  1 / √(chunks that mention it): a person in every conversation barely seeds (HippoRAG's 1 / n
  let a rare word of the question outweigh the names it asks about). For an n-gram that is
  no specific term, "chunks that mention it" are at least the chunks holding its rarest word
  (``ChunkTerms.spread``): a word the extractor made a node in one chunk ("mention",
  "opinion") is no rarer for it in the text. Both rules are for large collections: with
  LiHua-World grown 30x by other text (``benchmarks/scale/scale.py``) the "Li" of a matched "Li Hua"
  was a Chinese historian's node and "mention" a film's; dev recall@5 0.858 → 0.872 → 0.880
  at 30x, 0.907 → 0.909 at 1x, 2WikiMultihopQA 0.869 → 0.872.
  The ``CHUNK_SEEDS`` chunks nearest to the question seed ``CHUNK_SEED_SHARE`` of the mass, in
  proportion to their cosine (HippoRAG 2's dense passage seeds), so a question whose terms
  match nothing still walks from where the text matches.
- Titles (``title_index.py``): where documents carry a ``title`` (encyclopaedic passages), a chunk
  whose text names another document's title (capitalised) is joined to that document's first
  chunk with weight ``TITLE_LINK``, and the titles the question contains seed their documents'
  first chunks with ``TITLE_SEED_SHARE`` of the named mass. The link weight is large (300
  against 1 for an entity link), so a walker at a titled passage mostly steps to the passages
  it names: a two-hop question names the first passage, whose text names the bridge passage.
  On 2WikiMultihopQA dev this lifted recall@5 0.677 → 0.868 and recall@2 0.591 → 0.739
  (``TITLE_LINK`` 1, 5, 20, 100, 300, 1000 and shares 0.5, 0.8, 0.95 compared on both halves;
  capitalised mentions only: +0.024 / +0.013 R@5 on the halves). Untitled corpora
  (LiHua-World) are unchanged.
- Comparisons ("Which film came out first, X or Y?") need no walk: the planner sends them to
  ``titles`` (``titles.py``), and ``ppr`` itself always walks.
- Words (``lexical.py``): BM25 over the chunks' words adds ``LEXICAL`` · bm25 / max bm25 to
  each candidate's score, and its best chunks join the candidates. A chunk's vector averages a
  whole conversation, so one line's rare words ("music festival", "air-conditioner") weigh
  little in it. LiHua-World dev recall@5: All 0.874 → 0.907, Single 0.896 → 0.926, Multi
  0.702 → 0.760 (halves by position 0.692 → 0.769 and 0.712 → 0.750; ``LEXICAL`` 0.1, 0.2,
  0.25, 0.3, 0.5, 1 and 2 compared, ``K1`` 0.9, 1.2 and 2; BM25's chunks as extra walk seeds
  added nothing). Not where the question names a document by title: there the bridge passage
  shares no words with the question and is reached through the title links, and words only
  raise look-alikes ("Dontell Jefferson" for "the director of film Thomas Jefferson"):
  2WikiMultihopQA dev recall@5 0.869 → 0.856 and recall@2 0.743 → 0.724 with words, both
  unchanged without.
- Two events (``questions.clauses``): a question that orders or measures two events ("did X happen
  before Y?", "the time between X and Y") is also ranked clause by clause, and the lists are
  interleaved after the whole question's first ``WHOLE_FIRST`` documents. On LiHua-World dev
  Multi recall@5 rose 0.657 → 0.702 (halves by position 0.641 → 0.692 and 0.673 → 0.712),
  Single unchanged (0.871); no 2WikiMultihopQA dev question splits. Compared and not kept:
  plain round robin from the first rank (Single −0.005), reciprocal-rank fusion (k 1–60) and
  max-normalised score fusion (Multi 0.676–0.696, lower on a half), clause lists by the dense
  cosine instead of the walk (0.663–0.688).
- π = (1 − d)·s + d·P·π (P column-stochastic, dangling mass restarts), d = ``DAMPING``, solved
  by forward push to a fixed tolerance (``WalkGraph.pagerank``): whole-graph power iteration
  costs every edge per step (2WikiMultihopQA: 494k, tens of ms per step on a shared core).
- Fusion: a candidate chunk (the walk's best, the dense search's best and BM25's best) scores
  cos(q, c) + ``FUSION``·π(c) / max π + ``LEXICAL``·bm25(c) / max bm25; the best chunk of each
  document comes first, then the others, so that the top k spans k documents when it can (the
  evidence of a multi-hop question lies in several).
- Chosen on the dev questions, split in two halves by position: parameters were compared on
  the first half of 2WikiMultihopQA and LiHua-World and the choice checked on the second
  (the README's ppr section has the figures): ``SPECIFICITY`` 0.5 over 1 and 0, d 0.5 over 0.3 and
  0.7, ``FUSION`` 1 over 0.5 and 2, ``CHUNK_SEED_SHARE`` 0.3 over 0 and 0.6, documents first.
- With ``use_weights=False`` every relation weighs 1 (the paper's "-Weights" ablation).

The transition matrix is built with numpy only (CSR arrays) from one read of the graph per
index generation and cached by the open index (see ``EdgeRAG.walk_graph``); a query costs the
seeds' lookups, one batch of embeddings and a push over the part of the graph its mass reaches.
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
from ..store.walk import GraphArrays
from .base import timed
from .graph_reader import GraphReader
from .lexical import ChunkTerms, TermCounts
from .title_index import TitleIndex
from .types import EntityHit, Retrieval, RetrievedChunk

if TYPE_CHECKING:
    from ..store import IndexStore

DAMPING = 0.5
SPECIFICITY = 0.5
TOLERANCE = 1e-5
MAX_ROUNDS = 200
PUSH_DENSE = 0.25  # a local round pushing along over 4 edges a node sums over every node
LOCAL_FROM = 60_000  # nodes from which the walk scans only the nodes its mass reached
FUSION = 1.0
LEXICAL = 0.25
CHUNK_SEEDS = 10
CHUNK_SEED_SHARE = 0.3
NEXT_CHUNK = 1.0
TITLE_LINK = 300.0
TITLE_SEED_SHARE = 0.8
CANDIDATES = 50
DENSE_K = max(CHUNK_SEEDS, CANDIDATES)  # the nearest chunks a question's walk reads
WHOLE_FIRST = 3


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
        """The graph of an open store, with its documents' title links (see ``title_index.py``) and
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

    def __init__(self, graph: GraphReader, walk: Callable[[], WalkGraph] | None = None) -> None:
        self.graph = graph
        self.settings = graph.view.settings
        self.walk = walk or (lambda: WalkGraph.from_store(graph.view.store, self.settings.use_weights))

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
            rank = walk.pagerank(restart(walk, entities, dense, titled))
        with timed(timings, "chunks"):
            lexical = walk.lexical.scores(question) if walk.lexical is not None and not titled else None
            return self.fuse(walk, rank, query, dense, top_k, lexical), entities

    def seed_entities(self, walk: WalkGraph, named: list[int], vectors: np.ndarray,
                      spread: dict[int, int] | None = None) -> dict[int, float]:
        """Entity id → seed weight: match confidence × specificity (see module docstring), for the
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
    """The matched names that are no run of whole words inside another matched name: "Li Hua"
    matched, its "Li" and "Hua" do not seed (in a large collection they are other nodes)."""
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
