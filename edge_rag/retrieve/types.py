"""What every retrieval method returns.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from ..plan import Plan


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk chosen as context, with where it came from and how well it matched."""

    chunk_id: int
    doc_id: str
    source: str
    text: str
    score: float


class EntityHit(TypedDict):
    """A graph node a graph method chose for a question, JSON-ready."""

    name: str
    type: str
    score: float


# A relation as a graph method returns it: ``graph_reader.Relation``'s fields as JSON, with the names
# of its two ends (``source``, ``target``); its record type is ``Relation``, this is its JSON form.
RelationHit = dict[str, Any]


@dataclass
class Retrieval:
    """The context one method found for one question, with per-stage timings."""

    question: str
    method: str
    chunks: list[RetrievedChunk] = field(default_factory=list)
    entities: list[EntityHit] = field(default_factory=list)
    relations: list[RelationHit] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    plan: Plan | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (the CLI's ``--json`` output)."""
        out = asdict(self)
        out["plan"] = self.plan.to_dict() if self.plan is not None else None
        return out
