"""What a question says, read without a model or an index: the probes that both the planner
(``plan``) and the retrievers (``retrieve``) ask, in one module below both.

- Specific terms and word n-grams (``query_terms``, ``word_grams``), full dates (``iso_dates``).
- Titles (``titled_chunks``, ``names_a_title``, ``compares_titles``): which documents a question
  names by title, through the index's ``TitleFinder`` (``retrieve/title_links.py``), read lazily.
- Event clauses (``clauses``): a question that orders or measures two events is cut into one
  clause per event, each retrieved on its own by ``ppr``.
- Bridge questions (``first_hop``): "Where was the director of film X born?" becomes "Who is the
  director of film X?" and "Where was {} born?", answered one link at a time.
- Either-or questions about dates (``comparison``): one when-question per option, and whether the
  earlier or the later date wins; the dates are compared in code, not by the model.

Design: docs/design/questions.md
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from .lexicon import HOP_NOUNS, KIN_HOPS, QUESTION_WORDS, STOPWORDS, names_a_relation, specific_terms

# Event clauses and n-grams (docs/design/questions.md).
MIN_WORDS = 4  # a clause of fewer words is glued back to its neighbour
MAX_CLAUSES = 3  # clauses a question is cut into at most
_ORDER = re.compile(r"\b(before|after)\b", re.IGNORECASE)
_BETWEEN = re.compile(r"\bbetween\b(.+)", re.IGNORECASE)
_AND = re.compile(r"\b(and)\b", re.IGNORECASE)
_FROM_TO = re.compile(r"\bfrom\b(.+?)\b(to)\b(.+)", re.IGNORECASE)
MAX_GRAM = 6  # the longest word n-gram looked up as an entity name (questions.md)
FILLER = STOPWORDS | QUESTION_WORDS | {"i"}
MONTH_NUMBER = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                               "oct", "nov", "dec"))}
_COMPACT_DATE = re.compile(r"(?<![\d-])((?:19|20)\d{2})-?(0[1-9]|1[0-2])-?(0[1-9]|[12]\d|3[01])(?![\d-])")
_LONG_DATE = re.compile(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (\d{1,2})"
                        r"(?:st|nd|rd|th)?,? ((?:19|20)\d{2})\b", re.IGNORECASE)
_WORD = re.compile(r"[\w'\-]+")
# A name as questions write it: capitalised words (digits, brackets, dashes, commas within), joined
# by the small words of names ("Hermann II, Landgrave of Hesse", "Aleksander Koniecpolski (1620–1659)").
_NAME_WORD = r"[A-Z0-9(][\w.'’\-–()]*"
_NAME_RUN = (rf"{_NAME_WORD}(?:,?\s+(?:(?:of|de|von|van|der|la|le|du|del|da|di|y|and|bin|bint|al|ibn|the)"
             rf"\s+)*{_NAME_WORD})*")
_KIN = "|".join(map(re.escape, KIN_HOPS))
_POSSESSIVE = re.compile(rf"({_NAME_RUN})['’]s\s+({_KIN}|{HOP_NOUNS})\b")
_KIN_WORDS = re.compile(rf"\b({_KIN})\b", re.IGNORECASE)
_LINK = re.compile(rf"\bthe\s+({HOP_NOUNS})\s+of\s+", re.IGNORECASE)
# What the outer question says after the description: "... born?", "... graduate from?".
_TAIL = re.compile(r"\s+(?:(?:was|is|were)\s+)?(?:born|die|died|buried|study|studied|graduate(?:d)? from|"
                   r"work|worked|live|lived|won|win|receive|received|earn|earned|get|got|come from|from|"
                   r"located)\b[^?]*\?\s*$"
                   r"|\s*\?\s*$")
_ONE_LINK = re.compile(r"(?:who|whom|what)\s+(?:is|was|are|were)\s+\{\}\s*\?", re.IGNORECASE)
MAX_HOPS = 3  # links of a bridge question followed at most (questions.md)


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


class TitleFinder(Protocol):
    """The index's document titles (``retrieve.title_links.TitleIndex``)."""

    def find(self, text: str, capitalised: bool = False) -> list[int]:
        """First chunks of the documents whose titles the text contains."""
        ...


def word_grams(question: str) -> list[str]:
    """The question's word n-grams up to ``MAX_GRAM`` words, shortest first, in order."""
    words = _WORD.findall(question)
    return [" ".join(words[i : i + n]) for n in range(1, MAX_GRAM + 1) for i in range(len(words) - n + 1)]


def query_terms(question: str) -> tuple[list[str], list[str]]:
    """TR's K_e without fuzzy matching: the question's specific terms (name spans, dates, times,
    quantities, quoted titles) and its word n-grams up to ``MAX_GRAM`` words, which seed only
    where they are exactly an entity's normalised name. Filler (only stopwords and question
    words) is dropped from both. Remembered for the last few questions: ``auto``'s planner
    reads the same terms before ``ppr`` does."""
    terms, grams = _query_terms(question)
    return list(terms), list(grams)


@lru_cache(maxsize=16)
def _query_terms(question: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    grams = set(word_grams(question))
    useful = lambda text: not all(w.lower() in FILLER for w in text.split())
    terms = tuple(t for t in specific_terms(question) if useful(t)) + tuple(iso_dates(question))
    return tuple(dict.fromkeys(terms)), tuple(sorted(g for g in grams if useful(g)))


def forget_terms() -> None:
    """Forget the remembered questions' terms (``query_terms``), e.g. before timing a query."""
    _query_terms.cache_clear()


def names_a_seed(question: str, titles: Callable[[], TitleFinder | None]) -> bool:
    """Whether the question names something the walk can start from: one of its specific terms,
    else a document title (only then are the titles read). ``auto``'s ``names`` planner."""
    return bool(query_terms(question)[0]) or names_a_title(question, titles)


def titled_chunks(question: str, titles: Callable[[], TitleFinder | None]) -> list[int]:
    """The first chunks of the documents whose titles the question contains (``title_links.py``;
    none in an untitled corpus)."""
    found = titles()
    return found.find(question) if found is not None else []


def names_a_title(question: str, titles: Callable[[], TitleFinder | None]) -> bool:
    """Whether the question contains a document's title (only in titled corpora): the walk
    then steps from that document along its title links. ``auto``'s ``margin`` planner."""
    return bool(titled_chunks(question, titles))


def compares_titles(question: str, titles: Callable[[], TitleFinder | None]) -> bool:
    """Whether the question compares documents it names by title: two or more titles and no
    relation noun (``lexicon.RELATION_NOUNS``). ``auto``'s route to ``titles`` (``retrieve/titles.py``)."""
    return len(titled_chunks(question, titles)) >= 2 and not names_a_relation(question)


def iso_dates(question: str) -> list[str]:
    """The question's full dates written as the graph names them (``YYYY-MM-DD``, as the
    extractor writes a conversation's ``Time:`` header): "20260405", "20260901_13:00",
    "2026-04-05" and "April 5, 2026". A date is a strong seed: only the conversations of that
    day mention it."""
    found = [f"{y}-{m}-{d}" for y, m, d in _COMPACT_DATE.findall(question)]
    found += [f"{y}-{MONTH_NUMBER[m.lower()[:3]]:02d}-{int(d):02d}"
              for m, d, y in _LONG_DATE.findall(question)]
    return found


@dataclass(frozen=True)
class Hop:
    """The innermost link of a bridge question: ``inner`` asks for the bridge, ``outer`` is the
    rest of the question with ``{}`` where the bridge's name goes."""

    inner: str
    outer: str

    def then(self, bridge: str) -> str:
        """The rest of the question about the bridge found."""
        return self.outer.replace("{}", bridge, 1)


def first_hop(question: str) -> Hop | None:
    """The innermost link of a question that chains relation nouns, or ``None`` (questions.md):
    "Who is the father of the director of film X?" gives "Who is the director of film X?" and
    "Who is the father of {}?"."""
    text = _spelled_out(question.strip())
    links = list(_LINK.finditer(text))
    if not links or not (tail := _TAIL.search(text, links[-1].end())):
        return None
    link = links[-1]
    described = text[link.end():tail.start()].strip(" ,")
    outer = text[:link.start()] + "{}" + text[tail.start():]
    if not _names_one(described) or _ONE_LINK.fullmatch(outer.strip()):
        return None
    return Hop(f"Who is the {link[1].lower()} of {described}?", outer)


def _names_one(described: str) -> bool:
    """Whether a link's description reads as one named thing: after at most two lowercase words
    ("film", "song"), it starts and ends with a capitalised word and has no lowercase word
    between but small ones ("Gone with the Wind" does; neither "Anna Berg arrive" of "What time
    does Anna Berg's mother arrive?" nor "Jake move to Boston" of "When did the sister of Jake
    move to Boston?" does)."""
    words = described.split()
    while words and words[0][0].islower() and len(described.split()) - len(words) < 2:
        words.pop(0)
    return bool(words) and all(not w[0].islower() for w in (words[0], words[-1])) \
        and all(w.lower() in STOPWORDS for w in words[1:-1] if w[0].islower())


def _spelled_out(question: str) -> str:
    """"X's R" as "the R of X", kin words as their two links."""
    question = _POSSESSIVE.sub(lambda m: f"the {m[2]} of {m[1]}", question)
    return _KIN_WORDS.sub(lambda m: KIN_HOPS[m[1].lower()], question)


@dataclass(frozen=True)
class Comparison:
    """An either-or question about dates: a when-question per option and which date wins."""

    options: tuple[str, str]
    questions: tuple[str, str]
    earliest: bool  # the earlier date wins ("first", "earlier", "older"), else the later one


_EARLY = {"first", "earlier", "earliest", "older", "oldest", "sooner"}
_COMPARED = re.compile(
    r"^(?:which|who)\b(?P<head>.*?\b(?P<event>born|died|released|came out|published|founded|premiered|"
    r"older|younger)\b(?:\s+(?P<order>first|earlier|later|last|more recently|sooner))?[^,]*?),\s*"
    r"(?P<a>.+)\s+or\s+(?P<b>.+?)\s*\?\s*$", re.IGNORECASE)
# The same asked the other ways: "Was A or B born first?", "Who was born first out of A and B?".
_WAS_OR = re.compile(r"^(?:was|were|did)\s+(?P<a>.+?)\s+or\s+(?P<b>.+?)\s+"
                     r"(?P<head>(?P<event>born|die|come out)\s+(?P<order>first|earlier|later|last))\s*\?\s*$",
                     re.IGNORECASE)
_OUT_OF = re.compile(r"^who\s+(?P<head>(?:was|were)\s+(?P<event>born)\s+(?P<order>first|earlier|later))"
                     r"\s+out\s+of\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*\?\s*$", re.IGNORECASE)
_OF_WHOSE = re.compile(rf"\b(?:has|with)\s+the\s+({HOP_NOUNS})\b|\bwhose\s+({HOP_NOUNS})\b", re.IGNORECASE)
_WHEN = {"born": "When was {} born?", "older": "When was {} born?", "younger": "When was {} born?",
         "died": "When did {} die?", "founded": "When was {} founded?", "published": "When was {} published?"}


def comparison(question: str) -> Comparison | None:
    """The when-questions of an either-or question about dates, or ``None`` (questions.md)."""
    match = next((m for p in (_COMPARED, _WAS_OR, _OUT_OF) if (m := p.match(question.strip()))), None)
    event, order = _event_and_order(match) if match else ("", "")
    if not match or not order:
        return None
    options = (match["a"].strip(), match["b"].strip())
    of = _relation_of(match["head"], question)
    template = _WHEN.get(event, "When was {} released?")
    return Comparison(options, (template.format(of + options[0]), template.format(of + options[1])),
                      order in _EARLY)


def _event_and_order(match: re.Match[str]) -> tuple[str, str]:
    """What is dated ("born", "died", "released" ...) and which way it is compared ("" if not said);
    "older" and "younger" compare births."""
    event = {"die": "died", "come out": "came out"}.get(match["event"].lower(), match["event"].lower())
    if event in ("older", "younger"):
        return event, "first" if event == "older" else "later"
    return event, (match["order"] or "").lower()


def _relation_of(head: str, question: str) -> str:
    """"the director of film " when the options are compared through a relation ("Which film has
    the director born first"), else ""."""
    linked = _OF_WHOSE.search(head)
    if not linked:
        return ""
    noun = re.match(r"\s*(\w+)", head) if question.lower().startswith("which") else None
    return f"the {linked[1] or linked[2]} of {noun[1] + ' ' if noun else ''}"
