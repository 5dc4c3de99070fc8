"""Dual retrieval (DR, eqs. 12–17): low-level keywords find entities, high-level ones relations.

Interpretations: E_DR (eq. 13) joins the nearest entities of each low-level keyword (the whole
question when there is none); R_DR (eq. 14) is the structural relations whose vectors are
nearest to the high-level keywords taken together, kept when their cosine reaches
``RELATION_MIN_COSINE`` — so n of eq. 16 counts the relations that really match, and the other
k − n places go to the best-scored similar edges around E_DR.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .base import timed
from .graph_reader import Entity, GraphReader, Relation
from .keywords import Keywords, rule_keywords, slm_keywords
from .local import describe, rank_structural
from .types import Retrieval

RELATION_MIN_COSINE = 0.3  # cosine from which a relation matches the high-level keywords (retrievers.md)


class DualRetriever:
    """C_DR = G_index(E_DR, R*_DR) with R*_DR = R_DR^str ∪ Top-(k−n)(R^sim)."""

    name = "dual"

    def __init__(self, graph: GraphReader) -> None:
        self.graph = graph
        self.settings = graph.view.settings

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """Keywords, then entities and relations for them, then their chunks."""
        result = Retrieval(question, self.name)
        embedder, k = self.graph.view.embedder, self.settings.graph_relations
        with timed(result.timings_ms, "keywords"):
            keywords = query_keywords(self.graph, question)
        with timed(result.timings_ms, "embed"):
            low = embedder.embed(keywords.low or [question])
            high = embedder.embed_one(", ".join(keywords.high) or question)
            query = embedder.embed_one(question)
        with timed(result.timings_ms, "entities"):
            entities = nearest_entities(self.graph, low, self.settings.graph_entities)
        with timed(result.timings_ms, "relations"):
            found = self.graph.search_relations(high, k)
            matching = [r for r, cos in found if cos >= RELATION_MIN_COSINE]
            structural = rank_structural(self.graph, high, list(self.graph.relations(matching).values()),
                                         self.settings.use_weights)
            similar = [r for r in self.graph.one_hop(e.id for e in entities) if r.kind == "similar"]
            chosen = top_up(structural, similar, k, self.settings.use_weights)
        with timed(result.timings_ms, "chunks"):
            result.chunks = self.graph.chunks(query, {e.id: e.score for e in entities},
                                              {r.id: r.rank for r in chosen},
                                              [r for r in chosen if r.kind == "similar"], top_k)
        return describe(result, self.graph, entities, chosen)


def query_keywords(graph: GraphReader, question: str) -> Keywords:
    """K(q) by the configured extractor (``keyword_extractor``: rules or slm)."""
    if graph.view.settings.keyword_extractor == "slm" and graph.view.slm is not None:
        return slm_keywords(graph.view.slm(), question)
    return rule_keywords(question, graph.name_matcher())


def nearest_entities(graph: GraphReader, vectors: np.ndarray, limit: int) -> list[Entity]:
    """The best entities over several query vectors (each entity keeps its best score)."""
    best: dict[int, Entity] = {}
    for vector in vectors:
        for entity in graph.search_entities(vector, limit):
            if entity.id not in best or entity.score > best[entity.id].score:
                best[entity.id] = entity
    return sorted(best.values(), key=lambda e: (-e.score, e.id))[:limit]


def top_up(structural: list[Relation], similar: list[Relation], k: int, use_weights: bool) -> list[Relation]:
    """Eq. 16: R_DR^str ∪ Top-(k−n)(R^sim), similar edges ranked by their score s_r."""
    room = max(0, k - len(structural))
    best = sorted(similar, key=lambda r: (-r.unified_weight(use_weights), r.id))[:room]
    return structural + [replace(r, rank=r.unified_weight(use_weights)) for r in best]
