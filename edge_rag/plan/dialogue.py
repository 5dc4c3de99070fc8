"""A follow-up question made standalone from the turns before it, without a language model.

``resolve`` reads the question and the previous turns (OpenAI messages): a question that names
what it is about is left as it is; a follow-up ("Who with?", "And on Sunday?", "What about
Emily?", "When did she send it?", "... three days later?") is rewritten from the previous
question: its frame with one slot replaced, a relative day counted from the previous turn's date,
a pronoun replaced by the one person the previous turn names, or else the previous question's
topic added in brackets. ``lookup`` tells which words of a text are names the index knows, and
of what type (so that a person can stand for "he" or "she").

Design: docs/design/dialogue.md
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadHistory
from ..lexicon import MONTHS, QUERY_STOPWORDS, WEEKDAYS, entity_key
from ..questions import word_grams

# The names of a text, each as written there with its graph type ("person", "" when unknown).
Lookup = Callable[[str], list[tuple[str, str]]]
PEOPLE = ("person", "name")  # the graph types a pronoun can stand for

PERSONAL = re.compile(r"\b(?:he|she|him|her|his|hers|himself|herself)\b", re.IGNORECASE)
THINGS = re.compile(r"\b(?:it|they|them|there)\b", re.IGNORECASE)  # "its", "their": mostly a noun nearby
# "about that?", "on that lecture", "besides those suggestions" (not "the survey that Jennifer ...").
DEMONSTRATIVE = re.compile(
    r"\b(?:that|this|those|these)\b(?=\s*[?.!,]|\s*$)"
    r"|\b(?:about|of|on|for|with|to|do|did|in|from|at|after|before|over|besides|like|during|make|see"
    r"|try|visit|attend|watch) (?:that|this|those|these)\b(?! (?-i:[A-Z]))", re.IGNORECASE)
OBJECT_NEXT = re.compile(r"(?:to|about|a|an|the|for|with|on|that|if|and|what|when|how|why|whether|back)\b")
ABOUT = re.compile(r"^\s*(?:and|so|but)?\s*(?:what|how) about\s+(?P<slot>[^?.!]+)[?.!]?\s*(?P<rest>.*)$",
                   re.IGNORECASE)
AND = re.compile(r"^\s*and\s+(?P<slot>[^?]+)\?\s*$", re.IGNORECASE)
# Days counted from the previous turn's: "three days later", "the next day", "a week earlier".
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10}
SHIFT = re.compile(r"\b(?:(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten) "
                   r"(?P<unit>days?|weeks?) (?P<way>later|earlier|before|after)"
                   r"|the (?P<next>next|following|previous) day|the day (?P<rel>before|after))\b",
                   re.IGNORECASE)
SAME_DAY = re.compile(r"\b(?:that|the same) (?:day|evening|morning|afternoon|night)(?:'s)?\b", re.IGNORECASE)
DATE = re.compile(r"\b(20\d\d)(\d\d)(\d\d)\b")
TIME_SLOT = re.compile(rf"^(?:on |in |at |by |for )?(?:(?:{WEEKDAYS})\b|(?:{MONTHS})\b|20\d{{6}}\b"
                       r"|(?:the )?(?:morning|evening|afternoon|night|weekend)\b|\d)", re.IGNORECASE)
SLOT_IN_FRAME = re.compile(rf"\b(?:on |in |at |by )?(?:(?:{WEEKDAYS})|20\d{{6}}"
                           rf"|(?:{MONTHS})(?: \d{{1,2}}(?:st|nd|rd|th)?)?(?: 20\d\d)?)\b", re.IGNORECASE)
OPENER = re.compile(r"^\s*(?:(?:what|which|who|whom|whose|when|where|why|how)(?: \w+)?? )?"
                    r"(?:is|are|was|were|do|does|did|has|have|had|will|would|can|could|should)\s+",
                    re.IGNORECASE)
TOPIC = re.compile(r"(?<=[?.!]) \(((?:[^()]|\([^()]*\))*)\)$")  # the bracket ``_rewrite`` adds
CITATIONS = re.compile(r"\s*\[\d+(?:,\s*\d+)*\]|\s+—\s+\".*$")
SENTENCE_START = re.compile(r"(?:^|[.?!:]\s*|\()$")
CALENDAR = re.compile(rf"(?:{MONTHS}|{WEEKDAYS})s?", re.IGNORECASE)
# How follow-ups are told and rewritten (dialogue.md):
SHORT = 4  # words: a question this short that names nothing is an ellipsis ("Who with?")
VAGUE = 7  # words: a question up to this long that names nothing leans on the turn before
MAX_ANSWER_WORDS = 12  # the previous answer goes with the topic when it is this short


@dataclass(frozen=True)
class Exchange:
    """One earlier exchange: what the user asked and what the assistant answered."""

    question: str
    answer: str = ""


@dataclass(frozen=True)
class Resolution:
    """A question and the standalone question it stands for; ``cues`` say why it is a follow-up
    (empty for a question that stands alone, left as it is)."""

    question: str
    resolved: str
    cues: tuple[str, ...] = ()
    previous: Exchange | None = None
    names: tuple[str, ...] = field(default=())  # the previous turn's names, the walk's memory

    @property
    def follow_up(self) -> bool:
        """Whether the question needed the turns before it."""
        return bool(self.cues)

    @property
    def asked(self) -> str:
        """The question the answer is asked: ``resolved`` without the previous turn's topic (the
        prompt carries that on a line of its own)."""
        return split_topic(self.resolved)[0]


def turns(history: Sequence[dict[str, Any]] | None) -> list[Exchange]:
    """The user questions of an OpenAI message list, each with the assistant reply after it
    (system and other messages are skipped); ``BadHistory`` for anything but such a list."""
    out: list[Exchange] = []
    if history is not None and not isinstance(history, (list, tuple)):
        raise BadHistory("history must be a list of {'role': ..., 'content': ...} messages")
    for message in history or ():
        if not isinstance(message, dict) or not isinstance(message.get("content"), (str, type(None))):
            raise BadHistory("every history message must be {'role': ..., 'content': text}")
        role, content = message.get("role"), message.get("content") or ""
        if role == "user":
            out.append(Exchange(content.strip()))
        elif role == "assistant" and out and not out[-1].answer:
            out[-1] = Exchange(out[-1].question, clean_answer(content))
    return out


def names_in(text: str, types: Callable[[list[str]], dict[str, str]]) -> list[tuple[str, str]]:
    """The names of ``text`` in order, each with its type: capitalised word runs whose entity key
    (spaced, or compacted: "Adam Smith" is "AdamSmith") ``types`` knows, and capitalised words
    that open no sentence and are no month or weekday (type ""); none inside a longer one. A
    sentence's first word counts only as a known person ("Covering what topics?" names nothing)."""
    grams = [_bare(g) for g in word_grams(text) if g[:1].isupper() and g.lower() not in QUERY_STOPWORDS]
    keys = {g: (entity_key(g), entity_key(g).replace(" ", "")) for g in grams}
    known = types(sorted({k for pair in keys.values() for k in pair}))
    found = {g: known.get(keys[g][0], known.get(keys[g][1])) for g in grams}
    found.update({g: "" for g in grams if found[g] is None and " " not in g})
    names = [g for g, kind in found.items() if kind is not None
             and (" " in g or kind in PEOPLE or _inside_sentence(g, text))]
    longest = [g for g in names if not any(g != o and f" {g} " in f" {o} " for o in names)]
    return [(g, found[g] or "") for g in sorted(longest, key=text.find)]


def _bare(gram: str) -> str:
    return re.sub(r"['’]s$", "", gram)


def _inside_sentence(word: str, text: str) -> bool:
    if CALENDAR.fullmatch(word):
        return False
    places = re.finditer(rf"\b{re.escape(word)}\b", text)
    return any(not SENTENCE_START.search(text[:m.start()]) for m in places)


def clean_answer(text: str) -> str:
    """An answer without its citations and the source words quoted after it."""
    return CITATIONS.sub("", text).strip()


def resolve(question: str, history: Sequence[dict[str, Any]] | None, lookup: Lookup) -> Resolution:
    """The standalone form of ``question`` after ``history``: earlier follow-ups are resolved
    first, so that a third turn reads the second as it was understood."""
    previous: Exchange | None = None
    for turn in turns(history):
        previous = Exchange(resolve_turn(turn.question, previous, lookup).resolved, turn.answer)
    return resolve_turn(question, previous, lookup)


def resolve_turn(question: str, previous: Exchange | None, lookup: Lookup) -> Resolution:
    """``question`` after the one turn ``previous`` (see ``resolve``)."""
    question = question.strip()
    if previous is None or not question:
        return Resolution(question, question)
    before = lookup(f"{previous.question} {previous.answer}")
    names = tuple(dict.fromkeys(n for n, _ in before))
    cues = follow_up_cues(question, lookup)
    if not cues:
        return Resolution(question, question)
    resolved = _rewrite(question, previous, before, cues, lookup)
    return Resolution(question, resolved, cues, previous, names)


def follow_up_cues(question: str, lookup: Lookup) -> tuple[str, ...]:
    """Why a question needs the turns before it: ``about`` ("What about X?", "And X?"), ``time``
    (a day counted from another), ``pronoun`` (he, she, it, they with no name before them),
    ``demonstrative`` ("that lecture"), ``ellipsis`` (a few words that name nothing),
    ``unnamed`` (up to ``VAGUE`` words and no name)."""
    known = lookup(question)
    cues = []
    if ABOUT.match(question) or AND.match(question):
        cues.append("about")
    if SHIFT.search(question) or SAME_DAY.search(question):
        cues.append("time")
    if _pronoun_without_antecedent(question, known):
        cues.append("pronoun")
    if DEMONSTRATIVE.search(question):
        cues.append("demonstrative")
    if not known and len(question.split()) <= VAGUE:
        cues.append("ellipsis" if len(question.split()) <= SHORT else "unnamed")
    return tuple(cues)


def _pronoun_without_antecedent(question: str, known: list[tuple[str, str]]) -> bool:
    """A pronoun with no name before it that it can stand for: "they" needs two names, "there"
    one, he or she a person, "him" or "her" (an object) a person other than the only one named."""
    people = [n for n, t in known if t in PEOPLE]
    for match in list(PERSONAL.finditer(question))[:1] + list(THINGS.finditer(question))[:1]:
        word, earlier = match.group().lower(), question[:match.start()]
        if word in ("they", "them"):
            if len(known) < 2:
                return True
        elif word == "there" or word == "it":
            if not known or word == "it":
                return True
        elif _object(question, match) and len(people) <= 1 or not any(p in earlier for p in people):
            return True
    return False


def _object(question: str, match: re.Match[str]) -> bool:
    """Whether a "him" or "her" is an object (not "her storyline")."""
    word = match.group().lower()
    after = question[match.end():].lstrip().lower()
    return word == "him" or word == "her" and (not after[:1].isalpha() or bool(OBJECT_NEXT.match(after)))


def _rewrite(question: str, previous: Exchange, before: list[tuple[str, str]], cues: tuple[str, ...],
             lookup: Lookup) -> str:
    """The follow-up rewritten: the frame with one slot replaced, a day counted, a pronoun
    replaced, else the previous question's topic added."""
    if "about" in cues:
        swapped = _swap_slot(question, previous, before)
        if swapped:
            return swapped
    text = _count_days(question, previous) if "time" in cues else question
    text = _replace_person(text, before, lookup) if "pronoun" in cues else text
    if _grounded(text, lookup):
        return text
    return f"{text.rstrip()} ({topic(previous)})"


def _grounded(text: str, lookup: Lookup) -> bool:
    # Rewritten, it is a question that stands alone: it names something, leans on nothing.
    return not follow_up_cues(text, lookup)


def split_topic(resolved: str) -> tuple[str, str]:
    """A resolved question as (the question to answer, the previous turn's topic in one line): the
    topic is the bracket ``_rewrite`` adds ("Who with? (Anna's dinner: 7 PM)"); none, ""."""
    found = TOPIC.search(resolved)
    return (resolved[:found.start()], found.group(1)) if found else (resolved, "")


def topic(previous: Exchange) -> str:
    """The previous turn in a few words: its question without the question word, and its answer
    when short ("Anna's meeting about the new homepage: March 6th at 2 PM")."""
    asked = OPENER.sub("", previous.question).rstrip(" ?")
    answer = previous.answer.rstrip(".")
    if answer and len(answer.split()) <= MAX_ANSWER_WORDS and not _abstains(answer):
        return f"{asked}: {answer}"
    return asked


def _abstains(answer: str) -> bool:
    return bool(re.search(r"insufficient information|not (?:contain|mention|say)", answer, re.IGNORECASE))


def _swap_slot(question: str, previous: Exchange, before: list[tuple[str, str]]) -> str | None:
    """"What about X?" / "And X?" as the previous question with X in the slot it fills: a time
    for a time, a name for the previous question's person (else its first name); "What about
    X? <question>" as that question about X. None when X fills no slot."""
    match = ABOUT.match(question) or AND.match(question)
    if match is None:
        return None
    slot, rest = match.group("slot").strip(), (match.groupdict().get("rest") or "").strip()
    if rest:
        found = PERSONAL.search(rest)
        return rest[:found.start()] + slot + rest[found.end():] if found and _is_name(slot) else None
    frame = previous.question
    if TIME_SLOT.match(slot):
        found = SLOT_IN_FRAME.search(frame)
        return (frame[:found.start()] + slot + frame[found.end():] if found
                else f"{frame.rstrip(' ?')} {slot}?")
    asked = [(n, t) for n, t in before if n in frame]
    if not asked or not _is_name(slot):
        return None
    person = next((n for n, t in asked if t in PEOPLE), asked[0][0])
    return _possessive_safe(frame, person, slot)


def _is_name(text: str) -> bool:
    """Every word capitalised ("Anna Berg", "Emily"), at most three of them."""
    words = _bare(text).split()
    return 0 < len(words) <= 3 and all(w[:1].isupper() for w in words)


def _possessive_safe(frame: str, old: str, new: str) -> str:
    """``frame`` with its first ``old`` replaced by ``new`` ("X's" becomes "new's")."""
    new = new[:-2] if new.endswith("'s") else new
    return frame.replace(old, new, 1)


def _count_days(question: str, previous: Exchange) -> str:
    """Relative days ("three days later", "that evening") as the date counted from the previous
    turn's (YYYYMMDD), when it names one."""
    found = DATE.search(previous.question) or DATE.search(previous.answer)
    if found is None:
        return question
    day = dt.date(*(int(g) for g in found.groups()))

    def shifted(match: re.Match[str]) -> str:
        if match.group("next") or match.group("rel"):
            step = -1 if (match.group("next") or match.group("rel")) in ("previous", "before") else 1
        else:
            n = NUMBERS.get(match.group("n").lower()) or int(match.group("n"))
            step = n * (7 if match.group("unit").startswith("week") else 1)
            step *= -1 if match.group("way") in ("earlier", "before") else 1
        return f"on {(day + dt.timedelta(days=step)).strftime('%Y%m%d')}"

    text = SHIFT.sub(shifted, question)
    return SAME_DAY.sub(lambda m: f"{'the' if m.group().endswith('s') else 'on'} {day:%Y%m%d}", text)


def _replace_person(text: str, before: list[tuple[str, str]], lookup: Lookup) -> str:
    """The first he, she, him, her or his replaced by the previous turn's person, when it names
    only one that the question does not (with two, which one is meant needs more than words)."""
    named = {n.lower() for n, _ in lookup(text)}
    people = list(dict.fromkeys(n for n, t in before if t in PEOPLE and n.lower() not in named))
    match = PERSONAL.search(text)
    if len(people) != 1 or match is None:
        return text
    word = match.group().lower()
    owner = word in ("his", "hers") or word == "her" and not _object(text, match)
    person = f"{people[0]}'s" if owner else people[0]
    return text[:match.start()] + person + text[match.end():]
