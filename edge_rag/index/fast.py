"""The fast extractor's rules: entities and relations from surface patterns, no model.

Entities: chat speakers (``Name: message`` lines), capitalised name spans, dates, times,
quantities, quoted titles and a chunk's most frequent content words. Relations: a speaker and
what their line mentions, spans co-occurring in one line (stronger when closer), speakers
replying to each other, and a conversation's date with its speakers.

Design: docs/design/index.md
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from ..lexicon import NAME, PATTERNS, POSSESSIVE, STOPWORDS
from .mentions import EntityMention, RelationMention

# What a chunk's extraction keeps (docs/design/index.md).
SNIPPET_CHARS = 120  # characters of a line kept as a mention's description
CONCEPTS_PER_CHUNK = 4  # most frequent content words made entities
RELATIONS_PER_CHUNK = 24  # strongest relations kept

SPEAKER = re.compile(r"^\s*([A-Z][\w'\-]*(?: [A-Z][\w'\-]*){0,3}):\s+(.+)$")
TIME_HEADER = re.compile(r"^\s*Time:\s*(\d{4})(\d{2})(\d{2})_?(\d{2}):?(\d{2})")
WORD = re.compile(r"\b[a-z][a-z\-]{3,}\b")
SENTENCE_START = re.compile(r"(?:^|[.!?…]\s+|[\"“(]\s*)$")
CAMEL_PART = re.compile(r"[A-Z][a-z]+")


@dataclass(frozen=True)
class _Span:
    """A found entity: where it sits in its line, its name and type."""

    start: int
    name: str
    type: str


def extract_fast(text: str) -> tuple[list[EntityMention], list[RelationMention]]:
    """Entities and relations of one chunk by rule."""
    lines = [line for line in text.splitlines() if line.strip()]
    capitalised = _mid_sentence_names(lines)
    first_names = _first_names(lines)
    entities: dict[str, EntityMention] = {}
    relations: list[RelationMention] = []
    speakers: list[str] = []
    date = None
    for line in lines:
        header = TIME_HEADER.match(line)
        if header:
            date = "{}-{}-{}".format(*header.groups()[:3])
            entities.setdefault(date, EntityMention(date, "date", "date of the conversation"))
            continue
        speaker, message = _split_speaker(line)
        spans = [_Span(s.start, first_names.get(s.name.lower(), s.name), s.type)
                 for s in _spans(message, capitalised)]
        snippet = message[:SNIPPET_CHARS]
        for span in spans:
            entities.setdefault(span.name, EntityMention(span.name, span.type, snippet))
        if speaker:
            entities.setdefault(speaker, EntityMention(speaker, "person", "speaker in the chat"))
            relations.extend(_speaker_relations(speaker, spans, snippet))
            if speakers and speakers[-1] != speaker:
                relations.append(RelationMention(speakers[-1], speaker, "talks with", snippet, 4.0))
            speakers.append(speaker)
        relations.extend(_cooccurrences(spans, snippet))
    if date:
        relations.extend(RelationMention(s, date, "conversation on", f"{s} chats on {date}", 5.0)
                         for s in dict.fromkeys(speakers))
    for concept in _concepts(lines, entities):
        entities.setdefault(concept, EntityMention(concept, "concept", _first_line_with(lines, concept)))
        relations.extend(RelationMention(s, concept, "talks about", _first_line_with(lines, concept), 3.0)
                         for s in dict.fromkeys(speakers) if concept in _said_by(lines, s))
    return list(entities.values()), _strongest(relations)


def _first_names(lines: list[str]) -> dict[str, str]:
    # In a chat, "Adam" addressed in a message is the speaker "AdamSmith" of the same chunk.
    out: dict[str, str] = {}
    for speaker in {s for s, _ in map(_split_speaker, lines) if s}:
        first = CAMEL_PART.match(speaker)
        if first and first.group().lower() != speaker.lower():
            out.setdefault(first.group().lower(), speaker)
    return out


def _split_speaker(line: str) -> tuple[str | None, str]:
    match = SPEAKER.match(line)
    if match and match.group(1).lower() not in STOPWORDS:
        return match.group(1), match.group(2)
    return None, line


def _spans(message: str, capitalised: set[str]) -> list[_Span]:
    spans: list[_Span] = []
    taken: list[range] = []
    for kind, pattern in PATTERNS:
        for match in pattern.finditer(message):
            value = match.group(match.lastindex or 0)
            _add(spans, taken, match.start(), match.end(), value, kind)
    for match in NAME.finditer(message):
        name = _trim(match.group())
        start = match.start() + max(0, match.group().find(name))
        if _is_name(name, message, start, capitalised):
            _add(spans, taken, start, match.end(), name, "name")
    return sorted(spans, key=lambda s: s.start)


def _trim(span: str) -> str:
    # "Hey Adam" → "Adam", "The Bakery" → "Bakery", "Hailey's" → "Hailey".
    words = span.split()
    while len(words) > 1 and words[0].lower() in STOPWORDS:
        words.pop(0)
    return POSSESSIVE.sub("", " ".join(words))


def _add(spans: list[_Span], taken: list[range], start: int, end: int, name: str, kind: str) -> None:
    if any(start in r or (end - 1) in r for r in taken):
        return
    taken.append(range(start, end))
    spans.append(_Span(start, name.strip(), kind))


def _is_name(name: str, message: str, start: int, capitalised: set[str]) -> bool:
    words = name.split()
    if not words or all(w.lower() in STOPWORDS for w in words):
        return False
    if len(words) > 1 or any(c.isupper() for c in name[1:]):
        return True
    at_start = SENTENCE_START.search(message[:start]) is not None
    return not at_start or name in capitalised


def _mid_sentence_names(lines: list[str]) -> set[str]:
    # Single capitalised words that also appear capitalised mid-sentence: names, not openers.
    found = set()
    for line in lines:
        _, message = _split_speaker(line)
        for match in NAME.finditer(message):
            name = _trim(match.group())
            start = match.start() + max(0, match.group().find(name))
            if SENTENCE_START.search(message[:start]) is None:
                found.update(name.split())
    return found


def _speaker_relations(speaker: str, spans: list[_Span], snippet: str) -> list[RelationMention]:
    return [RelationMention(speaker, span.name, "mentions", f"{speaker}: {snippet}", 6.0)
            for span in spans]


def _cooccurrences(spans: list[_Span], snippet: str) -> list[RelationMention]:
    out = []
    for i, first in enumerate(spans):
        for second in spans[i + 1:]:
            closeness = math.exp(-(second.start - first.start) / 60.0)
            out.append(RelationMention(first.name, second.name, "co-occur", snippet,
                                       round(1.0 + 8.0 * closeness, 2)))
    return out


def _concepts(lines: list[str], entities: dict[str, EntityMention]) -> list[str]:
    known = {w.lower() for name in entities for w in name.split()}
    counts = Counter(w for line in lines for w in WORD.findall(_split_speaker(line)[1])
                     if w not in STOPWORDS and w not in known)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))
    return [word for word, _ in ranked[:CONCEPTS_PER_CHUNK]]


def _first_line_with(lines: list[str], word: str) -> str:
    return next((line[:SNIPPET_CHARS] for line in lines if word in line.lower()), "")


def _said_by(lines: list[str], speaker: str) -> str:
    return " ".join(m for s, m in map(_split_speaker, lines) if s == speaker).lower()


def _strongest(relations: list[RelationMention]) -> list[RelationMention]:
    # One relation per unordered pair (strongest statement wins), the strongest few kept.
    best: dict[tuple[str, str], RelationMention] = {}
    for relation in relations:
        first, second = sorted((relation.source.casefold(), relation.target.casefold()))
        pair = (first, second)
        if pair[0] != pair[1] and (pair not in best or relation.strength > best[pair].strength):
            best[pair] = relation
    ranked = sorted(best.values(), key=lambda r: (-r.strength, r.source, r.target))
    return ranked[:RELATIONS_PER_CHUNK]
