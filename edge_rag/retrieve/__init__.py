"""The retriever set of §3.2, created by name: 'none' and 'vector' now; local, dual, topology next."""

from __future__ import annotations

from ..errors import UnknownMethod
from .base import IndexView, Retriever
from .types import Retrieval, RetrievedChunk
from .vector import NoRetriever, VectorRetriever

RETRIEVERS: dict[str, type] = {"none": NoRetriever, "vector": VectorRetriever}
ALIASES = {"vr": "vector", "naive": "vector"}


def make_retriever(method: str, view: IndexView) -> Retriever:
    """The retriever registered under ``method`` (case-insensitive, aliases allowed)."""
    name = ALIASES.get(method.lower(), method.lower())
    if name not in RETRIEVERS:
        known = ", ".join(sorted(RETRIEVERS))
        raise UnknownMethod(f"unknown retrieval method {method!r}; available: {known}")
    return RETRIEVERS[name](view)


__all__ = ["RETRIEVERS", "IndexView", "Retrieval", "RetrievedChunk", "Retriever", "make_retriever"]
