"""What a name's mentions say, merged: the spelling, type, attribute text and count that
aggregation (§3.1, eqs. 3–5) reads for each key.

A name mentioned a few times is summarised from all its mentions (``summarise``): the most
frequent spelling and non-generic type, and its most frequent descriptions within
``DESCRIPTION_CHARS``. Beyond the paper, a name with more than ``BUSY`` mentions keeps a running
summary in its ``entity_keys`` row (``RunningSummary``): the count of every (spelling, type) pair,
and its descriptions sampled as the ``SAMPLE`` distinct ones of smallest hash (a bottom-k
sample). Both are exact under insertion, so an insert reads only the new chunks' mentions of a
busy name instead of all of them. The summary is still a function of the mentions alone
(insertion order does not matter); a deletion reads the name's mentions again.

Design: docs/design/index.md
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..lexicon import STOPWORDS
from ..store.graph_tables import MentionRow, join_counts, join_texts
from .aggregate import GENERIC_TYPES, EntityKey

BUSY = 64  # mentions above which a name keeps a running summary
SAMPLE = 8  # distinct descriptions a busy name's attribute text is drawn from
DESCRIPTION_CHARS = 400  # characters of a name's attribute text (index.md)
TOKEN = re.compile(r"[\w']{3,}")


@dataclass
class MergedKey:
    """A key's merged mentions: its chosen name, type, description and count; ``state`` is the
    running summary stored with it (empty for a name of at most ``BUSY`` mentions)."""

    key: str
    name: str
    type: str
    description: str
    mentions: int
    state: str = ""

    def for_aggregation(self) -> EntityKey:
        """The key as aggregation compares it: type, attribute words and support."""
        words = TOKEN.findall(f"{self.type} {self.description}".lower())
        return EntityKey(self.key, self.type, frozenset(w for w in words if w not in STOPWORDS),
                         self.mentions)


def summarise(key: str, rows: Sequence[MentionRow]) -> MergedKey:
    """A key's summary from all its distinct mentions (``GraphTables.mentions``); a running
    one when they are more than ``BUSY``."""
    if sum(r.times for r in rows) > BUSY:
        return RunningSummary.of(rows).merged(key)
    names, types, texts = Counter[str](), Counter[str](), Counter[str]()
    for r in rows:
        names[r.name] += r.times
        types[r.type] += r.times if r.type not in GENERIC_TYPES else 0
        texts[r.description] += r.times
    type_ = most_frequent(types) if +types else rows[0].type
    description = join_counts(texts, DESCRIPTION_CHARS)
    return MergedKey(key, most_frequent(names), type_, description, sum(r.times for r in rows))


@dataclass
class RunningSummary:
    """A busy name's mentions as counts of (spelling, type) and a bottom-``SAMPLE`` sample of
    its distinct descriptions, as (hash, text) pairs in ascending order."""

    pairs: Counter[tuple[str, str]]
    sample: list[tuple[int, str]]

    @classmethod
    def of(cls, rows: Iterable[MentionRow]) -> RunningSummary:
        """The summary of these mentions."""
        summary = cls(Counter(), [])
        summary.add(rows)
        return summary

    @property
    def count(self) -> int:
        """How many mentions it summarises."""
        return sum(self.pairs.values())

    def add(self, rows: Iterable[MentionRow]) -> None:
        """Fold in new mentions (never ones already counted)."""
        found = set(self.sample)
        for r in rows:
            self.pairs[(r.name, r.type)] += r.times
            if r.description:
                found.add((_hash(r.description), r.description))
        self.sample = sorted(found)[:SAMPLE]

    def merged(self, key: str) -> MergedKey:
        """The key's summary: most frequent spelling and non-generic type (ties alphabetical;
        the smallest pair's type when every type is generic), the sample as its description."""
        names: Counter[str] = Counter()
        types: Counter[str] = Counter()
        for (name, type_), n in self.pairs.items():
            names[name] += n
            types[type_] += n if type_ not in GENERIC_TYPES else 0
        type_ = most_frequent(types) if +types else min(self.pairs)[1]
        description = join_texts((text for _, text in self.sample), DESCRIPTION_CHARS)
        return MergedKey(key, most_frequent(names), type_, description, self.count, self.dumps())

    def dumps(self) -> str:
        """The stored form (JSON)."""
        pairs = sorted([name, type_, n] for (name, type_), n in self.pairs.items())
        return json.dumps({"pairs": pairs, "sample": [text for _, text in self.sample]},
                          ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> RunningSummary | None:
        """A stored summary, or None when ``text`` is none (empty, or written by other code)."""
        try:
            data = json.loads(text)
            pairs = Counter({(str(name), str(type_)): int(n) for name, type_, n in data["pairs"]})
            sample = sorted((_hash(str(t)), str(t)) for t in data["sample"])
        except (ValueError, TypeError, KeyError):
            return None
        return cls(pairs, sample) if pairs else None


def most_frequent(counts: Counter[str]) -> str:
    """The most counted string, the alphabetically first among equals."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
