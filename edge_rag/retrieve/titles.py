"""Named documents (``titles``, beyond the paper): the documents a question names by title first.

A question that compares documents it names by title — "Which film came out first, X or Y?",
"Are X and Y from the same country?" — asks about those documents, not about what they link
to. So ``titles`` gives their first chunks, best cosine first, then the nearest chunks to the
question, one chunk per document first (``ppr.documents_first``). No seeds, no walk, no BM25:
the bridge passages ``ppr``'s walk adds are not asked for. Where the question names no title (or
the corpus has none) it is vector search with one chunk per document first. ``auto`` routes a
question here (label G, ``plan``) when it names two or more titles and no relation noun
(``questions.compares_titles``).

Design: docs/design/retrievers.md
"""

from __future__ import annotations

import numpy as np

from ..questions import titled_chunks
from .base import IndexView, timed
from .ppr import DENSE_K, documents_first, ranked
from .types import Retrieval


class TitlesRetriever:
    """The documents the question names by title, best cosine first, then the nearest chunks."""

    name = "titles"

    def __init__(self, view: IndexView) -> None:
        self.view = view

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """The named documents' first chunks, then the nearest chunks (one per document first)."""
        result, view = Retrieval(question, self.name), self.view
        with timed(result.timings_ms, "titles"):
            named = titled_chunks(question, view.titles) if view.titles is not None else []
        with timed(result.timings_ms, "embed"):
            query = view.embedder.embed_one(question)
        with timed(result.timings_ms, "search"):
            keys, sims = view.chunk_vectors.search(query, DENSE_K)
        with timed(result.timings_ms, "chunks"):
            vectors = view.store.walk.chunk_vectors(named)
            first = {c: float(v.astype(np.float32) @ query) for c, v in vectors.items()}
            nearest = {int(k): float(s) for k, s in zip(keys, sims) if int(k) not in first}
            chunks = ranked(view.store, first) + ranked(view.store, nearest)
        result.chunks = documents_first(chunks)[:top_k]
        return result
