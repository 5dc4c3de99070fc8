"""Grounded answering: fit retrieved chunks into the SLM's window, number them, generate."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from . import prompts
from .models.slm import SLM, GenerationConfig
from .retrieve import Retrieval, RetrievedChunk

CHAT_OVERHEAD_TOKENS = 32


@dataclass
class Answer:
    """An answer with the sources it was given and where the time went."""

    text: str
    method: str
    sources: list[RetrievedChunk] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    retrieval: Retrieval | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's ``ask --json`` shape."""
        return {
            "answer": self.text,
            "method": self.method,
            "sources": [{"doc_id": c.doc_id, "source": c.source, "chunk_id": c.chunk_id}
                        for c in self.sources],
            "timings_ms": {k: round(v, 2) for k, v in self.timings.items()},
            "plan": asdict(self.retrieval.plan) if self.retrieval and self.retrieval.plan else None,
        }


class AnswerStream:
    """Iterate to receive the answer as text pieces; ``.answer`` is complete afterwards."""

    def __init__(self, pieces: Iterator[str], answer: Answer, started: float) -> None:
        self._pieces = pieces
        self.answer = answer
        self._started = started

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


class Answerer:
    """Builds the grounded prompt within the token budget and runs the SLM."""

    def __init__(self, slm: SLM, context_tokens: int, max_new_tokens: int) -> None:
        self.slm = slm
        self.context_tokens = context_tokens
        self.config = GenerationConfig(max_new_tokens=max_new_tokens, stop=("<|im_end|>",))

    def prompt(self, question: str, retrieval: Retrieval) -> tuple[str, list[RetrievedChunk]]:
        """The chat prompt and the chunks that fit into it, best first."""
        if retrieval.method == "none":
            user = prompts.NO_CONTEXT_USER.format(question=question)
            return self.slm.chat(user, prompts.ANSWER_SYSTEM), []
        used = self._fit(question, retrieval.chunks)
        sources = [(_short(c.source), text) for c, text in used]
        user = prompts.answer_user(question, sources)
        return self.slm.chat(user, prompts.ANSWER_SYSTEM), [c for c, _ in used]

    def answer(self, question: str, retrieval: Retrieval) -> Answer:
        """Generate the whole answer."""
        prompt, used = self.prompt(question, retrieval)
        result = self.slm.generate(prompt, self.config)
        timings = {**retrieval.timings_ms, "prefill": result.prefill_ms, "decode": result.decode_ms}
        return Answer(result.text.strip(), retrieval.method, used, timings, retrieval)

    def stream(self, question: str, retrieval: Retrieval) -> AnswerStream:
        """Generate the answer as a stream of text pieces."""
        prompt, used = self.prompt(question, retrieval)
        answer = Answer("", retrieval.method, used, dict(retrieval.timings_ms), retrieval)
        return AnswerStream(self.slm.stream(prompt, self.config), answer, time.perf_counter())

    def _fit(self, question: str, chunks: list[RetrievedChunk]) -> list[tuple[RetrievedChunk, str]]:
        # Trim the context, never the question: chunks are added best first while they fit.
        fixed = self.slm.count_tokens(prompts.ANSWER_SYSTEM + question) + CHAT_OVERHEAD_TOKENS
        room = min(self.context_tokens, self.slm.context_tokens - self.config.max_new_tokens - fixed)
        used: list[tuple[RetrievedChunk, str]] = []
        for chunk in chunks:
            cost = self.slm.count_tokens(chunk.text) + 12
            if cost <= room:
                used.append((chunk, chunk.text))
                room -= cost
            elif room > 48:
                used.append((chunk, self._truncate(chunk.text, room - 12)))
                break
            else:
                break
        return used

    def _truncate(self, text: str, tokens: int) -> str:
        encoding = self.slm.tokenizer.encode(text, add_special_tokens=False)
        return text[: encoding.offsets[tokens - 1][1]] if len(encoding.ids) > tokens else text


def _short(source: str) -> str:
    return source.rsplit("/", 1)[-1]
