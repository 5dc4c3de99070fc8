"""Token-budget chunking that keeps lines (turns, sentences, paragraphs) whole where it can.

Design: docs/design/index.md
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tokenizers import Tokenizer

MAX_LINE_CHARS = 1 << 14  # a longer line is cut at spaces before it is tokenized (index.md)
LINE_BATCH = 256  # lines tokenized per call
# A chunk holds at most this many characters per token of its budget. Prose is far below it;
# text this sparse in tokens is not (a word of megabytes is one unknown token to the embedder,
# and thousands of the SLM's; index.md).
CHARS_PER_TOKEN = 16


@dataclass(frozen=True)
class Chunk:
    """A piece of a document sized for the embedder."""

    text: str
    n_tokens: int


class Chunker:
    """Packs whole lines into chunks of at most ``max_tokens`` tokens and ``max_chars``
    characters (``CHARS_PER_TOKEN`` per token unless given).

    Consecutive chunks share trailing lines worth up to ``overlap`` tokens. A line longer
    than the budget is cut into token windows that overlap by ``overlap`` tokens; a chunk over
    the character cap is cut at spaces (or anywhere, when it has none) into pieces under it.
    """

    def __init__(self, tokenizer: Tokenizer, max_tokens: int, overlap: int,
                 max_chars: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.overlap = overlap
        self.max_chars = max_chars or max_tokens * CHARS_PER_TOKEN

    def chunks(self, blocks: Iterable[str]) -> Iterator[Chunk]:
        """Chunks of a text given as a stream of blocks."""
        for chunk in self._token_chunks(blocks):
            if len(chunk.text) <= self.max_chars:
                yield chunk
            else:
                yield from self._by_chars(chunk.text)

    def _token_chunks(self, blocks: Iterable[str]) -> Iterator[Chunk]:
        current: list[tuple[str, int]] = []
        for line, n_tokens, offsets in self._tokenized_lines(blocks):
            if n_tokens > self.max_tokens:
                yield from self._flush(current)
                current = []
                yield from self._split_long_line(line, offsets)
                continue
            if current and sum(n for _, n in current) + n_tokens > self.max_tokens:
                yield from self._flush(current)
                current = self._tail(current)
            current.append((line, n_tokens))
        yield from self._flush(current)

    def _tokenized_lines(self, blocks: Iterable[str]) -> Iterator[tuple[str, int, list]]:
        batch: list[str] = []
        for line in _lines(blocks):
            batch.append(line)
            if len(batch) == LINE_BATCH:
                yield from self._encode(batch)
                batch = []
        yield from self._encode(batch)

    def _encode(self, lines: list[str]) -> Iterator[tuple[str, int, list]]:
        if not lines:
            return
        for line, enc in zip(lines, self.tokenizer.encode_batch(lines, add_special_tokens=False)):
            yield line, len(enc.ids), enc.offsets

    def _flush(self, current: list[tuple[str, int]]) -> Iterator[Chunk]:
        if current:
            yield Chunk("\n".join(line for line, _ in current), sum(n for _, n in current))

    def _tail(self, current: list[tuple[str, int]]) -> list[tuple[str, int]]:
        tail: list[tuple[str, int]] = []
        budget = self.overlap
        for line, n_tokens in reversed(current):
            if n_tokens > budget:
                break
            tail.insert(0, (line, n_tokens))
            budget -= n_tokens
        return tail

    def _by_chars(self, text: str) -> Iterator[Chunk]:
        while text:
            cut = len(text) if len(text) <= self.max_chars else self._cut(text)
            piece, text = text[:cut].strip(), text[cut:]
            encoding = self.tokenizer.encode(piece, add_special_tokens=False)
            if len(encoding.ids) > self.max_tokens:
                yield from self._split_long_line(piece, encoding.offsets)
            elif piece:
                yield Chunk(piece, len(encoding.ids))

    def _cut(self, text: str) -> int:
        space = max(text.rfind(" ", 0, self.max_chars), text.rfind("\n", 0, self.max_chars))
        return space + 1 if space > self.max_chars // 2 else self.max_chars

    def _split_long_line(self, line: str, offsets: list) -> Iterator[Chunk]:
        step = self.max_tokens - self.overlap
        for start in range(0, len(offsets), step):
            window = offsets[start : start + self.max_tokens]
            yield Chunk(line[window[0][0] : window[-1][1]], len(window))
            if start + self.max_tokens >= len(offsets):
                break


def _lines(blocks: Iterable[str]) -> Iterator[str]:
    """Non-blank lines of a block stream; overlong lines are cut at a space."""
    pending = ""
    for block in blocks:
        pending += block
        *complete, pending = pending.split("\n")
        yield from _nonblank(complete)
        while len(pending) > MAX_LINE_CHARS:
            cut = pending.rfind(" ", 0, MAX_LINE_CHARS) + 1 or MAX_LINE_CHARS
            yield from _nonblank([pending[:cut]])
            pending = pending[cut:]
    yield from _nonblank([pending])


def _nonblank(lines: list[str]) -> Iterator[str]:
    for line in lines:
        stripped = line.strip()
        if stripped:
            yield stripped
