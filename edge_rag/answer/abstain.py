"""Evidence-based abstention: does the evidence shown to the model cover what the question asks?

A question the sources cannot answer ("What color did she paint the basement walls?") usually
names specifics the retrieved conversations never mention: retrieval still returns the nearest
chats, but the question's own terms ("color", "paint") are missing from the chosen lines. A 0.5B
model's own probability of saying "Insufficient information" does not tell these questions
apart; counting the question's terms that no evidence word matches does: abstain when at least
``abstain_terms`` terms are unsupported (tuned on dev halves, docs/design/answer.md).

Only questions that ask for a specific item are judged this way: a yes/no question about events
the sources do not show is answered "No", not abstained on. Beyond the paper (§3 stops at
retrieval): the abstention of issue 14.

Design: docs/design/answer.md
"""

from __future__ import annotations

import re

import numpy as np
from rapidfuzz import fuzz, process

from ..lexicon import QUESTION_WORDS, STOPWORDS

WORD = re.compile(r"[A-Za-z0-9][\w'\-]*")
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
# Words that frame a question rather than name what it is about.
FRAMING_WORDS = """
according conversation conversations discussion discussions chat chats message messages mention
mentioned mentions question specific specifically type kind sort main name named exactly
"""
FRAMING = frozenset(FRAMING_WORDS.split())
MATCH = 85  # rapidfuzz ratio at which an evidence word supports a question term (answer.md)


def terms(text: str) -> list[str]:
    """A text's words, lowercased, CamelCase names split ("JenniferMoore" -> jennifer, moore),
    possessives dropped ("Wolfgang's" -> wolfgang)."""
    words = [w for token in WORD.findall(text) for w in CAMEL.sub(" ", token).split()]
    return [re.sub(r"'s$", "", w.lower()) for w in words]


def question_terms(question: str) -> list[str]:
    """The terms of a question that must occur in its evidence: no stopwords, question words or
    framing words; at least 3 letters, or a number."""
    skip = STOPWORDS | QUESTION_WORDS | FRAMING
    return list(dict.fromkeys(w for w in terms(question)
                              if w not in skip and (len(w) > 2 or w.isdigit())))


def unsupported(question: str, evidence: str) -> list[str]:
    """The question's terms that no word of the evidence matches (spelling variants and
    inflections within a fuzzy ratio of 85 allowed; a date stamp matches its prefix)."""
    wanted = question_terms(question)
    found = list(dict.fromkeys(terms(evidence)))
    if not wanted or not found:
        return wanted
    scores = process.cdist(wanted, found, scorer=fuzz.ratio, dtype=np.float32, workers=1)
    missing = [w for w, best in zip(wanted, scores.max(axis=1)) if best < MATCH]
    return [w for w in missing if not (w.isdigit() and any(f.startswith(w) for f in found))]
