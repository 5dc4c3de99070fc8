"""The plain answer stage (``answer_stage = "plain"``): fit the retrieved chunks into the SLM's
window as they are, number them, generate.

Design: docs/design/answer.md
"""

from __future__ import annotations

import time

from .. import prompts
from ..guard import withhold
from ..models.slm import SLM, GenerationConfig
from ..retrieve import Retrieval, RetrievedChunk
from .types import Answer, AnswerStream

CHAT_OVERHEAD_TOKENS = 32  # the chat template's tokens around a prompt (answer.md)


class Answerer:
    """Builds the grounded prompt within the token budget and runs the SLM."""

    def __init__(self, slm: SLM, context_tokens: int, max_new_tokens: int, guard: bool = True,
                 draft_tokens: int = GenerationConfig.draft_tokens) -> None:
        self.slm = slm
        self.context_tokens = context_tokens
        self.guard = guard
        self.config = GenerationConfig(max_new_tokens=max_new_tokens, stop=prompts.ANSWER_STOP,
                                       draft_tokens=draft_tokens)
        self.withheld: list[str] = []

    def prompt(self, question: str, retrieval: Retrieval) -> tuple[str, list[RetrievedChunk]]:
        """The chat prompt and the chunks that fit into it, best first (``withheld``: the
        sentences of theirs kept out as instructions, with ``guard``)."""
        self.withheld = []
        if retrieval.method == "none":
            user = prompts.NO_CONTEXT_USER.format(question=question)
            return self.slm.chat(user, prompts.ANSWER_SYSTEM), []
        used = self._fit(question, retrieval.chunks)
        sources = [(_short(c.source), text) for c, text in used]
        user = prompts.quoted(prompts.answer_user(question, sources), len(self.withheld))
        system = prompts.guarded_system(prompts.ANSWER_SYSTEM, len(self.withheld))
        return self.slm.chat(user, system), [c for c, _ in used]

    def answer(self, question: str, retrieval: Retrieval) -> Answer:
        """Generate the whole answer."""
        prompt, used = self.prompt(question, retrieval)
        result = self.slm.generate(prompt, self.config)
        timings = {**retrieval.timings_ms, "prefill": result.prefill_ms, "decode": result.decode_ms,
                   "prompt_tokens": result.prompt_tokens, "cached_tokens": result.cached_tokens}
        return Answer(result.text.strip(), retrieval.method, used, timings, retrieval,
                      withheld=self.withheld)

    def stream(self, question: str, retrieval: Retrieval, max_new_tokens: int | None = None) -> AnswerStream:
        """Generate the answer as a stream of text pieces (at most ``max_new_tokens``)."""
        prompt, used = self.prompt(question, retrieval)
        answer = Answer("", retrieval.method, used, dict(retrieval.timings_ms), retrieval,
                        withheld=self.withheld)
        pieces = self.slm.stream(prompt, self.config.capped(max_new_tokens))
        return AnswerStream(pieces, answer, time.perf_counter())

    def _fit(self, question: str, chunks: list[RetrievedChunk]) -> list[tuple[RetrievedChunk, str]]:
        # Trim the context, never the question: chunks are added best first while they fit.
        fixed = self.slm.count_tokens(prompts.ANSWER_SYSTEM + question) + CHAT_OVERHEAD_TOKENS
        room = min(self.context_tokens, self.slm.context_tokens - self.config.max_new_tokens - fixed)
        used: list[tuple[RetrievedChunk, str]] = []
        for chunk in chunks:
            text = self._guarded(chunk.text)
            cost = self.slm.count_tokens(text) + 12
            if cost <= room:
                used.append((chunk, text))
                room -= cost
            elif room > 48:
                used.append((chunk, self._truncate(text, room - 12)))
                break
            else:
                break
        return used

    def _guarded(self, text: str) -> str:
        return withhold(text, self.withheld) if self.guard else text

    def _truncate(self, text: str, tokens: int) -> str:
        encoding = self.slm.tokenizer.encode(text, add_special_tokens=False)
        return text[: encoding.offsets[tokens - 1][1]] if len(encoding.ids) > tokens else text


def _short(source: str) -> str:
    return source.rsplit("/", 1)[-1]
