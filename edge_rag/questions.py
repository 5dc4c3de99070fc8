"""Temporal clauses of a question, each retrieved on its own (beyond the paper).

A question that orders or measures two events — "Did Li Hua ask Yuriko to play music together
before Wolfgang proposed to pause playing?", "Is the time interval more than 3 days between
LiHua confirming ... and Adam asking ...?" — has its evidence in two conversations, one per
event. One embedding of the whole question lands between the two and often finds neither in
its first five documents. ``ppr`` therefore also ranks each event's clause on its own and
interleaves the documents (see ``PPRRetriever``). The split needs no model: the question is cut at
``before``/``after``, after ``between`` at ``and``, and else after ``from`` at the next ``to`` ("Did it
take more than 3 weeks from LiHua planning on getting the air-conditioner to the air-conditioner
being installed?"; LiHua-World dev Multi recall@5 0.702 → 0.721, one question, nothing else
moved); a piece shorter than ``MIN_WORDS`` words
("after work today", "after the workout") is glued back to its neighbour, and a question that
yields fewer than two clauses is not split.
"""

from __future__ import annotations

import re

MIN_WORDS = 4
MAX_CLAUSES = 3
_ORDER = re.compile(r"\b(before|after)\b", re.IGNORECASE)
_BETWEEN = re.compile(r"\bbetween\b(.+)", re.IGNORECASE)
_AND = re.compile(r"\b(and)\b", re.IGNORECASE)
_FROM_TO = re.compile(r"\bfrom\b(.+?)\b(to)\b(.+)", re.IGNORECASE)


def clauses(question: str) -> list[str]:
    """The question's event clauses (two or more), or ``[]`` when it names one event."""
    between = _BETWEEN.search(question)
    parts = _AND.split(between[1]) if between else _ORDER.split(question)
    found = _glue([p.strip(" ?.,;:") for p in parts[::2]], parts[1::2])
    if len(found) < 2 and not between and (span := _FROM_TO.search(question)):
        found = _glue([span[1].strip(" ?.,;:"), span[3].strip(" ?.,;:")], [span[2]])
    return found[:MAX_CLAUSES] if len(found) >= 2 else []


def _glue(pieces: list[str], joints: list[str]) -> list[str]:
    """Pieces of fewer than ``MIN_WORDS`` words joined to their neighbour with the word that
    separated them ("protein after the workout" stays one clause)."""
    out = [pieces[0]]
    for joint, piece in zip(joints, pieces[1:]):
        if len(piece.split()) < MIN_WORDS or len(out[-1].split()) < MIN_WORDS:
            out[-1] = f"{out[-1]} {joint} {piece}".strip()
        else:
            out.append(piece)
    return [p for p in out if len(p.split()) >= MIN_WORDS]
