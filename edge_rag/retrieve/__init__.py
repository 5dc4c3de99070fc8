"""The retriever set of §3.2 (eq. 6), created by name: none, vector, local, dual, topology."""

from __future__ import annotations

from ..errors import UnknownMethod
from .base import IndexView, Retriever
from .dual import DualRetriever
from .graph_reader import GraphReader
from .local import LocalRetriever
from .topology import TopologyRetriever
from .types import Retrieval, RetrievedChunk
from .vector import NoRetriever, VectorRetriever

RETRIEVERS: dict[str, type] = {"none": NoRetriever, "vector": VectorRetriever, "local": LocalRetriever,
                               "dual": DualRetriever, "topology": TopologyRetriever}
GRAPH_METHODS = ("local", "dual", "topology")
# Bumped when a change of code (not of settings) changes what the graph methods return.
RETRIEVAL_VERSION = "2"
ALIASES = {"vr": "vector", "naive": "vector", "lr": "local", "dr": "dual", "tr": "topology"}


def make_retriever(method: str, view: IndexView) -> Retriever:
    """The retriever registered under ``method`` (case-insensitive, aliases allowed)."""
    name = ALIASES.get(method.lower(), method.lower())
    if name not in RETRIEVERS:
        known = ", ".join(sorted(RETRIEVERS))
        raise UnknownMethod(f"unknown retrieval method {method!r}; available: {known}")
    if name in GRAPH_METHODS:
        if view.entity_vectors is None or view.relation_vectors is None:
            raise UnknownMethod(f"method {name!r} needs the graph's vector indexes")
        return RETRIEVERS[name](GraphReader(view, view.entity_vectors(), view.relation_vectors()))
    return RETRIEVERS[name](view)


__all__ = ["RETRIEVAL_VERSION", "RETRIEVERS", "IndexView", "Retrieval", "RetrievedChunk", "Retriever",
           "make_retriever"]
