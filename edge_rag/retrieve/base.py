"""What a retriever needs from the index, and the interface every method implements.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..config import Settings
from ..models.embedder import Embedder
from ..store import IndexStore, VectorIndex
from .types import Retrieval

if TYPE_CHECKING:
    from ..lexicon import NameMatcher
    from ..models.slm import SLM
    from ..questions import TitleFinder


@dataclass
class IndexView:
    """The parts of an open index that retrievers read; graph vectors, the SLM, the entity
    names and the documents' titles load lazily (``ppr``'s matrix is given to ``make_retriever``)."""

    settings: Settings
    store: IndexStore
    embedder: Embedder
    chunk_vectors: VectorIndex
    entity_vectors: Callable[[], VectorIndex] | None = None
    relation_vectors: Callable[[], VectorIndex] | None = None
    slm: Callable[[], SLM] | None = None
    names: Callable[[], NameMatcher] | None = None
    titles: Callable[[], TitleFinder | None] | None = None


class Retriever(Protocol):
    """One retrieval method (VR, LR, DR, TR)."""

    name: str

    def retrieve(self, question: str, top_k: int) -> Retrieval:
        """Context for a question."""
        ...


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Add the wall time of a block to ``timings[stage]`` in milliseconds."""
    start = time.perf_counter()
    yield
    timings[stage] = timings.get(stage, 0.0) + (time.perf_counter() - start) * 1000.0
