"""Focused context: the few evidence lines a small model needs, in a compact numbered form.

``retrieve`` returns chunks; a 0.5B model reading a thousand tokens of raw chunks loses the
evidence (and most of the latency is their prefill). Here the documents of the retrieved chunks
are cut into lines (chat messages with their speaker; passage sentences with their title), each
line is scored against the question with what the runtime already has (the embedder's cosine,
lexical overlap by rapidfuzz, the retrieval rank of its document), and the best lines fill a
token budget, grouped by source in their original order under a one-line header:

    [1] 20260105_14:00
    AdamBerg: Can you check in at 5:30 PM?
    AnnaLee: Sure, 5:30 PM works.
Beyond the paper (§3 stops at retrieval): the "answer stage" of issue 14. Design: docs/design/answer.md
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import fuzz, process

from ..lexicon import QUESTION_WORDS, STOPWORDS
from ..retrieve import RetrievedChunk

CHAT_HEADER = re.compile(r"^\s*Time:\s*(\d{8}_?\d{2}:?\d{2})\s*$")
SPEAKER = re.compile(r"^([^\s:][^:\n]{0,40}?):\s+(\S.*)$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")
CONTENT_WORD = re.compile(r"[A-Za-z0-9][\w'\-]*")
# A line's score terms beside its cosine, and its shape (docs/design/answer.md).
LEXICAL_WEIGHT = 0.3  # IDF-weighted overlap with the question's content words
HIT_WEIGHT = 0.1  # a line of a retrieved chunk itself
RANK_WEIGHT = 0.05  # less per place of its document in the retrieval order
TYPE_WEIGHT = 0.1  # a line holding a span of the answer's type (a time for "what time")
DAY_WEIGHT = 0.3  # a line of a document of the day the question names
REPLY_DECAY = 0.05  # a chat reply scores at least its predecessor's score less this per step
MAX_LINE_TOKENS = 64  # a longer line is cut
FUZZY_WORD = 85  # rapidfuzz ratio at which a line's word matches a question word


@dataclass
class Line:
    """One candidate line of evidence: its document (by retrieval order), place and text."""

    doc: int
    position: int
    text: str
    score: float = 0.0
    tokens: int = 0


@dataclass
class SourceDoc:
    """A retrieved document cut into lines, with its header (chat date or passage title);
    ``on_day`` when it is from a date the question names."""

    chunk: RetrievedChunk
    header: str
    lines: list[str]
    chat: bool = False
    hits: list[str] = field(default_factory=list)
    on_day: bool = False
    numbered: list[str] = field(default_factory=list)  # the document's non-blank lines, header first

    def line_number(self, text: str) -> int | None:
        """The 1-based number, among the document's non-blank lines, of the line holding
        ``text`` (None when none does)."""
        return next((n for n, line in enumerate(self.numbered, 1) if text and text in line), None)


@dataclass
class Focus:
    """The chosen evidence: numbered sources with their lines, and what the choice saw."""

    sources: list[tuple[SourceDoc, list[Line]]] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)

    def render(self) -> str:
        """The compact numbered form shown to the model."""
        blocks = []
        for number, (doc, lines) in enumerate(self.sources, 1):
            head = f"[{number}] {doc.header}".rstrip()
            blocks.append("\n".join([head, *(line.text for line in lines)]))
        return "\n".join(blocks)

    def text(self) -> str:
        """Every chosen line with its header, for searching spans and names."""
        return "\n".join(doc.header + "\n" + "\n".join(ln.text for ln in lines)
                         for doc, lines in self.sources)


def split_document(chunk: RetrievedChunk, texts: Sequence[str],
                   hits: Sequence[str] = ()) -> SourceDoc:
    """A document (given as its chunks' texts, in order) cut into lines under a header.

    Chunks overlap and cut lines in two: a line contained in a longer one is dropped.
    """
    raw = [line.strip() for text in texts for line in text.split("\n") if line.strip()]
    header = CHAT_HEADER.match(raw[0]) if raw else None
    numbered = _whole_lines(raw)
    if header:
        lines = _whole_lines(raw[1:])
        return SourceDoc(chunk, header.group(1), lines, True, list(hits), numbered=numbered)
    title, body = (raw[0], raw[1:]) if len(raw) > 1 and len(raw[0].split()) <= 12 else ("", raw)
    sentences = [s for line in _whole_lines(body) for s in SENTENCE_END.split(line) if s.strip()]
    return SourceDoc(chunk, title, sentences, False, list(hits), numbered=numbered)


def _whole_lines(lines: list[str]) -> list[str]:
    kept: list[str] = []
    for line in dict.fromkeys(lines):
        if any(line in other and line != other for other in lines):
            continue
        kept.append(line)
    return kept


def content_words(text: str) -> list[str]:
    """The question's words that carry meaning (no stopwords or question words)."""
    words = [w.lower() for w in CONTENT_WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS | QUESTION_WORDS and len(w) > 2))


def lexical_overlap(words: list[str], text: str, weights: dict[str, float] | None = None) -> float:
    """Weighted share of the words found in the text (spelling variants allowed)."""
    if not words:
        return 0.0
    found = [w.lower() for w in CONTENT_WORD.findall(text)]
    if not found:
        return 0.0
    scores = process.cdist(words, found, scorer=fuzz.ratio, dtype=np.float32, workers=1)
    weight = np.array([(weights or {}).get(w, 1.0) for w in words])
    return float(weight[scores.max(axis=1) >= FUZZY_WORD].sum() / weight.sum())


def rarity(words: list[str], texts: list[str]) -> dict[str, float]:
    """IDF of each word over the candidate lines: a name on every line tells little."""
    lowered = [t.lower() for t in texts]
    return {w: float(np.log(1 + len(texts) / (1 + sum(w in t for t in lowered)))) for w in words}


def choose(question: str, docs: list[SourceDoc], embed: Callable[[list[str]], np.ndarray],
           cut: Callable[[str, int], tuple[str, int]], budget: int,
           answer_span: re.Pattern[str] | None = None, replies: bool = True) -> Focus:
    """Score every line against the question and keep the best within ``budget`` tokens.

    ``cut(text, n)`` returns the text cut to at most ``n`` tokens and its token count; ``replies``
    carries a chat line's score to the replies that follow it.
    """
    lines = [Line(d, p, text) for d, doc in enumerate(docs) for p, text in enumerate(doc.lines)]
    if not lines:
        return Focus()
    _score(question, lines, docs, embed)
    if replies:
        _carry_to_replies(lines, docs)
    # After the carry: the reply that holds a span of the answer's type ("around 5:30 PM" to
    # "When's a good time?") keeps its bonus over lines that only carry their question's score.
    if answer_span is not None:
        for line in lines:
            line.score += TYPE_WEIGHT * bool(answer_span.search(line.text))
    chosen = _fill(sorted(lines, key=lambda ln: -ln.score), cut, budget)
    return _group(chosen, docs)


def _score(question: str, lines: list[Line], docs: list[SourceDoc],
           embed: Callable[[list[str]], np.ndarray]) -> None:
    # Passage sentences are embedded with their title: "He directed ..." needs its subject.
    texts = [question] + [(docs[ln.doc].header + ": " if not docs[ln.doc].chat else "") + ln.text
                          for ln in lines]
    vectors = embed(texts)
    cosine = vectors[1:] @ vectors[0]
    words = content_words(question)
    weights = rarity(words, texts[1:])
    for line, cos, context in zip(lines, cosine, texts[1:]):
        # Lines of the retrieved chunks themselves get a small bonus over the rest of the document.
        hit = any(line.text in text for text in docs[line.doc].hits)
        # A question naming a date is about that day's documents (``SourceDoc.on_day``).
        line.score = float(cos) + LEXICAL_WEIGHT * lexical_overlap(words, context, weights) \
            + HIT_WEIGHT * hit - RANK_WEIGHT * line.doc + DAY_WEIGHT * docs[line.doc].on_day


def _carry_to_replies(lines: list[Line], docs: list[SourceDoc]) -> None:
    # In a chat the answer is often the reply to the line that matches the question ("When can
    # I come by?" - "Around 5:30 PM"): a message scores at least its predecessors' scores, less
    # REPLY_DECAY per step back.
    own = [line.score for line in lines]
    for i, line in enumerate(lines):
        if docs[line.doc].chat:
            for back in (1, 2):
                if i >= back and lines[i - back].doc == line.doc:
                    line.score = max(line.score, own[i - back] - REPLY_DECAY * back)


def _fill(ranked: list[Line], cut: Callable[[str, int], tuple[str, int]], budget: int) -> list[Line]:
    chosen, used, headers = [], 0, set()
    for line in ranked:
        line.text, tokens = cut(line.text, MAX_LINE_TOKENS)
        line.tokens = tokens + 1
        cost = line.tokens + (0 if line.doc in headers else 8)
        if used + cost > budget:
            continue
        chosen.append(line)
        used += cost
        headers.add(line.doc)
    return chosen


def _group(chosen: list[Line], docs: list[SourceDoc]) -> Focus:
    # Sources ordered by their best line; lines in document order, long ones cut.
    order = list(dict.fromkeys(ln.doc for ln in chosen))
    sources = []
    for d in order:
        lines = sorted((ln for ln in chosen if ln.doc == d), key=lambda ln: ln.position)
        sources.append((docs[d], lines))
    return Focus(sources, chosen)
