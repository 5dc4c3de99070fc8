"""The retriever set of §3.2 (eq. 6), created by name: none, vector, local, dual, topology, and,
beyond the paper, ppr (personalized PageRank over the same graph, ``ppr.py``) and titles (the
documents a question names by title, ``titles.py``).

Design: docs/design/retrievers.md, docs/design/ppr.md
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnknownMethod
from .base import IndexView, Retriever
from .dual import DualRetriever
from .graph_reader import GraphReader
from .local import LocalRetriever
from .ppr import DENSE_K, Memory, PPRRetriever, WalkGraph
from .titles import TitlesRetriever
from .topology import TopologyRetriever
from .types import Retrieval, RetrievedChunk
from .vector import NoRetriever, VectorRetriever

RETRIEVERS: dict[str, type] = {"none": NoRetriever, "vector": VectorRetriever, "local": LocalRetriever,
                               "dual": DualRetriever, "topology": TopologyRetriever, "ppr": PPRRetriever,
                               "titles": TitlesRetriever}
GRAPH_METHODS = ("local", "dual", "topology", "ppr")
# Bumped when a change of code (not of settings) changes what the graph methods return.
RETRIEVAL_VERSION = "8"
ALIASES = {"vr": "vector", "naive": "vector", "lr": "local", "dr": "dual", "tr": "topology",
           "pagerank": "ppr", "named": "titles"}


def make_retriever(method: str, view: IndexView, walk: Callable[[], WalkGraph] | None = None,
                   memory: Memory | None = None) -> Retriever:
    """The retriever registered under ``method`` (case-insensitive, aliases allowed); ``walk``
    gives ``ppr`` the index's random-walk matrix (built from the store when None), ``memory``
    what a follow-up's previous turn named and cited (``ppr`` restarts there too)."""
    name = ALIASES.get(method.lower(), method.lower())
    if name not in RETRIEVERS:
        known = ", ".join(sorted(RETRIEVERS))
        raise UnknownMethod(f"unknown retrieval method {method!r}; available: {known}")
    if name in GRAPH_METHODS:
        if view.entity_vectors is None or view.relation_vectors is None:
            raise UnknownMethod(f"method {name!r} needs the graph's vector indexes")
        graph = GraphReader(view, view.entity_vectors, view.relation_vectors)
        return PPRRetriever(graph, walk, memory) if name == "ppr" else RETRIEVERS[name](graph)
    return RETRIEVERS[name](view)


__all__ = ["DENSE_K", "RETRIEVAL_VERSION", "RETRIEVERS", "IndexView", "Memory", "Retrieval", "RetrievedChunk",
           "Retriever", "WalkGraph", "make_retriever"]
