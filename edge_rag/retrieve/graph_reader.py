"""What the graph retrievers share: entity and relation lookups, and G_index (graph → chunks).

G_index(E, R) is the set of chunks linked to the entities E (``chunk_entities``) and the
relations R (``relation_chunks``; a ``similar`` edge has no chunks of its own and brings its two
entities' chunks). The paper leaves their order open; here a chunk is ranked by its graph
support — the summed scores of the chosen entities and relations that link to it, divided by
the largest such sum, times ``graph_support_weight`` — plus its cosine similarity to the query.
An entity or relation linked to n of the candidate chunks gives each of them
score / n^``graph_support_spread``: a pair that talks in every conversation says little about
any one of them, a rare relation says much about its few chunks.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..lexicon import NameMatcher
from ..store import VectorIndex
from ..store.graph_tables import EntityRow, RelationRow
from .base import IndexView
from .types import RelationHit, RetrievedChunk


@dataclass(frozen=True)
class Entity:
    """A graph node as retrieval returns it."""

    id: int
    name: str
    type: str
    score: float = 0.0

    @classmethod
    def from_row(cls, row: EntityRow) -> Entity:
        """The node as the store read it (no score yet)."""
        return cls(row.id, row.name, row.type)


@dataclass(frozen=True)
class Relation:
    """A graph edge: ``weight`` (ω_r) for structural, ``score`` (s_r) for similar edges."""

    id: int
    kind: str
    source_id: int
    target_id: int
    weight: float | None
    score: float | None
    keywords: str = ""
    description: str = ""
    rank: float = 0.0

    def other(self, entity_id: int) -> int:
        """The endpoint that is not ``entity_id``."""
        return self.target_id if self.source_id == entity_id else self.source_id

    def unified_weight(self, use_weights: bool = True) -> float:
        """w(r) of eq. 25: ω_r for structural, s_r for similar; 1 when weights are ablated."""
        if not use_weights:
            return 1.0
        value = self.weight if self.kind == "structural" else self.score
        assert value is not None  # the schema's CHECK: structural rows carry a weight, similar a score
        return float(value)

    @classmethod
    def from_row(cls, row: RelationRow) -> Relation:
        """The relation as the store read it (no rank yet)."""
        return cls(**row._asdict())

    def to_dict(self, names: dict[int, str]) -> RelationHit:
        """JSON-ready form with entity names."""
        data = asdict(self)
        data.update(source=names.get(self.source_id, ""), target=names.get(self.target_id, ""),
                    rank=round(self.rank, 6))
        return data


class GraphReader:
    """Read-only access to the graph of an open index."""

    def __init__(self, view: IndexView, entity_vectors: Callable[[], VectorIndex],
                 relation_vectors: Callable[[], VectorIndex]) -> None:
        self.view = view
        self.tables = view.store.graph
        self._entity_vectors = entity_vectors
        self._relation_vectors = relation_vectors

    @property
    def entity_vectors(self) -> VectorIndex:
        """The entity-name vectors, opened on first use."""
        return self._entity_vectors()

    @property
    def relation_vectors(self) -> VectorIndex:
        """The relation vectors, opened on first use: only ``dual`` searches them, and a ``ppr``
        process need not hold their exact matrix."""
        return self._relation_vectors()

    def search_entities(self, vector: np.ndarray, k: int) -> list[Entity]:
        """Nodes whose names are nearest to ``vector`` (eq. 8's V(·) over entities), best first."""
        keys, sims = self.entity_vectors.search(vector, 4 * k)
        best: dict[int, float] = {}
        for entity_id, sim in zip(self._entity_of_keys([int(x) for x in keys]), sims):
            if entity_id is not None and entity_id not in best:
                best[entity_id] = float(sim)
        chosen = list(best.items())[:k]
        found = self.entities([e for e, _ in chosen])
        return [Entity(e, found[e].name, found[e].type, s) for e, s in chosen if e in found]

    def search_relations(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(relation id, cosine) of the structural relations nearest to ``vector``."""
        keys, sims = self.relation_vectors.search(vector, k)
        return [(int(key), float(sim)) for key, sim in zip(keys, sims)]

    def relation_similarity(self, vector: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        """cos(q, v_r) of structural relations that have a vector."""
        return self._similarity("relation", vector, list(ids))

    def name_matcher(self) -> NameMatcher:
        """Every entity name (nodes and their aliases' spellings), shared by the open index."""
        return self.view.names() if self.view.names else NameMatcher(self.tables.spellings())

    def entities(self, ids: Iterable[int]) -> dict[int, Entity]:
        """Nodes by id."""
        return {row.id: Entity.from_row(row) for row in self.tables.entities(ids)}

    def relations(self, ids: Iterable[int]) -> dict[int, Relation]:
        """Relations by id."""
        return {row.id: Relation.from_row(row) for row in self.tables.relations(ids)}

    def one_hop(self, entity_ids: Iterable[int]) -> list[Relation]:
        """Every relation touching one of the entities (eq. 9's G_1-hop)."""
        return [Relation.from_row(row) for row in self.tables.relations_touching(entity_ids)]

    def chunks(self, question_vector: np.ndarray, entity_scores: dict[int, float],
               relation_scores: dict[int, float], similar: Sequence[Relation],
               top_k: int) -> list[RetrievedChunk]:
        """G_index(E, R): chunks linked to the chosen entities and relations, ranked (see module)."""
        support: dict[int, float] = defaultdict(float)
        share = self.view.settings.graph_support_spread
        ends = {e: relation_scores.get(r.id, 0.0) for r in similar for e in (r.source_id, r.target_id)}
        for links_of, scores in ((self.tables.chunks_of_entities, entity_scores),
                                 (self.tables.chunks_of_relations, relation_scores),
                                 (self.tables.chunks_of_entities, ends)):
            links = links_of(scores)
            spread = Counter(item for _, item in links)
            for chunk_id, item in links:
                support[chunk_id] += scores[item] / spread[item] ** share
        return self._rank(question_vector, support, top_k)

    def _rank(self, question_vector: np.ndarray, support: dict[int, float],
              top_k: int) -> list[RetrievedChunk]:
        if not support:
            return []
        ids = sorted(support)
        top = max(support.values()) or 1.0
        beta = self.view.settings.graph_support_weight
        similarity = self._similarity("chunk", question_vector, ids)
        scored = sorted(((beta * support[c] / top + similarity.get(c, 0.0), c) for c in ids), reverse=True)
        records = self.view.store.chunks([c for _, c in scored[: top_k]])
        return [RetrievedChunk(c, records[c].doc_id, records[c].source, records[c].text, round(s, 6))
                for s, c in scored[:top_k] if c in records]

    def _similarity(self, kind: str, vector: np.ndarray, ids: list[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        for found, matrix in self.view.store.vectors_by_id(kind, ids):
            out.update(zip(found, (matrix.astype(np.float32) @ vector.astype(np.float32)).tolist()))
        return out

    def _entity_of_keys(self, key_ids: list[int]) -> list[int | None]:
        found = self.tables.entity_of_key_ids(key_ids)
        return [found.get(k) for k in key_ids]
