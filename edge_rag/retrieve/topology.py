"""Topology-enhanced retrieval (TR, eqs. 18–29): anchors, k-hop paths, S = S_R + S_E, top-k.

Interpretations of the paper, where it leaves room (docs/design/retrievers.md gives each one):
E^e (eq. 19) is the nearest entity of each low-level term; E^a (eq. 20) the answer-typed entities
*within the k-hop neighbourhood* of E^e, not corpus-wide; each hop keeps the ``BEAM`` frontier
entities with the best path weight. S_R: ω_r for a structural relation touching E^e (eq. 22), s_r
times the mean w(r') of the tail's (else the head's) other relations for a similar one (eq. 23),
the best product of w along a path further out (eq. 24). S_E (eq. 26) counts r's endpoints among
the anchors plus those among the answer-typed entities (0–2: an anchor is never both). C_TR
(eqs. 28–29) takes the chunks of the chosen relations and of all their entities, a reached
entity with ``REACHED_SHARE`` of its best relation's rank. With ``use_weights=False`` every w(r)
is 1, as the paper's "-Weights" ablation.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

from dataclasses import replace

from .base import timed
from .dual import nearest_entities, query_keywords
from .graph_reader import GraphReader, Relation
from .local import describe
from .types import Retrieval

BEAM = 32  # frontier entities kept per hop of the expansion
REACHED_SHARE = 0.3  # a reached entity's support: this share of its best relation's rank (retrievers.md)


class TopologyRetriever:
    """C_TR = G_index(Top-k(E_TR, R_TR; S_R + S_E))."""

    name = "topology"

    def __init__(self, graph: GraphReader) -> None:
        self.graph = graph
        self.settings = graph.view.settings

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """Anchor entities, scored paths around them, and the chunks of the best relations."""
        result = Retrieval(question, self.name)
        embedder = self.graph.view.embedder
        with timed(result.timings_ms, "keywords"):
            keywords = query_keywords(self.graph, question)
        with timed(result.timings_ms, "embed"):
            query = embedder.embed_one(question)
            terms = embedder.embed(keywords.low) if keywords.low else query[None, :]
        with timed(result.timings_ms, "entities"):
            anchors = nearest_entities(self.graph, terms, max(1, len(terms)))
        with timed(result.timings_ms, "paths"):
            chosen = score_relations(self.graph, {e.id for e in anchors}, keywords.answer_types,
                                     self.settings.tr_hops, self.settings.use_weights,
                                     self.settings.graph_relations)
        with timed(result.timings_ms, "chunks"):
            entity_scores = reached_entities(chosen, {e.id: e.score for e in anchors})
            result.chunks = self.graph.chunks(query, entity_scores, {r.id: r.rank for r in chosen},
                                              [r for r in chosen if r.kind == "similar"], top_k)
        return describe(result, self.graph, anchors, chosen)


def reached_entities(chosen: list[Relation], anchors: dict[int, float]) -> dict[int, float]:
    """E'_TR (eq. 28): the anchors with their scores, and every endpoint of a chosen relation,
    scored ``REACHED_SHARE`` times the best rank of the chosen relations that reach it."""
    out = dict(anchors)
    for relation in chosen:
        for end in (relation.source_id, relation.target_id):
            if end not in anchors:
                out[end] = max(out.get(end, 0.0), REACHED_SHARE * relation.rank)
    return out


def score_relations(graph: GraphReader, anchors: set[int], types: tuple[str, ...], hops: int,
                    use_weights: bool, top: int | None = None) -> list[Relation]:
    """Relations within ``hops`` of the anchors with rank S(r) = S_R(r) + S_E(r), best first
    (eqs. 27–28: the ``top`` best, or all)."""
    relations, path, direct = expand(graph, anchors, hops, use_weights)
    endpoints = {i for r in relations.values() for i in (r.source_id, r.target_id)}
    answers = {e.id for e in graph.entities(endpoints).values() if e.type in types} - anchors
    ranks = {}
    for relation in relations.values():
        ends = (relation.source_id, relation.target_id)
        s_r = relation_score(graph, relation, anchors, use_weights) if relation.id in direct \
            else path[relation.id]
        ranks[relation.id] = s_r + sum(i in anchors for i in ends) + sum(i in answers for i in ends)
    best = sorted(ranks, key=lambda i: (-ranks[i], i))[:top]
    return [replace(relations[i], rank=ranks[i]) for i in best]


def expand(graph: GraphReader, anchors: set[int], hops: int,
           use_weights: bool) -> tuple[dict[int, Relation], dict[int, float], set[int]]:
    """R_TR (eq. 21): relations within ``hops`` of the anchors, the best path product of w to
    each (eq. 24), and the ids of the relations that touch an anchor."""
    first = graph.one_hop(anchors)
    relations = {r.id: r for r in first}
    direct = set(relations)
    path = {r.id: r.unified_weight(use_weights) for r in first}
    reach = _reach(first, anchors, path)
    seen = set(anchors)
    for _ in range(hops - 1):
        frontier = set(sorted(set(reach) - seen, key=lambda e: (-reach[e], e))[:BEAM])
        seen |= frontier
        step: dict[int, float] = {}
        for relation in graph.one_hop(frontier):
            if relation.id in direct:
                continue
            for end in {relation.source_id, relation.target_id} & frontier:
                value = reach[end] * relation.unified_weight(use_weights)
                if value > path.get(relation.id, 0.0):
                    relations[relation.id], path[relation.id] = relation, value
                other = relation.other(end)
                step[other] = max(step.get(other, 0.0), value)
        reach.update({e: v for e, v in step.items() if v > reach.get(e, 0.0)})
    return relations, path, direct


def relation_score(graph: GraphReader, relation: Relation, anchors: set[int], use_weights: bool) -> float:
    """S_R of a relation touching an anchor: eq. 22 (structural) or eq. 23 (similar)."""
    if relation.kind == "structural" or not use_weights:
        return relation.unified_weight(use_weights)
    head = relation.source_id if relation.source_id in anchors else relation.target_id
    tail = relation.other(head)
    for end in (tail, head):
        others = [r for r in graph.one_hop([end]) if r.id != relation.id]
        if others:
            return relation.unified_weight() * sum(r.unified_weight() for r in others) / len(others)
    return relation.unified_weight()


def _reach(relations: list[Relation], anchors: set[int], path: dict[int, float]) -> dict[int, float]:
    reach = {a: 1.0 for a in anchors}
    for relation in relations:
        for end in (relation.source_id, relation.target_id):
            if end not in anchors:
                reach[end] = max(reach.get(end, 0.0), path[relation.id])
    return reach
