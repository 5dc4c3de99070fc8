"""K(q) of eqs. 12 and 18: query keywords, by rules (no model) or by the SLM under a constraint.

Low-level keywords (and TR's query entities K_e) are the specific things a query names: name
spans, quoted titles, dates, times and quantities, plus graph entity names found in the query by
fuzzy matching. High-level keywords are the remaining content words: the topic. TR's answer
types K_a come from the question word ("what time" → time, "who" → person, …).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from rapidfuzz import fuzz, process

from ..index.fast import NAME, PATTERNS, STOPWORDS
from ..index.mentions import entity_key

if TYPE_CHECKING:
    from ..models.slm import SLM

QUESTION_WORDS = frozenset({
    "what", "when", "where", "which", "who", "whom", "whose", "why", "how", "does", "did", "do",
    "is", "are", "was", "were", "can", "could", "should", "would", "will"
})
# Question openings and the answer types they ask for (first match wins).
ANSWER_TYPES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), types) for pattern, types in (
        (r"\bwhat time\b|\bat what time\b|\bwhat hour\b", ("time",)),
        (r"\b(?:what|which) (?:day|date|month|weekday)\b|\bwhen\b", ("date", "time")),
        (r"\bwho\b|\bwhom\b|\bwhose\b|\bwith whom\b", ("person", "name")),
        (r"\bwhere\b|\bwhich (?:city|place|country|restaurant|cafe|shop|store)\b", ("location", "name")),
        (r"\bhow (?:much|many|long|far|old)\b|\bprice\b|\bcost\b", ("quantity",)),
        (r"\b(?:what|which) (?:song|movie|film|game|book|show|band|album|series)\b", ("title", "name")),
    ))
FUZZY_MIN = 90


@dataclass
class Keywords:
    """Low- and high-level keywords (DR) and answer types (TR)."""

    low: list[str] = field(default_factory=list)
    high: list[str] = field(default_factory=list)
    answer_types: tuple[str, ...] = ()


def rule_keywords(question: str, names: NameMatcher | None = None) -> Keywords:
    """Keywords without a model (see module docstring)."""
    low = low_level(question, names.find(question) if names else [])
    taken = {w.lower() for term in low for w in term.split()}
    high = [w for w in re.findall(r"[A-Za-z][\w'\-]+", question)
            if w.lower() not in STOPWORDS | QUESTION_WORDS and w.lower() not in taken]
    return Keywords(low, list(dict.fromkeys(w.lower() for w in high)), answer_types(question))


def answer_types(question: str) -> tuple[str, ...]:
    """Types the answer is expected to have, from the question word."""
    return next((types for pattern, types in ANSWER_TYPES if pattern.search(question)), ())


def slm_keywords(slm: SLM, question: str) -> Keywords:
    """Keywords written by the SLM as a constrained JSON object."""
    from ..models.constraints import JsonObject
    from ..models.slm import GenerationConfig
    from ..prompts import KEYWORDS_SYSTEM, keywords_user

    constraint = JsonObject((("low_level", None), ("high_level", None)), max_string=80)
    prompt = slm.chat(keywords_user(question), KEYWORDS_SYSTEM)
    text = slm.generate(prompt, GenerationConfig(max_new_tokens=64), constraint).text
    data = json.loads(text)
    split = lambda value: [p.strip() for p in value.split(",") if p.strip()]
    return Keywords(split(data["low_level"]), split(data["high_level"]), answer_types(question))


def low_level(question: str, graph_names: list[str]) -> list[str]:
    """Low-level keywords: the question's specific terms, then the graph names found in it."""
    return list(dict.fromkeys(specific_terms(question) + graph_names))


def specific_terms(question: str) -> list[str]:
    """Name spans, quoted titles, dates, times and quantities the question mentions."""
    found = [m.group(m.lastindex or 0) for _, pattern in PATTERNS for m in pattern.finditer(question)]
    for match in NAME.finditer(question):
        words = [w for w in match.group().split() if w.lower() not in STOPWORDS | QUESTION_WORDS]
        if words:
            found.append(re.sub(r"['’]s$", "", " ".join(words)))
    return found


class NameMatcher:
    """The graph's entity names, compacted once, for fuzzy matching of query n-grams."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self._keys = [entity_key(n).replace(" ", "") for n in self.names]

    def find(self, question: str) -> list[str]:
        """Entity names that occur in the question, spelling variants allowed."""
        if not self.names:
            return []
        words = re.findall(r"[\w'\-]+", question)
        grams = {" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}
        grams = sorted(g for g in grams if g.lower() not in STOPWORDS | QUESTION_WORDS and len(g) > 2)
        if not grams:
            return []
        # One n-grams × names matrix; the best (first on ties) name per n-gram, as extractOne would.
        scores = process.cdist([entity_key(g).replace(" ", "") for g in grams], self._keys,
                               scorer=fuzz.ratio, score_cutoff=FUZZY_MIN, dtype=np.float32, workers=1)
        best = scores.argmax(axis=1)
        return [self.names[j] for i, j in enumerate(best) if scores[i, j] >= FUZZY_MIN]
