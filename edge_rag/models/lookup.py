"""Prompt-lookup decoding: draft the next tokens by copying from the prompt, check them in one call.

Beyond the paper. A grounded answer copies much of its text from its evidence: names, times,
quoted phrases. :class:`PromptLookup` keeps, for every n-gram of 2 and 3 tokens, where it last
occurred, and drafts up to ``draft`` tokens from its latest earlier occurrence (the longer n-gram
first). :class:`DraftedSteps` runs the chosen token and its draft through the GQA graph in one
call (:meth:`~.decoder.GqaDecoder.check`), which returns a distribution after each of them; the
generation loop chooses from those as it would from single steps, and at the first difference
the cache forgets the rest of the draft. The text is therefore the one token-by-token greedy
decoding chooses from the same model (with or without a mask or constraint), except that a
several-token call rounds differently in the last float digits, so at a near tie of two tokens
the choice may differ, as it may after a reused prompt prefix. What it gains depends on the
machine's kernels and the graph's. Design: docs/design/models.md
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .decoder import GqaDecoder

NGRAMS = (3, 2)  # longest first: a longer match predicts its continuation better (models.md)


class PromptLookup:
    """Where each recent n-gram of a token sequence occurred last, to draft its continuation."""

    def __init__(self, tokens: Sequence[int], draft: int = 3) -> None:
        self.tokens: list[int] = []
        self.draft_tokens = draft
        self._seen: dict[tuple[int, ...], int] = {}
        for token in tokens:
            self.append(token)

    def append(self, token: int) -> None:
        """Extend the sequence; the n-grams that end just before ``token`` now point at it."""
        end = len(self.tokens)
        self.tokens.append(int(token))
        for n in NGRAMS:
            if end >= n:
                self._seen[tuple(self.tokens[end - n:end])] = end

    def draft(self, limit: int | None = None) -> list[int]:
        """Up to ``draft`` (and ``limit``) tokens that followed the sequence's last n-gram when
        it occurred before; empty when it never did."""
        count = min(self.draft_tokens, self.draft_tokens if limit is None else limit)
        for n in NGRAMS:
            start = self._seen.get(tuple(self.tokens[-n:])) if len(self.tokens) > n else None
            if start is not None and count > 0:
                return self.tokens[start:start + count]
        return []


class DraftedSteps:
    """Decode steps of one sequence that check drafted tokens (:class:`PromptLookup`) as they go.

    ``next(token, limit)`` returns the logits [1, vocab] after ``token``, as
    :meth:`~.decoder.GqaDecoder.step` does; ``limit`` caps the tokens drafted (the generation's
    remaining budget). ``drafted`` and ``accepted`` count the drafts checked and kept.
    """

    def __init__(self, decoder: GqaDecoder, prompt: Sequence[int], draft: int) -> None:
        self.decoder = decoder
        self.lookup = PromptLookup(prompt, draft)
        self.drafted = self.accepted = 0
        self._draft: list[int] = []
        self._pending: list[np.ndarray] = []

    def next(self, token: int, limit: int) -> np.ndarray:
        """The logits after ``token``: from the last check while it follows the draft, else run."""
        self.lookup.append(token)
        if self._draft and self._draft[0] == token:
            self._draft.pop(0)
            self.accepted += 1
            return self._pending.pop(0)[None]
        self.decoder.rewind(len(self._draft))
        room = self.decoder.window - len(self.decoder.caches[0].ids) - 1
        self._draft = self.lookup.draft(min(limit, room))
        if not self._draft:
            self._pending = []
            return self.decoder.step([token])
        logits = self.decoder.check([token, *self._draft])
        self.drafted += len(self._draft)
        self._pending = list(logits[1:])
        return logits[:1]
