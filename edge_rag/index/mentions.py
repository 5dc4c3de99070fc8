"""What extraction yields: entity and relation mentions per chunk, normalised and repaired.

Design: docs/design/index.md
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from ..lexicon import EDGE_PUNCTUATION, SPACES, entity_key

# Fields of a mention (docs/design/index.md).
FIELD_CHARS = 160  # longest name or description kept
MAX_STRENGTH = 10.0  # a relation's stated strength is clipped to [1, MAX_STRENGTH]
DEFAULT_STRENGTH = 5.0  # the strength of a relation that states none
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
NON_WORD = re.compile(r"[\W_]+")
REPEATS = re.compile(r"(.{1,4}?)\1{4,}")


@dataclass(frozen=True)
class EntityMention:
    """An entity as one chunk mentions it."""

    name: str
    type: str = ""
    description: str = ""

    @property
    def key(self) -> str:
        """The normalised name that identifies the surface entity."""
        return entity_key(self.name)


@dataclass(frozen=True)
class RelationMention:
    """A relation as one chunk states it; ``strength`` is in [1, 10]."""

    source: str
    target: str
    keywords: str = ""
    description: str = ""
    strength: float = DEFAULT_STRENGTH


@dataclass
class Extraction:
    """What one chunk yielded, plus how many extraction attempts failed on it."""

    entities: list[EntityMention] = field(default_factory=list)
    relations: list[RelationMention] = field(default_factory=list)
    failures: int = 0

    def to_json(self) -> str:
        """Compact JSON for the extraction cache."""
        return json.dumps({"entities": [list(asdict(e).values()) for e in self.entities],
                           "relations": [list(asdict(r).values()) for r in self.relations],
                           "failures": self.failures}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Extraction:
        """Inverse of ``to_json``."""
        data = json.loads(text)
        return cls([EntityMention(*e) for e in data["entities"]],
                   [RelationMention(*r) for r in data["relations"]], int(data["failures"]))


def embedding_text(name: str) -> str:
    """The text embedded for an entity name: CamelCase split ("AnnaBerg" → "Anna Berg")."""
    return CAMEL.sub(" ", SPACES.sub(" ", name).strip(EDGE_PUNCTUATION))


def chunk_hash(text: str) -> str:
    """The extraction cache key of a chunk's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def repair(entities: Sequence[EntityMention], relations: Sequence[RelationMention]) -> Extraction:
    """Clean raw records: strip, bound, dedupe, drop self-loops, add missing endpoints."""
    found: dict[str, EntityMention] = {}
    for entity in entities:
        name = _clean(entity.name).strip(EDGE_PUNCTUATION)
        if entity_key(name) and entity_key(name) not in found:
            found[entity_key(name)] = EntityMention(name, _clean(entity.type).lower(),
                                                    _clean(entity.description))
    kept: dict[tuple[str, str], RelationMention] = {}
    for relation in relations:
        source = _clean(relation.source).strip(EDGE_PUNCTUATION)
        target = _clean(relation.target).strip(EDGE_PUNCTUATION)
        first, second = sorted((entity_key(source), entity_key(target)))
        pair = (first, second)
        if not all(pair) or pair[0] == pair[1] or pair in kept:
            continue
        kept[pair] = RelationMention(source, target, _clean(relation.keywords),
                                     _clean(relation.description), strength(relation.strength))
        for name in (source, target):
            found.setdefault(entity_key(name), EntityMention(name))
    return Extraction(list(found.values()), list(kept.values()))


def _clean(text: object) -> str:
    # Small models loop ("9.5555555…"): a short pattern repeated many times is kept once.
    return REPEATS.sub(r"\1", SPACES.sub(" ", str(text))).strip()[:FIELD_CHARS]


def strength(value: object) -> float:
    """A relation strength read from any text, clamped to [1, 10]."""
    match = re.search(r"\d+(?:\.\d+)?", str(value))
    number = float(match.group()) if match else DEFAULT_STRENGTH
    return min(MAX_STRENGTH, max(1.0, number))


def ground(extraction: Extraction, text: str) -> Extraction:
    """Keep only entities whose name occurs in the text (spacing, case and punctuation aside),
    and the relations between them: small models copy names from the prompt's example."""
    haystack = _letters(text)
    kept = [e for e in extraction.entities if _letters(e.name) and _letters(e.name) in haystack]
    keys = {e.key for e in kept}
    relations = [r for r in extraction.relations
                 if entity_key(r.source) in keys and entity_key(r.target) in keys]
    return Extraction(kept, relations, extraction.failures)


def _letters(text: str) -> str:
    return NON_WORD.sub("", text.casefold())
