"""Say only what a source says: the names, numbers and dates of an answer checked against its
cited sources, and the line of a source a citation stands on.

A claim is a capitalised span (a person, place, title, month or weekday; a sentence's first
word too, which its source then holds) or a number in the answer's own words (not the quoted
source line after it). It is supported when every term of it matches a word of the cited
sources' lines, their headers (a chat stamp also read as "7 March 2026, 18:00") or the question
(spelling variants within the ratio of ``abstain.unsupported``). An unsupported claim that
another shown source holds gets that source's citation; one that follows a comma ("Tallinn,
Turkey") is cut; any other makes the answer abstain.

Design: docs/design/answer.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..lexicon import STOPWORDS
from .abstain import terms, unsupported
from .evidence_lines import Focus, Line, SourceDoc
from .forms import NAME
from .wording import STAMP, spoken_date

STRAIGHT = str.maketrans("’‘ʼ", "'''")
CITED = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
NUMBER = re.compile(r"\b\d+(?:[.,:]\d+)*\b")
QUOTED = ' — "'
# Capitalised words that state nothing a source must hold.
NOT_CLAIMS = frozenset(["yes", "no", "ok", "okay", "hi", "hey", "thanks", "sure", "great", "am", "pm",
                        "insufficient"])


@dataclass
class Support:
    """What the check found: the claims no cited source holds, and what was done about them
    (``recited``: sources added; ``cut``: claims cut; ``abstain``: the answer is withdrawn)."""

    unsupported: list[str] = field(default_factory=list)
    recited: list[int] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)
    abstain: bool = False


def claims(text: str) -> list[str]:
    """The names, titles, places, months, weekdays and numbers an answer states."""
    names = [m.group() for m in NAME.finditer(text)]
    names = [n for n in names if n.lower() not in STOPWORDS | NOT_CLAIMS]
    return list(dict.fromkeys(names + NUMBER.findall(text)))


def cited(text: str) -> list[int]:
    """The source numbers an answer cites, in order."""
    return list(dict.fromkeys(int(n) for group in CITED.findall(text) for n in group.split(",")))


def source_text(doc: SourceDoc, lines: list[Line]) -> str:
    """What a shown source says: its header (a stamp also in words) and its chosen lines."""
    header = doc.header + " " + STAMP.sub(spoken_date, doc.header)
    return "\n".join([header, *(line.text for line in lines)])


def held(claim: str, text: str) -> bool:
    """Whether a text holds every term of a claim (a number: the same digits, not inside a
    longer number; "3" is in "2-3 pm")."""
    if NUMBER.fullmatch(claim):
        return re.search(rf"(?<![\d.,:]){re.escape(claim)}(?![\d]|[.,:]\d)", text) is not None
    words = [w for w in terms(_straight(claim)) if w not in STOPWORDS]
    if not any(len(w) > 2 for w in words):  # "He's", "It'll": no name in them
        return not words or _straight(claim).lower() in _straight(text).lower()
    return not unsupported(" ".join(words), _straight(text))


def _straight(text: str) -> str:
    return text.translate(STRAIGHT)


def check(answer: str, focus: Focus, question: str) -> tuple[str, Support]:
    """The answer with its unsupported claims re-cited or cut, and what was found."""
    own, sep, quote = answer.partition(QUOTED)
    found = Support()
    shown = [source_text(doc, lines) for doc, lines in focus.sources]
    numbers = [n for n in cited(own) if 1 <= n <= len(shown)] or [1]
    base = question + "\n" + "\n".join(shown[n - 1] for n in numbers if shown)
    for claim in claims(CITED.sub("", own)):
        if held(claim, base):
            continue
        found.unsupported.append(claim)
        other = next((i for i, text in enumerate(shown, 1) if i not in numbers and held(claim, text)), 0)
        if other:
            found.recited.append(other)
            numbers.append(other)
            base += "\n" + shown[other - 1]
        elif (cut := _cut(own, claim)) is not None:
            own = cut
            found.cut.append(claim)
        else:
            found.abstain = True
    if found.recited:
        own = _recite(own, found.recited)
    return own + (sep + quote if sep else ""), found


def _cut(text: str, claim: str) -> str | None:
    """The text without ", <claim>" (an appended place, date or name), or None when the claim
    is not such an appendix or nothing would be left."""
    match = re.search(rf",\s+(?:in |on |at |of )?{re.escape(claim)}\b", text)
    if match is None:
        return None
    rest = text[: match.start()] + text[match.end():]
    return rest if re.search(r"[A-Za-z0-9]", CITED.sub("", rest)) else None


def _recite(text: str, numbers: list[int]) -> str:
    added = "".join(f"[{n}]" for n in numbers)
    match = list(CITED.finditer(text))
    if not match:
        return f"{text.rstrip()} {added}"
    end = match[-1].end()
    return text[:end] + added + text[end:]


def citations(answer: str, focus: Focus) -> list[dict]:
    """For each source the answer cites: its file, the line number in the document and the
    text of the line that best holds the answer's words (a quoted line when there is one)."""
    own, _, quote = answer.partition(QUOTED)
    words = set(terms(CITED.sub("", own) + " " + quote))
    out = []
    for n in cited(own):
        if not 1 <= n <= len(focus.sources):
            continue
        doc, lines = focus.sources[n - 1]
        if not lines:
            continue
        best = max(lines, key=lambda line: (quote.strip('"') and quote.strip('"')[:40] in line.text,
                                            len(words & set(terms(line.text)))))
        text = best.text.rstrip("…")
        out.append({"n": n, "doc_id": doc.chunk.doc_id, "source": doc.chunk.source,
                    "line": doc.line_number(text), "text": text})
    return out
