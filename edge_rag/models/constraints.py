"""Constrained decoding: restrict each next token so that small models cannot break a format.

A constraint judges text: ``accepts_prefix`` says whether the text generated so far can still be
completed into a valid output, ``is_complete`` whether it already is one. The generator keeps
only candidate tokens whose text keeps the output a valid prefix, and allows end-of-sequence
only once the output is complete. ``TokenMask`` is the low-level hook: any callable that returns
the allowed token ids for the next step.

Design: docs/design/models.md
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

NUMBER = re.compile(r"\d{1,2}")
NUMBER_PREFIX = re.compile(r" ?\d{0,2}")
# A piece of a JsonObject's shape: literal text (str), one of several JSON strings (tuple), or
# a free JSON string of at most that many characters (int).
Piece = str | tuple[str, ...] | int


class Constraint(Protocol):
    """A format the generated text must follow."""

    def accepts_prefix(self, text: str) -> bool:
        """True when ``text`` can still be completed into a valid output."""
        ...

    def is_complete(self, text: str) -> bool:
        """True when ``text`` is a full valid output."""
        ...

    def finish(self, text: str) -> str:
        """The shortest text that makes a valid prefix complete (used when tokens run out)."""
        ...


@dataclass(frozen=True)
class TokenMask:
    """Low-level hook: ``allowed(step, generated_ids)`` returns allowed ids, or None for all."""

    allowed: Callable[[int, list[int]], np.ndarray | None]


@dataclass(frozen=True)
class OneOf:
    """The output is exactly one of a few labels (e.g. planner letters A–F)."""

    labels: tuple[str, ...]

    def accepts_prefix(self, text: str) -> bool:
        """Some label starts with the text."""
        return any(label.startswith(text) for label in self.labels)

    def is_complete(self, text: str) -> bool:
        """The text is a label."""
        return text in self.labels

    def finish(self, text: str) -> str:
        """The rest of the first label the text starts."""
        return next(label[len(text):] for label in self.labels if label.startswith(text))


@dataclass(frozen=True)
class Records:
    """Delimiter-separated records, one per line, ending with a done marker line.

    ``kinds`` maps a record kind to its number of fields; a line is
    ``kind<|>field<|>field...``. Fields are non-empty, at most ``max_field`` characters,
    and contain neither the delimiter nor a newline. ``numeric`` lists (kind, field index)
    pairs whose field is a number of one or two digits. At most ``max_records`` records.
    """

    kinds: tuple[tuple[str, int], ...]
    delimiter: str = "<|>"
    done: str = "<|DONE|>"
    max_field: int = 80
    max_records: int = 20
    numeric: tuple[tuple[str, int], ...] = ()

    def accepts_prefix(self, text: str) -> bool:
        """Every finished line is a record and the last line can still become one."""
        *complete, last = text.split("\n")
        if len(complete) > self.max_records or not all(self._record(line) for line in complete):
            return False
        if self.done.startswith(last):
            return True
        return len(complete) < self.max_records and self._record_prefix(last)

    def is_complete(self, text: str) -> bool:
        """The text ends with the done marker after valid records."""
        *complete, last = text.split("\n")
        return last == self.done and all(self._record(line) for line in complete)

    def finish(self, text: str) -> str:
        """Complete the last record with placeholder fields, then the done marker."""
        *_, last = text.split("\n")
        if self.done.startswith(last):
            return self.done[len(last):]
        return self._finish_record(last) + "\n" + self.done

    def _finish_record(self, line: str) -> str:
        kind, *fields = line.split(self.delimiter)
        out = ""
        if not fields:
            pending = self._pending(kind)
            if pending and kind[:-pending] in dict(self.kinds):
                kind, out = kind[:-pending], self.delimiter[pending:]
            else:
                full = next(k for k, _ in self.kinds if k.startswith(kind))
                out, kind = full[len(kind):] + self.delimiter, full
            fields = [""]
        wanted = dict(self.kinds)[kind]
        pending = self._pending(fields[-1]) if len(fields) < wanted else 0
        if pending and fields[-1][:-pending].strip():
            out += self.delimiter[pending:]
            fields.append("")
        if not fields[-1].strip():
            out += self._filler(kind, len(fields) - 1)
        return out + "".join(self.delimiter + self._filler(kind, i) for i in range(len(fields), wanted))

    def _filler(self, kind: str, index: int) -> str:
        return "5" if (kind, index) in self.numeric else "?"

    def _pending(self, text: str) -> int:
        # How many characters of a delimiter the text ends with (0 when none).
        return next((i for i in range(len(self.delimiter) - 1, 0, -1)
                     if text.endswith(self.delimiter[:i])), 0)

    def _record(self, line: str) -> bool:
        kind, *fields = line.split(self.delimiter)
        wanted = dict(self.kinds).get(kind)
        return wanted == len(fields) and all(self._field(kind, i, f) for i, f in enumerate(fields))

    def _field(self, kind: str, index: int, text: str) -> bool:
        if (kind, index) in self.numeric:
            return NUMBER.fullmatch(text.strip()) is not None
        return 0 < len(text.strip()) <= self.max_field

    def _record_prefix(self, line: str) -> bool:
        kind, *fields = line.split(self.delimiter)
        if not fields:
            pending = self._pending(kind)
            return any(k.startswith(kind) for k, _ in self.kinds) or (
                pending > 0 and kind[:-pending] in dict(self.kinds))
        wanted = dict(self.kinds).get(kind)
        if wanted is None or len(fields) > wanted:
            return False
        *done, current = fields
        if not all(self._field(kind, i, f) for i, f in enumerate(done)):
            return False
        pending = self._pending(current) if len(fields) < wanted else 0
        written = current[: len(current) - pending]
        if (kind, len(done)) in self.numeric:
            return NUMBER_PREFIX.fullmatch(written) is not None
        return len(written) <= self.max_field


@dataclass(frozen=True)
class JsonObject:
    """A small JSON subset: one object with these keys in order, string or enum values.

    ``fields`` maps each key to None (a string of at most ``max_string`` characters without
    quotes, backslashes or newlines) or to a tuple of allowed string values. The output is
    compact JSON: ``{"key": "value", "key2": "v"}``; its length is bounded, so generation
    with enough tokens always completes.
    """

    fields: tuple[tuple[str, tuple[str, ...] | None], ...]
    max_string: int = 60

    def accepts_prefix(self, text: str) -> bool:
        """The text is a prefix of some valid object."""
        return _prefix_of(text, self._pieces())

    def is_complete(self, text: str) -> bool:
        """The text is a whole valid object that ``json.loads`` reads."""
        if self._pattern().fullmatch(text) is None:
            return False
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False

    def finish(self, text: str) -> str:
        """Close what is open and give the remaining fields their shortest values."""
        position, out = 0, ""
        for piece in self._pieces():
            rest = text[position:]
            if isinstance(piece, str):
                position += min(len(rest), len(piece))
                out += piece[len(rest):] if len(rest) < len(piece) else ""
            elif isinstance(piece, tuple):
                choice = next((v for v in piece if rest.startswith(v)), None)
                if choice is None:
                    choice = next(v for v in piece if v.startswith(rest))
                    out += choice[len(rest):]
                position += min(len(rest), len(choice))
            else:
                state = _string_prefix(rest, piece) if rest else None
                out += '""' if state is None else ("" if state[1] else '"')
                position += state[0] if state else 0
        return out

    def _pieces(self) -> list[Piece]:
        pieces: list[Piece] = ["{"]
        for index, (key, values) in enumerate(self.fields):
            pieces.append(("" if index == 0 else ", ") + json.dumps(key) + ": ")
            pieces.append(tuple(json.dumps(v) for v in values) if values else self.max_string)
        pieces.append("}")
        return pieces

    def _pattern(self) -> re.Pattern[str]:
        parts = []
        for piece in self._pieces():
            if isinstance(piece, str):
                parts.append(re.escape(piece))
            elif isinstance(piece, tuple):
                parts.append("(?:" + "|".join(re.escape(v) for v in piece) + ")")
            else:
                parts.append('"[^"\\\\\\n]{0,' + str(piece) + '}"')
        return re.compile("".join(parts))


def _prefix_of(text: str, pieces: Sequence[Piece]) -> bool:
    """True when ``text`` is a prefix of a string matching the sequence of pieces."""
    position = 0
    for piece in pieces:
        rest = text[position:]
        if not rest:
            return True
        if isinstance(piece, str):
            if not (rest.startswith(piece) or piece.startswith(rest)):
                return False
            position += len(piece)
        elif isinstance(piece, tuple):
            full = next((v for v in piece if rest.startswith(v)), None)
            if full is None:
                return any(v.startswith(rest) for v in piece)
            position += len(full)
        else:
            state = _string_prefix(rest, piece)
            if state is None:
                return False
            consumed, closed = state
            if not closed:
                return True
            position += consumed
    return position == len(text)


def _string_prefix(text: str, max_len: int) -> tuple[int, bool] | None:
    """(characters used, closed) of a bounded JSON string starting ``text``; None if invalid."""
    if not text.startswith('"'):
        return None
    for index, char in enumerate(text[1:], start=1):
        if char == '"':
            return index + 1, True
        if char in '\\\n' or index > max_len:
            return None
    return len(text), False
