"""Vector retrieval (VR, eq. 7): nearest chunks to the query embedding, the NaiveRAG baseline.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

from ..store import ChunkRecord
from .base import IndexView, timed
from .types import Retrieval, RetrievedChunk

# Fetch a few extra neighbours: a chunk deleted by another process may still be in a view
# (retrievers.md).
OVERFETCH = 4


class VectorRetriever:
    """C_VR = V(E(q)): rank chunks by cosine similarity to the query."""

    name = "vector"

    def __init__(self, view: IndexView) -> None:
        self.view = view

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """The ``top_k`` chunks closest to the question."""
        result = Retrieval(question, self.name)
        with timed(result.timings_ms, "embed"):
            query = self.view.embedder.embed_one(question)
        with timed(result.timings_ms, "search"):
            keys, scores = self.view.chunk_vectors.search(query, top_k + OVERFETCH)
        with timed(result.timings_ms, "fetch"):
            found = self.view.store.chunks([int(k) for k in keys])
        ranked = [(found[int(k)], float(s)) for k, s in zip(keys, scores) if int(k) in found]
        result.chunks = [_retrieved(chunk, score) for chunk, score in ranked[:top_k]]
        return result


class NoRetriever:
    """Method A of the planner: no retrieval, the SLM answers alone."""

    name = "none"

    def __init__(self, view: IndexView) -> None:
        self.view = view

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """An empty context."""
        return Retrieval(question, self.name)


def _retrieved(chunk: ChunkRecord, score: float) -> RetrievedChunk:
    return RetrievedChunk(chunk.id, chunk.doc_id, chunk.source, chunk.text, round(score, 6))
