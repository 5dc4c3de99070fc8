"""The planner's input: the query embedding plus cheap features of the question's shape.

The same function computes features at training time (export side) and at run time, so that
the head sees identical inputs; ``FEATURE_VERSION`` is recorded in the head's manifest.

Design: docs/design/planner.md
"""

from __future__ import annotations

import re
from weakref import WeakKeyDictionary

import numpy as np

from ..lexicon import (
    QUERY_STOPWORDS,
    WH_WORDS,
    YES_NO_OPENERS,
    NameMatcher,
    answer_types,
    entity_key,
    low_level,
)
from ..questions import word_grams

# 2: graph entities are found by exact n-gram lookup, not fuzzy matching, which cost more than
# the retrieval it plans on a large graph (planner.md).
FEATURE_VERSION = "2"
_EXACT: WeakKeyDictionary[NameMatcher, dict[str, str]] = WeakKeyDictionary()
CUES = {
    "temporal": r"\b(?:before|after|first|last|earliest|latest|date|year|day|time|ago|during|since)\b",
    "comparison": r"\b(?:or|than|both|same|more|less|older|younger|earlier|later|compare\w*|differ\w*)\b",
    "aggregation": r"\b(?:how many|all|every|list|total|each)\b",
    "chain": r"\b(?:of the|of his|of her|whose|'s)\b",
    "negation": r"\b(?:not|never|no)\b",
}
CUE_PATTERNS = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in CUES.items()}
CHEAP_NAMES = (["entities", "specific_terms", "words", "answer_typed", "yes_no"]
               + [f"q_{w}" for w in WH_WORDS] + [f"cue_{c}" for c in CUES])


def cheap_features(question: str, names: NameMatcher | None) -> np.ndarray:
    """Shape features in [0, 1]: graph entities matched, terms, length, question word, cues."""
    found = exact_names(question, names) if names else []
    terms = low_level(question, found)
    lowered = question.lower().strip()
    first = lowered.split()[0] if lowered.split() else ""
    values = [min(len(found), 5) / 5, min(len(terms), 5) / 5,
              min(len(question.split()), 40) / 40, float(bool(answer_types(question))),
              float(first in YES_NO_OPENERS)]
    values += [float(first == w or lowered.startswith(f"{w} ")) for w in WH_WORDS]
    values += [min(len(p.findall(question)), 3) / 3 for p in CUE_PATTERNS.values()]
    return np.asarray(values, dtype=np.float32)


def plan_features(embedding: np.ndarray, question: str, names: NameMatcher | None) -> np.ndarray:
    """The head's input row: L2-normalised query embedding, then the cheap features."""
    return np.concatenate([embedding.astype(np.float32), cheap_features(question, names)])


def exact_names(question: str, names: NameMatcher) -> list[str]:
    """Graph entity names that are exactly (case and edge punctuation aside) a word n-gram of
    the question, up to ``MAX_GRAM`` words; filler n-grams are skipped."""
    if names not in _EXACT:
        _EXACT[names] = {entity_key(n): n for n in reversed(names.names)}
    keys = _EXACT[names]
    grams = dict.fromkeys(word_grams(question))
    found = (keys.get(entity_key(g)) for g in grams if g.lower() not in QUERY_STOPWORDS and len(g) > 2)
    return list(dict.fromkeys(n for n in found if n))
