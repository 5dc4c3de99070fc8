"""Answers in a person's words: speaker names as names, a chat's stamp as a date and time.

Chat logs write their speakers as handles ("WolfgangSchulz:") and date a conversation with a
file stamp ("Time: 20260307_18:00"); a small model copies both into its answer. The answer a
person reads says "Wolfgang Schulz" and "7 March 2026, 18:00". Only the answer's own words are
rewritten, word by word (so a streamed answer can be rewritten as it comes); a quoted source
line after it stays verbatim.

Design: docs/design/answer.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .forms import SPEAKER_LINE

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
STAMP = re.compile(r"\b((?:19|20)\d\d)([01]\d)([0-3]\d)(?:_([0-2]\d):?([0-5]\d))?\b")
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
PARTIAL_STAMP = re.compile(r"\d{1,8}(?:_\d{0,2}(?::\d{0,2})?)?")


def spoken_date(match: re.Match[str]) -> str:
    """A stamp as a person writes it: "7 March 2026, 18:00", or "7 March 2026" for a day; an
    eight-digit number that is no date stays as it is."""
    year, month, day, hour, minute = match.groups()
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
        return match.group()
    date = f"{int(day)} {MONTHS[int(month) - 1]} {year}"
    return f"{date}, {hour}:{minute}" if hour else date


def names_of(speakers: Iterable[str]) -> dict[str, str]:
    """Each handle written as one word ("WolfgangSchulz", "ChaeSong-hwa") and its name
    ("Wolfgang Schulz", "Chae Song-hwa")."""
    return {s: CAMEL.sub(" ", s) for s in speakers if " " not in s and CAMEL.search(s)}


def speakers_in(lines: Iterable[str]) -> list[str]:
    """The speakers of chat lines ("AdamSmith: ..." gives AdamSmith)."""
    return list(dict.fromkeys(m.group(1) for line in lines if (m := SPEAKER_LINE.match(line))))


def in_words(text: str, names: dict[str, str]) -> str:
    """The text with stamps as dates and handles as names."""
    return "".join(_word(piece, names) for piece in re.split(r"(\s+)", text))


def rewrite_stream(pieces: Iterable[str], names: dict[str, str]) -> Iterator[str]:
    """``in_words`` over a stream of text pieces, as they come: only the end of a word that may
    still become a handle or a stamp ("Adam", "202601") waits for the next piece."""
    held = ""
    for piece in pieces:
        held += piece
        cut = max(held.rfind(" "), held.rfind("\n")) + 1
        while cut < len(held) and not _may_grow(held[cut:], names):
            cut += 1
        if cut:
            yield in_words(held[:cut], names)
            held = held[cut:]
    if held:
        yield in_words(held, names)


def _may_grow(tail: str, names: dict[str, str]) -> bool:
    # The tail is the start of a handle (or a whole one a lower-case letter could still extend),
    # or of a stamp.
    return any(h.startswith(tail) for h in names) or PARTIAL_STAMP.fullmatch(tail) is not None


def _word(word: str, names: dict[str, str]) -> str:
    if not word or word.isspace():
        return word
    word = STAMP.sub(spoken_date, word)
    for handle, name in names.items():
        if handle in word:
            word = re.sub(rf"(?<![A-Za-z]){re.escape(handle)}(?![a-z])", name, word)
    return word
