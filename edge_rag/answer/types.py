"""What an answer stage returns: a whole ``Answer``, or an ``AnswerStream`` of its pieces.

Design: docs/design/answer.md
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..models.slm import GenerationConfig
from ..retrieve import Retrieval, RetrievedChunk


@dataclass
class Answer:
    """An answer with the sources it was given and where the time went."""

    text: str
    method: str
    sources: list[RetrievedChunk] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    retrieval: Retrieval | None = field(default=None, repr=False)
    details: dict[str, Any] = field(default_factory=dict, repr=False)
    withheld: list[str] = field(default_factory=list)
    hops: list[dict[str, str]] = field(default_factory=list)  # a bridge question's links, asked first
    # Per cited source: n, doc_id, source, line (among the document's non-blank lines), text.
    citations: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's ``ask --json`` shape."""
        return {
            "answer": self.text,
            "method": self.method,
            "sources": [{"doc_id": c.doc_id, "source": c.source, "chunk_id": c.chunk_id}
                        for c in self.sources],
            "timings_ms": {k: round(v, 2) for k, v in self.timings.items()},
            "plan": self.retrieval.plan.to_dict() if self.retrieval and self.retrieval.plan else None,
            "withheld": self.withheld,
            "hops": self.hops,
            "citations": self.citations,
        }


class AnswerStream:
    """Iterate to receive the answer as text pieces; ``.answer`` is complete afterwards."""

    def __init__(self, pieces: Iterator[str], answer: Answer, started: float) -> None:
        self._pieces = pieces
        self.answer = answer
        self._started = started

    @classmethod
    def whole(cls, answer: Answer) -> AnswerStream:
        """A stream of an answer already complete: its text in one piece."""
        text, answer.text = answer.text, ""
        return cls(iter([text]), answer, time.perf_counter())

    def __iter__(self) -> Iterator[str]:
        first = True
        for piece in self._pieces:
            if first:
                self.answer.timings["first_token"] = (time.perf_counter() - self._started) * 1000
                first = False
            self.answer.text += piece
            yield piece
        self.answer.text = self.answer.text.strip()
        self.answer.timings["generate"] = (time.perf_counter() - self._started) * 1000


class AnswerStage(Protocol):
    """Answers a question from a retrieval, whole or as a stream; ``config`` is its generation
    setting, which ``stream`` may cap for one answer (a server request's ``max_tokens``)."""

    config: GenerationConfig

    def answer(self, question: str, retrieval: Retrieval) -> Answer:
        """Generate the whole answer."""
        ...

    def stream(self, question: str, retrieval: Retrieval, max_new_tokens: int | None = None) -> AnswerStream:
        """Generate the answer as a stream of text pieces, at most ``max_new_tokens`` of them
        when given and below ``config``'s."""
        ...
