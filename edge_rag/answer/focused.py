"""The focused answer stage (``answer_stage = "focused"``, the default): it shows the model only
the best lines of the retrieved documents (``evidence_lines``), constrains the start of the answer by
question type (``forms``), abstains on evidence, and makes sure the answer cites a source and is
more than citations.

Design: docs/design/answer.md
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz import fuzz

from .. import prompts
from ..config import ANSWER_RULES
from ..guard import withhold
from ..lexicon import STOPWORDS
from ..models.constraints import TokenMask
from ..models.slm import SLM, GenerationConfig
from ..plan.dialogue import split_topic
from ..retrieve import Retrieval, RetrievedChunk
from .abstain import terms, unsupported
from .evidence_lines import Focus, SourceDoc, choose, split_document
from .forms import SPEAKER_LINE, Form, answer_form, answer_span, compact_text, start_mask
from .support import Support, check, citations
from .types import Answer, AnswerStream
from .wording import in_words, names_of, rewrite_stream, speakers_in

CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
# Citations ("[1]", "[1, 2]") and punctuation, nothing else: a bare number ("314159") is an answer.
ONLY_CITATIONS = re.compile(r"^(?:[\s,.;:-]|\[\d+(?:\s*,\s*\d+)*\])*$")

MAX_NAME_TOKENS = 8  # the longest name that may be a whole (who-)answer (answer.md)
NO_ANSWER_STARTS = ("Insufficient", "insufficient", "INSUFFICIENT", " Insufficient", " insufficient")
DATED_DOCS = 3  # documents of the day a question names, looked up and shown first (answer.md)
# The focused stage's rules, each switched off by its name in ``FocusedAnswerer.off`` (the setting
# ``answer_rules_off``; measured one by one by benchmarks/answers/answer_rules.py, docs/design/answer.md):
# forced starts by answer
# form (yesno, choice, who, time, when), abstention on a missing date or unsupported terms (date,
# terms), the named day's documents first (dated), the answer-span bonus and reply carry of the
# evidence choice (span, replies), the free answer's first-token and name masks (open, names), and
# the finish (bare: an answer of citations only becomes the best line; echo: an answer that only
# repeats the question's words is an abstention; quote, sentence: the source words shown after the
# answer).
RULES = ANSWER_RULES


@dataclass
class Evidence:
    """What the focused stage reads besides the SLM: the embedder, the stored documents and
    (optionally) the ids of the documents dated on given (month, day) pairs."""

    embed: Callable[[list[str]], np.ndarray]
    document: Callable[[str], list[str]]
    dated: Callable[[set[tuple[int, int]]], list[RetrievedChunk]] | None = None


@dataclass
class Prepared:
    """A focused prompt with what went into it and whether to abstain instead."""

    prompt: str
    focus: Focus
    form: Form
    abstain: str = ""
    p_abstain: float | None = None
    p_no: float | None = None
    unsupported: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    withheld: list[str] = field(default_factory=list)
    first: int | None = None  # the model's likeliest first token, unconstrained
    question: str = ""
    support: Support = field(default_factory=Support)

    @property
    def chunks(self) -> list[RetrievedChunk]:
        """The chunk standing for each numbered source, [1] first."""
        return [doc.chunk for doc, _ in self.focus.sources]


class FocusedAnswerer:
    """The focused answer stage: best lines within a token budget, answer forms, abstention.

    Abstention ("Insufficient information.") is decided from evidence before generating:
    a date the question names that no retrieved document has; at least ``abstain_terms`` of
    the question's terms that no chosen line matches, one of them in no retrieved document at
    all (``abstain.unsupported``; not for yes/no or either-or questions: a game the question
    names may be named only in lines of its chat that were not chosen); or the model's own
    probability of starting the answer with "Insufficient" at or above ``abstain_threshold``
    (1.0, the default, never). A yes/no answer starts with "No" only when P(No | Yes or No)
    is at least ``no_threshold``. With ``guard``, sentences of the sources that read as
    instructions to the model are withheld from it (``guard.strip_instructions``) and reported.
    """

    def __init__(self, slm: SLM, evidence: Evidence, context_tokens: int, max_new_tokens: int,
                 abstain_threshold: float, no_threshold: float = 0.5,
                 abstain_terms: int = 0, guard: bool = True,
                 draft_tokens: int = GenerationConfig.draft_tokens, off: Iterable[str] = ()) -> None:
        self.slm = slm
        self.guard = guard
        self.abstain_terms = abstain_terms
        self.evidence = evidence
        self.context_tokens = context_tokens
        self.abstain_threshold = abstain_threshold
        self.no_threshold = no_threshold
        self.config = GenerationConfig(max_new_tokens=max_new_tokens, stop=prompts.FOCUSED_STOP,
                                       draft_tokens=draft_tokens)
        self._no_answer = self._ids("Insufficient")[0]
        self._open_ids: np.ndarray | None = None
        self._no_colon_ids: np.ndarray | None = None
        self._name_goes_on_ids: np.ndarray | None = None
        self.off: frozenset[str] = frozenset(off)  # names of RULES switched off

    def prepare(self, question: str, retrieval: Retrieval) -> Prepared:
        """Choose the evidence, build the prompt, decide whether to abstain."""
        start = time.perf_counter()
        searched, previous = _follow_up(question, retrieval)
        chunks, day = self._dated(searched, retrieval.chunks)
        withheld: list[str] = []
        docs = self._documents(chunks, withheld)
        for doc in docs:
            doc.on_day = doc.chunk.doc_id in day
        focus = choose(searched, docs, self.evidence.embed, self._cut, self.context_tokens,
                       None if "span" in self.off else answer_span(question), "replies" not in self.off)
        best = [line.text for line in sorted(focus.lines, key=lambda line: -line.score)]
        form = answer_form(question, focus.text(), any(d.chat for d in docs), best)
        form = Form(form.kind) if form.kind in self.off else form
        user = prompts.quoted(prompts.focused_user(question, focus.render(), previous), len(withheld))
        system = prompts.guarded_system(prompts.FOCUSED_SYSTEM, len(withheld))
        prepared = Prepared(self.slm.chat(user, system), focus, form, withheld=withheld, question=question)
        prepared.timings["prompt_tokens"] = self.slm.count_tokens(prepared.prompt)
        prepared.timings["focus"] = (time.perf_counter() - start) * 1000
        prepared.abstain = self._abstain(question, docs, prepared)
        return prepared

    def answer(self, question: str, retrieval: Retrieval) -> Answer:
        """Generate the whole answer."""
        prepared = self.prepare(question, retrieval)
        timings = {**retrieval.timings_ms, **prepared.timings}
        text = ""
        if not prepared.abstain:
            result = self.slm.generate(prepared.prompt, self.config, self._mask(prepared))
            timings["prefill"] = timings.get("prefill", 0.0) + result.prefill_ms
            timings["decode"] = result.decode_ms
            timings.setdefault("cached_tokens", result.cached_tokens)
            text = result.text
        final = self._finish(text, prepared)
        return Answer(final, retrieval.method, prepared.chunks, timings, retrieval, _details(prepared),
                      prepared.withheld, citations=citations(final, prepared.focus))

    def stream(self, question: str, retrieval: Retrieval, max_new_tokens: int | None = None) -> AnswerStream:
        """Generate the answer as a stream of text pieces, at most ``max_new_tokens`` of them
        (first_token counts from the evidence choice on, the look at the model's next-token
        distribution included)."""
        started = time.perf_counter()
        prepared = self.prepare(question, retrieval)
        answer = Answer("", retrieval.method, prepared.chunks,
                        {**retrieval.timings_ms, **prepared.timings}, retrieval, _details(prepared),
                        prepared.withheld)
        pieces = self._pieces(prepared, answer, self.config.capped(max_new_tokens))
        return AnswerStream(pieces, answer, started)

    def _pieces(self, prepared: Prepared, answer: Answer, config: GenerationConfig) -> Iterator[str]:
        # Words are put in a person's words as they come; when the finish changes more than that
        # (an abstention, a cut claim), the stream ends with the finished answer on its own line
        # and the answer's text becomes the finished one.
        sent, timings = "", answer.timings
        if not prepared.abstain:
            generated: dict[str, float] = {}
            pieces = self.slm.stream(prepared.prompt, config, self._mask(prepared), generated)
            for piece in pieces if "words" in self.off else rewrite_stream(pieces, self._names(prepared)):
                sent += piece
                yield piece
            timings["prefill"] = timings.get("prefill", 0.0) + generated.get("prefill", 0.0)
            timings["decode"] = generated.get("decode", 0.0)
            timings.setdefault("cached_tokens", generated.get("cached_tokens", 0))
        final = self._finish(sent, prepared)
        yield final[len(sent.rstrip()):] if final.startswith(sent.rstrip()) else "\n" + final
        answer.text = final
        answer.details.update(_details(prepared))
        answer.citations = citations(final, prepared.focus)

    def _documents(self, chunks: list[RetrievedChunk], withheld: list[str]) -> list[SourceDoc]:
        # One source per retrieved document, in retrieval order, read whole from the store; with
        # the guard, its instruction sentences are left out and added to ``withheld``.
        first: dict[str, RetrievedChunk] = {}
        for chunk in chunks:
            first.setdefault(chunk.doc_id, chunk)
        hits = {d: [self._guarded(c.text, withheld) for c in chunks if c.doc_id == d] for d in first}
        return [split_document(c, [self._guarded(t, withheld) for t in self.evidence.document(d)]
                               or hits[d][:1], hits[d]) for d, c in first.items()]

    def _guarded(self, text: str, withheld: list[str]) -> str:
        return withhold(text, withheld) if self.guard else text

    def _dated(self, question: str, chunks: list[RetrievedChunk]
               ) -> tuple[list[RetrievedChunk], set[str]]:
        """The chunks to read, those of the day a question names first, and the ids of that
        day's documents.

        A question that names a date ("... on 20260430?") is about the conversations of that
        day: the store knows each document's date, so those documents come first - the retrieved
        ones in retrieval order, then up to DATED_DOCS more looked up directly - instead of
        hoping retrieval ranked them high.
        """
        wanted = dates_in(question)
        if not wanted or self.evidence.dated is None or "dated" in self.off:
            return chunks, set()
        dated = self.evidence.dated(wanted)
        day, have = {c.doc_id for c in dated}, {c.doc_id for c in chunks}
        looked_up = [c for c in dated if c.doc_id not in have][:DATED_DOCS]
        return [c for c in chunks if c.doc_id in day] + looked_up \
            + [c for c in chunks if c.doc_id not in day], day

    def _abstain(self, question: str, docs: list[SourceDoc], prepared: Prepared) -> str:
        """Why to answer "Insufficient information." (empty: answer).

        One look at the model's next-token distribution (its KV cache is reused by the answer)
        gives P("Insufficient") and, for yes/no questions, P(No) against P(Yes).
        """
        if not prepared.focus.lines:
            return "no evidence"
        if "date" not in self.off and missing_date(question, docs):
            return "date not in sources"
        if self.abstain_terms and "terms" not in self.off and prepared.form.kind not in ("yesno", "choice"):
            prepared.unsupported = unsupported(question, prepared.focus.text())
            if len(prepared.unsupported) >= self.abstain_terms and unsupported(
                    question, "\n".join(doc.header + "\n" + "\n".join(doc.lines) for doc in docs)):
                return "terms not in sources"
        timings: dict[str, float] = {}
        logprobs = self.slm.next_token_logprobs(prepared.prompt, timings)
        prepared.timings.update(prefill=timings["prefill"], cached_tokens=timings["cached_tokens"])
        prepared.first = int(np.argmax(logprobs))
        if prepared.form.kind == "yesno" and "yesno" not in self.off:
            self._yes_or_no(prepared, logprobs)
            return ""
        prepared.p_abstain = float(np.exp(logprobs[self._no_answer]))
        return "model" if prepared.p_abstain >= self.abstain_threshold else ""

    def _yes_or_no(self, prepared: Prepared, logprobs: np.ndarray) -> None:
        # A 0.5B model says "No" whenever the evidence is spread over several chats: "No" must
        # be clearly likelier than "Yes" (P(No | Yes or No) >= no_threshold) to be chosen.
        yes, no = (float(np.exp(logprobs[self._ids(word)[0]])) for word in ("Yes", "No"))
        prepared.p_no = no / (yes + no) if yes + no > 0 else 0.5
        prepared.form = Form("yesno", ("No",) if prepared.p_no >= self.no_threshold else ("Yes",))

    def _mask(self, prepared: Prepared) -> TokenMask | None:
        form = prepared.form
        if form.starts:
            return start_mask(form.starts, self._ids)
        # A free answer opens neither with a citation (it would copy a source header) nor with
        # "Insufficient": abstaining was decided before, by the threshold. Nor does it copy a
        # whole chat message with its "Speaker:" prefix: a 0.5B model in that mode copies the
        # message most like the question instead of answering it. Nor, unless the question asks
        # who, is a speaker's name the whole answer ("ThaneChambers [2]" to "Which game does
        # Anna mention?"): after a name it must go on.
        name_ends = self._no_colon_tokens() if form.kind == "who" else self._name_goes_on_tokens()
        speakers = {compact_text(m.group(1)) for line in prepared.focus.lines
                    if (m := SPEAKER_LINE.match(line.text))}

        def allowed(step: int, ids: list[int]) -> np.ndarray | None:
            if step == 0:
                return None if "open" in self.off else self._open_tokens()
            if "names" not in self.off and step <= MAX_NAME_TOKENS \
                    and compact_text(self.slm.tokenizer.decode(ids[:step])) in speakers:
                return name_ends
            return None

        return TokenMask(allowed)

    def _no_colon_tokens(self) -> np.ndarray:
        if self._no_colon_ids is None:
            self._no_colon_ids = self._vocabulary_without(self.slm.ids_starting_with(":"))
        return self._no_colon_ids

    def _name_goes_on_tokens(self) -> np.ndarray:
        if self._name_goes_on_ids is None:
            ending = self.slm.ids_starting_with(":[.,;!?'’\nĊ") | self.slm.stop_ids
            self._name_goes_on_ids = self._vocabulary_without(ending)
        return self._name_goes_on_ids

    def _open_tokens(self) -> np.ndarray:
        if self._open_ids is None:
            # Every spelling of the abstention's first token ("insufficient information. [1]"
            # is an abstention the evidence rules did not decide).
            abstaining = {self._ids(word)[0] for word in NO_ANSWER_STARTS}
            self._open_ids = self._vocabulary_without(self.slm.ids_starting_with("[") | abstaining)
        return self._open_ids

    def _vocabulary_without(self, excluded: set[int]) -> np.ndarray:
        vocabulary = np.arange(self.slm.tokenizer.get_vocab_size())
        return np.setdiff1d(vocabulary, np.fromiter(excluded, dtype=vocabulary.dtype))

    def _finish(self, text: str, prepared: Prepared) -> str:
        """The answer as shown: abstention (also for an answer that only echoes the question), or
        text that cites a source and is not only citations, in a person's words (``wording``),
        stating only what its sources hold (``support``)."""
        text = text.strip() if "words" in self.off else in_words(text.strip(), self._names(prepared))
        if prepared.abstain or ("echo" not in self.off and prepared.form.kind not in ("yesno", "choice")
                                and echoes(text, prepared.question)):
            return prompts.NO_ANSWER
        if "bare" not in self.off and ONLY_CITATIONS.match(text) and prepared.focus.lines:
            best = max(prepared.focus.lines, key=lambda ln: ln.score)
            text = best.text
        if not CITATION.search(text):
            text = f"{text.rstrip()} [{self._source_of(text, prepared.focus)}]"
        quoted = next((found for rule, way in (("quote", quote), ("sentence", source_sentence))
                       if rule not in self.off and (found := way(text, prepared.focus))), "") \
            if prepared.form.kind not in ("yesno", "choice") else ""
        text = f'{text} — "{quoted}"' if quoted else text
        if "support" not in self.off:
            text, prepared.support = check(text, prepared.focus, prepared.question)
        return _withdrawn(text, prepared) if prepared.support.abstain else text

    def _names(self, prepared: Prepared) -> dict[str, str]:
        """The handles of the chosen lines' speakers and their names."""
        return names_of(speakers_in(line.text for line in prepared.focus.lines))

    def _source_of(self, text: str, focus: Focus) -> int:
        # The source whose lines share the most words with the answer (ties: the first).
        words = set(re.findall(r"\w+", text.lower()))
        overlap = [len(words & set(re.findall(r"\w+", (doc.header + " " + " ".join(
            ln.text for ln in lines)).lower()))) for doc, lines in focus.sources]
        return int(np.argmax(overlap)) + 1 if overlap else 1

    def _ids(self, text: str) -> list[int]:
        return self.slm.tokenizer.encode(text, add_special_tokens=False).ids

    def _cut(self, text: str, tokens: int) -> tuple[str, int]:
        encoding = self.slm.tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= tokens:
            return text, len(encoding.ids)
        return text[: encoding.offsets[tokens - 1][1]] + "…", tokens + 1


QUOTE_MATCH = 90  # rapidfuzz ratio from which a source span is the answer's (answer.md)
QUOTE_CONTEXT_WORDS = 10  # source words shown either side of that span
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _follow_up(question: str, retrieval: Retrieval) -> tuple[str, str]:
    """What the evidence is chosen by, and the previous turn's line for the prompt: for a
    follow-up answered as its short form, its standalone form and topic (docs/design/dialogue.md);
    else the question itself and no line."""
    plan = retrieval.plan
    if plan is None or not plan.follow_up or not plan.resolved:
        return question, ""
    asked, topic = split_topic(plan.resolved)
    return (plan.resolved, topic) if asked == question else (question, "")


def quote(answer: str, focus: Focus) -> str:
    """The words of the evidence around a short answer copied from it, or "" if none.

    A 0.5B model copies a span but often cuts it short ("Removable hooks" where the message says
    "Just use removable hooks"; "3pm" for "from 2pm to 3pm"): the sentence it copied from (at most
    ``QUOTE_CONTEXT_WORDS`` words either side of the span) is shown after the answer, so the
    reader sees the answer in its source's own words.
    """
    core = CITATION.sub("", answer).strip().rstrip(".!")
    if len(core) < 3 or len(core.split()) > 12:
        return ""
    best, score = None, 0.0
    for sentence in _message_sentences(focus):
        found = fuzz.partial_ratio_alignment(core.lower(), sentence.lower())
        if found is not None and found.score > score:
            best, score = (sentence, found), found.score
    if best is None or score < QUOTE_MATCH:
        return ""
    sentence, found = best
    spans = [m.span() for m in re.finditer(r"\S+", sentence)]
    first = [i for i, (_, end) in enumerate(spans) if end > found.dest_start][0]
    last = [i for i, (start, _) in enumerate(spans) if start < found.dest_end][-1]
    start = spans[max(0, first - QUOTE_CONTEXT_WORDS)][0]
    end = spans[min(len(spans) - 1, last + QUOTE_CONTEXT_WORDS)][1]
    text = sentence[start:end].strip()
    return text if len(text) > len(core) + 3 else ""


SHARED_WORDS = 3  # content words a restated source sentence shares with the answer, at least (answer.md)
SHARED_SHARE = 0.5  # and at least this share of its own
CONTENT = re.compile(r"[a-z0-9]+")


def source_sentence(answer: str, focus: Focus) -> str:
    """The source sentence a longer answer restates, or "" if none does clearly.

    A 0.5B model asked for a phrase often writes a sentence around it instead ("Wolfgang and
    Anna are going ... to check out some new gear and get inspired for their next jam session"
    for "Let's check out some new gear and get inspired for our next jam session!"). The chosen
    sentence shares the most content words with the answer (at least ``SHARED_WORDS``, and at
    least ``SHARED_SHARE`` of its own); it is quoted after the answer, so the reader sees the
    source's own words.
    """
    said = _content(CITATION.sub("", answer))
    best, key = "", (0, 0.0)
    for sentence in _message_sentences(focus):
        words = _content(sentence)
        shared = len(said & words)
        if words and (shared, shared / len(words)) > key:
            best, key = sentence.strip(), (shared, shared / len(words))
    if key[0] < SHARED_WORDS or key[1] < SHARED_SHARE or best.lower() in answer.lower():
        return ""
    return best


def echoes(answer: str, question: str) -> bool:
    """Whether an answer only repeats the question ("House rule [1]" to "What house rule does Adam
    mention?"): it has content words, and every one of them is a word of the question."""
    said = {_stem(w) for w in terms(CITATION.sub("", answer)) if len(w) > 2 and w not in STOPWORDS}
    return bool(said) and said <= {_stem(w) for w in terms(question)}


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _message_sentences(focus: Focus) -> Iterator[str]:
    # The sentences of the chosen lines, a chat line's "Speaker: " prefix left out.
    for doc, lines in focus.sources:
        for line in lines:
            body = line.text.split(": ", 1)[1] if doc.chat and ": " in line.text else line.text
            yield from SENTENCE.split(body)


def _content(text: str) -> set[str]:
    return {w for w in CONTENT.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def _withdrawn(text: str, prepared: Prepared) -> str:
    """An answer stating a claim no source holds: a yes/no or either-or answer keeps its start
    ("Yes [1]"; such questions are answered, not abstained on), any other abstains."""
    start = next((s for s in prepared.form.starts if text.startswith(s)), "") \
        if prepared.form.kind in ("yesno", "choice") else ""
    if not start:
        return prompts.NO_ANSWER
    prepared.support.abstain, prepared.support.cut = False, [*prepared.support.cut, "after the start"]
    return f"{start} {''.join(CITATION.findall(text)) or '[1]'}"


def _details(prepared: Prepared) -> dict[str, Any]:
    support = prepared.support
    return {"stage": "focused", "form": prepared.form.kind, "starts": len(prepared.form.starts),
            "abstain": prepared.abstain or ("claims not in sources" if support.abstain else ""),
            "unsupported": prepared.unsupported, "p_abstain": prepared.p_abstain, "p_no": prepared.p_no,
            "claims_unsupported": support.unsupported, "claims_recited": support.recited,
            "claims_cut": support.cut}


MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
STAMP_DATE = re.compile(r"\b20\d\d(\d\d)(\d\d)(?:_|\b)")
MONTH_DAY = re.compile(r"\b(" + "|".join(MONTH_NAMES) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b"
                       r"|\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(" + "|".join(MONTH_NAMES) + r")\b",
                       re.IGNORECASE)
ORDINAL_DAY = re.compile(r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)


def dates_in(text: str) -> set[tuple[int, int]]:
    """(month, day) pairs a text names: 20260403 stamps and "April 3" / "3 April" dates;
    month 0 for a bare "the 9th"."""
    found = {(int(m), int(d)) for m, d in STAMP_DATE.findall(text)}
    for match in MONTH_DAY.finditer(text):
        month = match.group(1) or match.group(4)
        day = match.group(2) or match.group(3)
        found.add((MONTH_NAMES.index(month.lower()) + 1, int(day)))
    found |= {(0, int(d)) for d in ORDINAL_DAY.findall(text)}
    return {(m, d) for m, d in found if 0 <= m <= 12 and 1 <= d <= 31}


def document_days(source: str, first_line: str) -> set[tuple[int, int]]:
    """The (month, day) a document is from: a 20260403 stamp in its chat header ("Time:
    20260403_08:00") or in its file name; empty for undated documents."""
    header = first_line if first_line.lstrip().startswith("Time:") else ""
    found = STAMP_DATE.findall(header) or STAMP_DATE.findall(source.rsplit("/", 1)[-1])
    return {(int(m), int(d)) for m, d in found if 1 <= int(m) <= 12 and 1 <= int(d) <= 31}


def on_days(wanted: set[tuple[int, int]], days: set[tuple[int, int]]) -> bool:
    """Whether a document of ``days`` is from one of the ``wanted`` dates (month 0: any month)."""
    return any((m, d) in days or (m == 0 and d in {day for _, day in days}) for m, d in wanted)


def missing_date(question: str, docs: list[SourceDoc]) -> bool:
    """True when the question names a date and no retrieved document is from or mentions it."""
    wanted = dates_in(question)
    if not wanted:
        return False
    have = set().union(*(dates_in(d.header + "\n" + "\n".join(d.lines)) for d in docs)) if docs else set()
    days = {d for _, d in have}
    return not any((m, d) in have or (m == 0 and d in days) for m, d in wanted)
