"""Answer forms by question type: what the first words of an answer must be.

A 0.5B model copies spans well and composes badly, so the start of the answer is constrained
to a span it can copy: a yes/no question starts with "Yes" or "No"; a who-question with a name
that occurs in the sources; a when/what-time question with a date or time from the sources; a
"which ..., A or B?" question with A or B. After that start the model writes freely (a short
reason and the citation). Questions of no known type get no constraint.

Design: docs/design/answer.md
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..lexicon import MONTHS, SAYING_VERBS, STOPWORDS, WEEKDAYS
from ..models.constraints import TokenMask

YES_NO = re.compile(r"^(?:question:\s*)?(?:did|does|do|is|are|was|were|has|have|had|can|could|will|"
                    r"would|should)\b", re.IGNORECASE)
WHO = re.compile(r"^(?:question:\s*)?(?:who|whom|whose)\b|\b(?:with|to|by) whom\b", re.IGNORECASE)
# "Who proposes ...?", "Who asks Jake to ...?": the person asked for is the one who said it.
WHO_SAID = re.compile(rf"^(?:question:\s*)?who\s+(?:first\s+)?(?:{SAYING_VERBS})\b", re.IGNORECASE)
TIME_QUESTION = re.compile(r"\bwhat time\b|\bat what time\b|\bwhat hour\b", re.IGNORECASE)
WHEN = re.compile(r"^(?:question:\s*)?when\b|\b(?:what|which) (?:day|date|year|month)\b"
                  r"|\bdate of (?:birth|death)\b", re.IGNORECASE)
CHOICE = re.compile(r",\s*([^,?]+?)\s+or\s+([^,?]+?)\s*\?\s*$")
CLOCK = r"(?:[01]?\d|2[0-3])(?::[0-5]\d)?"
TIME = (rf"(?:(?:from|around|at|after|before|by|until) )?(?:{CLOCK}\s?(?:-|to)\s?)?{CLOCK}"
        rf"\s?(?:[ap]\.?m\b\.?)|(?:[01]?\d|2[0-3]):[0-5]\d|noon|midnight")
DAY = (rf"(?:tomorrow|today|tonight|(?:this|next) (?:{WEEKDAYS}|week(?:end)?|morning|afternoon|"
       rf"evening)|(?:on )?(?:{WEEKDAYS})(?: (?:morning|afternoon|evening|night))?)")
TIME_SPAN = re.compile(rf"\b(?:(?:{DAY})\s+(?:at|around|from|by)\s+)?(?:{TIME})"
                       rf"|\b(?:{DAY})\b", re.IGNORECASE)
DATE = re.compile(rf"\b\d{{1,2}} (?:{MONTHS}) \d{{4}}\b|\b(?:{MONTHS}) \d{{1,2}}, \d{{4}}\b"
                  rf"|\b(?:{MONTHS}) \d{{4}}\b|\b(?:1[5-9]|20)\d\d\b", re.IGNORECASE)
STAMP = re.compile(r"\b\d{8}_\d{2}:\d{2}\b")
BIRTH_QUESTION = re.compile(r"\bborn\b|\bbirth\b", re.IGNORECASE)
DEATH_QUESTION = re.compile(r"\bdie[ds]?\b|\bdeath\b", re.IGNORECASE)
_FULL_DATE = (rf"\d{{1,2}} (?:{MONTHS}) \d{{3,4}}|(?:{MONTHS}) \d{{1,2}}, \d{{3,4}}|(?:{MONTHS}) \d{{3,4}}"
              r"|\d{3,4}")
# "(2 November 1649, in Halle – 24 May 1697, in Weissenfels)", "(Arabic: ...; born 22 May 1953)".
LIFE_SPAN = re.compile(rf"\(\s*(?:[^()]*?;\s*)?(?:born\s+)?(?P<birth>{_FULL_DATE})\b[^()–—]{{0,40}}?"
                       rf"\s*[–—-]\s*(?:died\s+)?(?P<death>{_FULL_DATE})\b", re.IGNORECASE)
BORN = re.compile(rf"\bborn\s+(?:on\s+|in\s+)?({_FULL_DATE})\b", re.IGNORECASE)
DIED = re.compile(rf"\bdied\s+(?:on\s+|in\s+)?({_FULL_DATE})\b", re.IGNORECASE)
NAME = re.compile(r"\b[A-Z][\w'\-]*(?:[ -](?:of |de |von |van |la |le )?[A-Z][\w'\-]*)*")
NOT_NAME = re.compile(rf"(?:{MONTHS}|{WEEKDAYS}|[AP]M|OK|Hi|Hey|Thanks|Yes|No|Sure|Sounds|Great)\W*",
                      re.IGNORECASE)
MAX_CANDIDATES = 40  # names or dates a forced start may choose from (answer.md)
SPEAKER_LINE = re.compile(r"^([^\s:][^:\n]{0,40}?):\s")


@dataclass(frozen=True)
class Form:
    """A question's answer form: its kind and the spans an answer may start with."""

    kind: str
    starts: tuple[str, ...] = ()


def question_kind(question: str) -> str:
    """yesno, choice, who, time, when or phrase."""
    if CHOICE.search(question) and re.match(r"^(?:which|who|what)\b", question, re.IGNORECASE):
        return "choice"
    if YES_NO.search(question):
        return "yesno"
    if WHO.search(question):
        return "who"
    if TIME_QUESTION.search(question):
        return "time"
    if WHEN.search(question):
        return "when"
    return "phrase"


def answer_form(question: str, evidence: str, chat: bool, best: list[str] | None = None) -> Form:
    """The form of the answer to ``question`` given the evidence text it will read.

    ``best`` (the evidence lines, best first) narrows who-answers in chats: the speaker of the
    best line, then names inside the best lines' messages.
    """
    kind = question_kind(question)
    if kind == "yesno":
        return Form(kind, ("Yes", "No"))
    if kind == "choice":
        match = CHOICE.search(question)
        return Form(kind, (match.group(1).strip(), match.group(2).strip()) if match else ())
    if kind == "who":
        # The question's own subject is not its answer ("Who invites Anna Lee ...?").
        names = _best_names(best) if chat and best else _names(evidence, chat)
        names = tuple(n for n in names if not _named_in(n, question))
        said = _best_speaker(best, question) if chat and best and WHO_SAID.search(question) else ""
        return Form(kind, (said,) if said else names)
    if kind in ("time", "when"):
        # A past event of a chat is dated by the chat ("When did ...?"); a planned one by what
        # the messages say ("When does/will ...?").
        past = re.search(r"^(?:question:\s*)?when (?:did|was|were)\b", question, re.IGNORECASE)
        spans = [] if past else [m.group().strip() for m in TIME_SPAN.finditer(_said_by_subject(
            question, evidence) if chat and kind == "time" else evidence)]
        if kind == "when":
            spans += STAMP.findall(evidence) if past or not spans else []
            dated = [m.group() for m in DATE.finditer(evidence)]
            spans = list(life_dates(question, evidence)) or spans + dated
        return Form(kind, _unique(spans))
    return Form(kind)


def life_dates(question: str, evidence: str) -> tuple[str, ...]:
    """For a question about a birth or a death, the dates the evidence gives as one: after "born"
    or "died", or first or second in a life span "(2 February 1282 – 3 December 1322)" (the
    English convention for a person's dates); ``()`` for other questions or when there is none."""
    death = DEATH_QUESTION.search(question) is not None
    if not death and not BIRTH_QUESTION.search(question):
        return ()
    spans = [m["death" if death else "birth"] for m in LIFE_SPAN.finditer(evidence)]
    spans += [m.group(1) for m in (DIED if death else BORN).finditer(evidence)]
    return _unique(spans)


def answer_span(question: str) -> re.Pattern[str] | None:
    """What a line holding the answer contains, for time and when questions (TR's K_a)."""
    return TIME_SPAN if question_kind(question) in ("time", "when") else None


def _said_by_subject(question: str, evidence: str) -> str:
    """In a chat, the lines of the speaker a what-time question is about ("What time does Anna Lee
    check in ...?" is answered by what Anna Lee says), or all the evidence when that speaker has
    no time to offer."""
    asked = compact_text(question)
    lines = [line for line in evidence.splitlines()
             if (m := SPEAKER_LINE.match(line)) and compact_text(m.group(1)) in asked]
    return "\n".join(lines) if any(TIME_SPAN.search(line) for line in lines) else evidence


def _named_in(name: str, question: str) -> bool:
    """Whether the question names this person, in full ("Anna Lee" for "AnnaLee") or by the first
    part of the name ("Jake" for "JakeWatson")."""
    first = re.match(r"[A-Z][a-z]{2,}", name)
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", question)}
    return compact_text(name) in compact_text(question) or bool(first and first.group().lower() in words)


def _best_speaker(best: list[str], question: str) -> str:
    """The speaker of the best evidence line that the question does not itself name.

    A "Who proposes X?" question is answered by whoever wrote the message most like X; left to
    choose, a 0.5B model often names someone the message addresses ("Great ideas, Thrall! How
    about ...?" is Anna Lee's proposal, not Thrall's).
    """
    match = SPEAKER_LINE.match(best[0]) if best else None
    return match.group(1) if match and not _named_in(match.group(1), question) else ""


def _best_names(best: list[str], lines: int = 3) -> tuple[str, ...]:
    speakers = [m.group(1) for m in (SPEAKER_LINE.match(line) for line in best[:lines]) if m]
    inside = [line.split(":", 1)[-1] for line in best[:lines]]
    return _unique(speakers[:1] + list(_names("\n".join(inside), False)) + speakers[1:])


def _names(evidence: str, chat: bool) -> tuple[str, ...]:
    # Speakers first (chat lines start "Name: "), then capitalised spans inside the text.
    speakers = re.findall(r"^([^\s:][^:\n]{0,40}?):\s", evidence, re.MULTILINE) if chat else []
    spans = [m.group() for m in NAME.finditer(evidence)]
    names = [s for s in speakers + spans if s.lower() not in STOPWORDS and not s.isdigit()
             and not STAMP.fullmatch(s) and not NOT_NAME.fullmatch(s)]
    return _unique(names)


def compact_text(text: str) -> str:
    """Lower-case letters and digits only ("Anna Lee:" → "annalee"), to compare names as written."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _unique(spans: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for s in spans if s))[:MAX_CANDIDATES]


def start_mask(starts: tuple[str, ...], encode: Callable[[str], list[int]]) -> TokenMask | None:
    """A token mask that makes the answer begin with one of ``starts``, then lets it run free.

    The spans are tokenised as the start of the answer; each step allows the next tokens of the
    spans still matching what was generated, until one span is complete.
    """
    sequences = [ids for ids in (encode(s) for s in starts) if ids]
    if not sequences:
        return None

    def allowed(step: int, generated: list[int]) -> np.ndarray | None:
        prefix = generated[:step]
        if any(seq == prefix[: len(seq)] and len(prefix) >= len(seq) for seq in sequences):
            return None
        following = {seq[step] for seq in sequences if len(seq) > step and seq[:step] == prefix}
        return np.array(sorted(following)) if following else None

    return TokenMask(allowed)
