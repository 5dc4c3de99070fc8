"""Adaptive retrieval planning (§3.3): choose A–G per query by named seeds, vector's margin, a
trained head, the SLM or rules.

A–E are the paper's labels (none, vector, local, dual, topology); F, the ``ppr`` random walk, is
beyond it and comes last, so that a tie between methods still goes to the paper's simpler one.
G, ``titles``, is a route of the ``names`` and ``margin`` planners only (the head and the SLM
choose among A–F). ``names`` (the default): G for a comparison of documents named by title, F
when the question names anything the walk can start from, else G if its nearest chunk leads the
fifth by ``planner_margin``, else F. ``margin`` (opt-in): G by that lead for any question that
names no title and orders no two events; it loses recall where every question needs two
passages. The trained head could not tell from the question when vector suffices.

Design: docs/design/planner.md
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..config import PLANNERS, Settings
from ..errors import ModelNotFound, SettingsError
from ..lexicon import NameMatcher
from ..models.folder import ModelFolder
from .features import cheap_features, plan_features
from .head import PLANNER_HINT, PlannerHead
from .rules import rule_label

if TYPE_CHECKING:
    from ..models.embedder import Embedder
    from ..models.slm import SLM

LABELS = ("A", "B", "C", "D", "E", "F")  # the trained head's and the SLM's choices
NONE_MIN = 0.8  # the probability the head's A (no retrieval) must reach (planner.md)
METHOD_OF_LABEL = {"A": "none", "B": "vector", "C": "local", "D": "dual", "E": "topology", "F": "ppr"}
METHOD_OF_ROUTE = {**METHOD_OF_LABEL, "G": "titles"}  # and what the names and margin planners pick


@dataclass(frozen=True)
class Plan:
    """The planner's choice for one query."""

    label: str
    method: str
    planner: str
    probabilities: dict[str, float] = field(default_factory=dict)
    latency_ms: float = 0.0
    fallback: bool = False
    resolved: str | None = None  # a follow-up's standalone question (``dialogue.py``); None alone
    follow_up: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``resolved`` and ``follow_up`` only for a question asked after others."""
        out = asdict(self)
        if self.resolved is None:
            del out["resolved"], out["follow_up"]
        return out


class Planner(Protocol):
    """Chooses a label A–G for a question (the head and the SLM: A–F)."""

    name: str

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """The label and, where the planner has them, label probabilities."""
        ...


class RulePlanner:
    """The §3.3 criteria as cues (see ``rules.rule_label``)."""

    name = "rules"

    def __init__(self, names: Callable[[], NameMatcher | None]) -> None:
        self.names = names

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """One label, no probabilities."""
        return rule_label(cheap_features(question, self.names())), {}


@dataclass(frozen=True)
class QuestionProbes:
    """What the planners may ask of the open index about a question (``plan`` does not import
    ``retrieve``: the index passes these in)."""

    named: Callable[[str], bool] = lambda question: True  # ``questions.names_a_seed``
    compares: Callable[[str], bool] = lambda question: False  # ``questions.compares_titles``
    titled: Callable[[str], bool] = lambda question: False  # ``questions.names_a_title``
    two_events: Callable[[str], bool] = lambda question: False  # ``questions.clauses`` splits it
    nearest: Callable[[str], np.ndarray] = lambda question: np.zeros(0, np.float32)  # cosines, best first

    def stands_out(self, question: str, margin: float) -> bool:
        """Whether the question's nearest chunk leads the fifth by ``margin`` (``vector_margin``)."""
        return vector_margin(self.nearest(question)) >= margin


class MarginPlanner:
    """G (``titles``) for a comparison of titled documents, or where the nearest documents alone
    are decisive: the question names no document title, orders no two events, and its nearest
    chunk stands out by ``margin`` over the fifth; else F (``ppr``). Opt-in: it loses recall on
    corpora of two-passage questions (docs/design/planner.md)."""

    name = "margin"

    def __init__(self, probes: QuestionProbes, margin: float) -> None:
        self.probes, self.margin = probes, margin

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """One label, no probabilities."""
        if self.probes.compares(question):
            return "G", {}
        if self.probes.titled(question) or self.probes.two_events(question):
            return "F", {}
        return ("G" if self.probes.stands_out(question, self.margin) else "F"), {}


def vector_margin(cosines: np.ndarray, depth: int = 5) -> float:
    """cos(top 1) − cos(top ``depth``) of a best-first list (0 when it is shorter than ``depth``:
    with so few chunks nothing stands out)."""
    return float(cosines[0] - cosines[depth - 1]) if len(cosines) >= depth else 0.0


class NamesPlanner:
    """G (``titles``) when the question compares documents it names by title, F (``ppr``) when
    it names something else the walk can start from; a question that names nothing goes to G
    when its nearest chunk stands out by ``margin`` over the fifth, else to F."""

    name = "names"

    def __init__(self, probes: QuestionProbes, margin: float) -> None:
        self.probes = probes  # on the open index: ``plan`` does not import ``retrieve``
        self.margin = margin

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """One label, no probabilities."""
        if self.probes.compares(question):
            return "G", {}
        if self.probes.named(question):
            return "F", {}
        return ("G" if self.probes.stands_out(question, self.margin) else "F"), {}


class HeadPlanner:
    """The exported classifier head over the query embedding and cheap features."""

    name = "head"

    def __init__(self, head: PlannerHead, embedder: Embedder,
                 names: Callable[[], NameMatcher | None]) -> None:
        self.head, self.embedder, self.names = head, embedder, names

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """The most probable label and every label's probability."""
        features = plan_features(self.embedder.embed_one(question), question, self.names())
        probs = self.head.probabilities(features)[0]
        ranked = dict(zip(self.head.labels, (round(float(p), 4) for p in probs)))
        return head_label(ranked), ranked


def head_label(probabilities: dict[str, float]) -> str:
    """The head's most probable label, where A (no retrieval) must reach ``NONE_MIN``: the head
    cannot tell the questions that need no retrieval (docs/design/planner.md), so A is all but off."""
    allowed = {k: p for k, p in probabilities.items() if k != "A" or p >= NONE_MIN} or probabilities
    return max(allowed, key=lambda k: allowed[k])


class SLMPlanner:
    """The SLM answers one letter under a constraint (the paper's Appendix-A prompt style)."""

    name = "slm"

    def __init__(self, slm: SLM) -> None:
        self.slm = slm

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """The letter the SLM picks."""
        from ..models.constraints import OneOf
        from ..models.slm import GenerationConfig
        from ..prompts import PLANNER_SYSTEM, planner_user

        prompt = self.slm.chat(planner_user(question), PLANNER_SYSTEM)
        text = self.slm.generate(prompt, GenerationConfig(max_new_tokens=2), OneOf(LABELS)).text
        return text.strip(), {}


def make_planner(settings: Settings, embedder: Callable[[], Embedder], slm: Callable[[], SLM],
                 names: Callable[[], NameMatcher | None], probes: QuestionProbes | None = None) -> Planner:
    """The planner the settings ask for; ``head`` falls back to rules when none is exported."""
    probes = probes or QuestionProbes()
    if settings.planner == "margin":
        return MarginPlanner(probes, settings.planner_margin)
    if settings.planner == "names":
        return NamesPlanner(probes, settings.planner_margin)
    if settings.planner == "slm":
        return SLMPlanner(slm())
    if settings.planner == "rules":
        return RulePlanner(names)
    if settings.planner != "head":
        raise SettingsError(f"planner must be one of {PLANNERS}")
    model = embedder()
    try:
        folder = ModelFolder.open(settings.home / "models" / settings.planner_model, PLANNER_HINT)
        return HeadPlanner(PlannerHead(folder, model.folder.sha256), model, names)
    except ModelNotFound as exc:
        warnings.warn(f"{exc}; planning by rules", stacklevel=3)
        return RulePlanner(names)


def run_planner(planner: Planner, question: str, threshold: float, fallback: str) -> Plan:
    """Run the planner; a head's top probability below ``threshold`` means the safer ``fallback``."""
    start = time.perf_counter()
    label, probabilities = planner.choose(question)
    latency = (time.perf_counter() - start) * 1000
    if probabilities and probabilities[label] < threshold:
        return Plan(label, fallback, planner.name, probabilities, latency, fallback=True)
    return Plan(label, METHOD_OF_ROUTE[label], planner.name, probabilities, latency)


__all__ = ["LABELS", "METHOD_OF_LABEL", "METHOD_OF_ROUTE", "NONE_MIN", "PLANNERS", "HeadPlanner",
           "MarginPlanner", "NamesPlanner", "Plan", "Planner", "PlannerHead", "QuestionProbes", "RulePlanner",
           "SLMPlanner", "head_label", "make_planner", "plan_features", "run_planner", "vector_margin"]
