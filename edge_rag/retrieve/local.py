"""Local retrieval (LR, eqs. 8–11): query → nearest entities → their one-hop relations → chunks.

Interpretations: eq. 10 takes the top ⌊αk⌋ similar and ⌈(1−α)k⌉ structural relations; "top"
ranks a similar edge by its score s_r and a structural one by ω_r + cos(q, v_r) (its weight plus
how well its text matches the query; with ``use_weights=False`` by the cosine alone). When
fewer similar edges exist than their quota, the unused places go to structural relations —
otherwise a graph with few aliases would give LR almost no relations.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .base import timed
from .graph_reader import Entity, GraphReader, Relation
from .types import EntityHit, Retrieval


class LocalRetriever:
    """C_LR = G_index(E_LR, R*_LR)."""

    name = "local"

    def __init__(self, graph: GraphReader) -> None:
        self.graph = graph
        self.settings = graph.view.settings

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """Entities near the question, their best relations, and the chunks they lead to."""
        result = Retrieval(question, self.name)
        with timed(result.timings_ms, "embed"):
            query = self.graph.view.embedder.embed_one(question)
        with timed(result.timings_ms, "entities"):
            entities = self.graph.search_entities(query, self.settings.graph_entities)
        with timed(result.timings_ms, "relations"):
            chosen = select_relations(self.graph, query, self.graph.one_hop(e.id for e in entities),
                                      self.settings.graph_relations, self.settings.lr_alpha,
                                      self.settings.use_weights)
        with timed(result.timings_ms, "chunks"):
            result.chunks = self.graph.chunks(query, {e.id: e.score for e in entities},
                                              {r.id: r.rank for r in chosen},
                                              [r for r in chosen if r.kind == "similar"], top_k)
        return describe(result, self.graph, entities, chosen)


def select_relations(graph: GraphReader, query: np.ndarray, relations: list[Relation], k: int,
                     alpha: float, use_weights: bool) -> list[Relation]:
    """Eq. 10: the top ⌊αk⌋ similar and ⌈(1−α)k⌉ structural relations (see module docstring)."""
    similar = sorted((r for r in relations if r.kind == "similar"),
                     key=lambda r: (-r.unified_weight(use_weights), r.id))[: math.floor(alpha * k)]
    quota = math.ceil((1 - alpha) * k) + math.floor(alpha * k) - len(similar)
    structural = rank_structural(graph, query, [r for r in relations if r.kind == "structural"],
                                 use_weights)[:quota]
    ranked_similar = [_ranked(r, r.unified_weight(use_weights)) for r in similar]
    return ranked_similar + structural


def rank_structural(graph: GraphReader, query: np.ndarray, relations: list[Relation],
                    use_weights: bool) -> list[Relation]:
    """Structural relations by ω_r + cos(q, v_r), best first (cosine alone without weights)."""
    cosine = graph.relation_similarity(query, [r.id for r in relations])
    ranked = [_ranked(r, ((r.weight or 0.0) if use_weights else 0.0) + cosine.get(r.id, 0.0))
              for r in relations]
    return sorted(ranked, key=lambda r: (-r.rank, r.id))


def describe(result: Retrieval, graph: GraphReader, entities: list[Entity],
             relations: list[Relation]) -> Retrieval:
    """Fill a retrieval's entities and relations (JSON-ready, with names)."""
    names = {e.id: e.name for e in entities}
    names.update((e.id, e.name) for e in graph.entities(
        i for r in relations for i in (r.source_id, r.target_id) if i not in names).values())
    result.entities = [EntityHit(name=e.name, type=e.type, score=round(e.score, 6)) for e in entities]
    result.relations = [r.to_dict(names) for r in relations]
    return result


def _ranked(relation: Relation, rank: float) -> Relation:
    return replace(relation, rank=float(rank))
