"""Adaptive retrieval planning (§3.3): choose A–F per query by a trained head, the SLM or rules.

A–E are the paper's labels (none, vector, local, dual, topology); F, the ``ppr`` random walk, is
beyond it and comes last, so that a tie between methods still goes to the paper's simpler one.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

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

LABELS = ("A", "B", "C", "D", "E", "F")
METHOD_OF_LABEL = {"A": "none", "B": "vector", "C": "local", "D": "dual", "E": "topology", "F": "ppr"}


@dataclass(frozen=True)
class Plan:
    """The planner's choice for one query."""

    label: str
    method: str
    planner: str
    probabilities: dict[str, float] = field(default_factory=dict)
    latency_ms: float = 0.0
    fallback: bool = False


class Planner(Protocol):
    """Chooses a label A–F for a question."""

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
        return max(ranked, key=lambda k: ranked[k]), ranked


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
                 names: Callable[[], NameMatcher | None]) -> Planner:
    """The planner the settings ask for; ``head`` falls back to rules when none is exported."""
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
    return Plan(label, METHOD_OF_LABEL[label], planner.name, probabilities, latency)


__all__ = ["LABELS", "METHOD_OF_LABEL", "PLANNERS", "HeadPlanner", "Plan", "Planner", "PlannerHead",
           "RulePlanner", "SLMPlanner", "make_planner", "plan_features", "run_planner"]
