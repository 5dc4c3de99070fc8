"""K(q) of eqs. 12 and 18: query keywords, by rules (no model) or by the SLM under a constraint.

Low-level keywords (and TR's query entities K_e) are the specific things a query names: name
spans, quoted titles, dates, times and quantities, plus graph entity names found in the query by
fuzzy matching. High-level keywords are the remaining content words: the topic. TR's answer
types K_a come from the question word ("what time" → time, "who" → person, …). The vocabulary
(patterns, stop and question words, answer types, graph name matching) is ``edge_rag/lexicon.py``.

Design: docs/design/retrievers.md
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..lexicon import QUERY_STOPWORDS, NameMatcher, answer_types, low_level

if TYPE_CHECKING:
    from ..models.slm import SLM


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
            if w.lower() not in QUERY_STOPWORDS and w.lower() not in taken]
    return Keywords(low, list(dict.fromkeys(w.lower() for w in high)), answer_types(question))


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
