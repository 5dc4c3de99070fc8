"""Bridge questions answered one link at a time (the ``hops`` rule), either-or questions about
dates by comparing the dates of two when-answers (the ``compare`` rule); both beyond the paper.

``resolve`` asks the innermost link first (``questions.first_hop``: "Who is the director of film
X?"), reads the bridge's name from that answer (``bridge_name``), and puts it into the rest of the
question ("Where was John Ford born?"), up to ``questions.MAX_HOPS`` links; a small model asked
the whole question answers with the wrong person or place. ``compare`` answers "Which film came
out first, A or B?" (``questions.comparison``) by a when-question per option, the first date of
each answer (``date_of``) and the option whose date wins: a small model reads one date far more
reliably than it compares two. Each link is an ordinary ``ask``; when a link yields no name or no
date, the question is asked as it stands. The links' answers follow as ``Answer.hops``.

Design: docs/design/answer.md
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection

from ..lexicon import HOP_NOUNS, MONTHS
from ..prompts import NO_ANSWER
from ..questions import MAX_HOPS, comparison, first_hop
from ..retrieve import Retrieval
from .types import Answer, AnswerStage, AnswerStream

MAX_BRIDGE_WORDS = 8  # a longer answer is a sentence, not a name (answer.md)
_ANSWER_END = re.compile(r"\s*\[\d|\s+[—–]\s|\s+-\s|\s*\n")
_ABSTAINS = re.compile(rf"\b{re.escape(NO_ANSWER.rstrip('.'))}\b|\bno source\b"
                       r"|\bnot (?:mentioned|given|known)\b", re.IGNORECASE)
_CITED = re.compile(r"\[(\d+)\]")
_COPULA = re.compile(r",?\s+(?:is|was|were|are)\s+(?:the\s+)?|,\s+(?:who|the)\s+")
_NOT_A_NAME = re.compile(r"(?:the|a|an|he|she|it|they|his|her|its|their|this|that)\b", re.IGNORECASE)
_RESTATES = re.compile(rf"(?:the\s+)?(?:{HOP_NOUNS})\b", re.IGNORECASE)


def bridge_name(answer: str) -> str:
    """The name a "Who is the R of X?" answer gives: its words before the first citation, quote
    or line break (before its first comma if longer than ``MAX_BRIDGE_WORDS``), and of a
    sentence its subject ("Mara Quill is the director of ...") or, when the subject restates
    the link ("The director of X was Mara Quill"), its complement; ``""`` for an abstention,
    more than ``MAX_BRIDGE_WORDS`` words or what starts like no name ("The film", "He")."""
    if _ABSTAINS.search(answer):
        return ""
    name = _ANSWER_END.split(answer, maxsplit=1)[0].strip(" .,:;\"'“”")
    if len(parts := _COPULA.split(name, maxsplit=1)) == 2:
        name = parts[1] if _RESTATES.match(parts[0]) else parts[0]
    name = name.strip(" .,:;\"'“”")
    if len(name.split()) > MAX_BRIDGE_WORDS:  # "Matilda, daughter of Herman, Duke of Saxony, ..."
        name = name.split(",", 1)[0]
    return name if 0 < len(name.split()) <= MAX_BRIDGE_WORDS and not _NOT_A_NAME.match(name) else ""


def resolve(question: str, ask: Callable[[str], Answer]) -> tuple[str, list[Answer]]:
    """The question with its links answered (as far as they yield names) and those answers."""
    links: list[Answer] = []
    for _ in range(MAX_HOPS):
        hop = first_hop(question)
        if hop is None:
            break
        answer = ask(hop.inner)
        name = bridge_name(answer.text)
        if not name:
            break
        answer.details["question"] = hop.inner
        links.append(answer)
        question = hop.then(name)
    return question, links


def attach(answer: Answer, links: list[Answer]) -> Answer:
    """Record the links on the final answer: ``hops`` holds each link's question and answer, its
    citations renumbered into the final answer's sources, which gain the ones they lack."""
    for link in links:
        answer.hops.append({"question": link.details["question"], "answer": _cited_after(answer, link)})
    return answer


def _cited_after(answer: Answer, link: Answer) -> str:
    """The link's text with its citations numbered as ``answer``'s sources, which gain those they
    lack."""
    numbers: dict[int, int] = {}
    for cited in dict.fromkeys(int(n) for n in _CITED.findall(link.text)):
        if 0 < cited <= len(link.sources):
            chunk = link.sources[cited - 1]
            held = [c.chunk_id for c in answer.sources]
            if chunk.chunk_id not in held:
                answer.sources.append(chunk)
            numbers[cited] = 1 + (held.index(chunk.chunk_id) if chunk.chunk_id in held else len(held))
    return _CITED.sub(lambda m: f"[{numbers.get(int(m[1]), '?')}]", link.text)


_MONTH = rf"(?P<{{}}>{MONTHS})\.?"
_DATE = re.compile(rf"\b(?P<d1>\d{{1,2}}) {_MONTH.format('m1')},? (?P<y1>\d{{3,4}})\b"
                   rf"|\b{_MONTH.format('m2')} (?:(?P<d2>\d{{1,2}}),? )?(?P<y2>\d{{3,4}})\b"
                   r"|\b(?P<y3>\d{3,4})\b", re.IGNORECASE)
_MONTH_NUMBER = {name[:3]: n for n, name in enumerate(MONTHS.split("|")[:12], 1)}


def date_of(answer: str) -> tuple[int, int, int] | None:
    """The first date an answer gives in its own words (else in the source words it quotes), as
    (year, month, day) with 0 for a part it leaves out; ``None`` for an abstention or no date."""
    if _ABSTAINS.search(answer):
        return None
    own = _ANSWER_END.split(answer, maxsplit=1)[0]
    match = _DATE.search(own) or _DATE.search(answer)
    if match is None:
        return None
    month = match["m1"] or match["m2"]
    return (int(match["y1"] or match["y2"] or match["y3"]), _MONTH_NUMBER[month[:3].lower()] if month else 0,
            int(match["d1"] or match["d2"] or 0))


def compare(question: str, ask: Callable[[str], Answer]) -> Answer | None:
    """The answer to an either-or question about dates from the dates of two when-answers, or
    ``None`` when it is not one or the dates do not decide (module docstring)."""
    compared = comparison(question)
    if compared is None:
        return None
    answers = [ask(when) for when in compared.questions]
    dates = [date_of(a.text) for a in answers]
    if None in dates or dates[0] == dates[1]:
        return None
    wins = dates.index(min(dates) if compared.earliest else max(dates))  # type: ignore[type-var]
    chosen, other = answers[wins], answers[1 - wins]
    for answer, when in zip(answers, compared.questions):
        answer.details["question"] = when
    cited = _CITED.search(chosen.text)
    when_text = _DATE.search(chosen.text)
    text = f"{compared.options[wins]} ({when_text[0] if when_text else '?'}) {cited[0] if cited else ''}"
    final = Answer(text.strip(), chosen.method, list(chosen.sources), dict(chosen.timings), chosen.retrieval,
                   {**chosen.details, "form": "compare"}, list(chosen.withheld), list(chosen.hops),
                   list(chosen.citations))
    attach(final, [chosen])
    # The other option's own links (cited from its sources) and its when-answer follow.
    links = [Answer(h["answer"], other.method, other.sources, details={"question": h["question"]})
             for h in other.hops]
    return attach(final, [*links, other])


def answer_with_rules(question: str, retrieve: Callable[[str], Retrieval], stage: AnswerStage,
                      off: Collection[str], *, stream: bool = False, retrieval: Retrieval | None = None,
                      max_new_tokens: int | None = None) -> Answer | AnswerStream:
    """Answer ``question`` with ``stage``, applying the ``compare`` and ``hops`` rules not in
    ``off``: the questions they ask first are answered the same way, each with ``retrieve``;
    ``retrieval`` is the question's own (used unless a rule rewrites the question)."""
    started = time.perf_counter()

    def ask(asked: str) -> Answer:
        answer = answer_with_rules(asked, retrieve, stage, off)
        assert isinstance(answer, Answer)  # not streamed
        return answer

    if "compare" not in off and (compared := compare(question, ask)) is not None:
        compared.timings["hops"] = (time.perf_counter() - started) * 1000
        return AnswerStream.whole(compared) if stream else compared
    links: list[Answer] = []
    if "hops" not in off:
        question, links = resolve(question, ask)
    asked_first = (time.perf_counter() - started) * 1000
    if retrieval is None or links:
        retrieval = retrieve(question)
    streamed = stage.stream(question, retrieval, max_new_tokens) if stream else None
    answer = streamed.answer if streamed else stage.answer(question, retrieval)
    if links:
        attach(answer, links).timings["hops"] = asked_first
    return streamed or answer
