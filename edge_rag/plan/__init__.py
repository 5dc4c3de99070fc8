"""Adaptive retrieval planning (§3.3): choose A–F per query by named seeds, a trained head, the
SLM or rules.

A–E are the paper's labels (none, vector, local, dual, topology); F, the ``ppr`` random walk, is
beyond it and comes last, so that a tie between methods still goes to the paper's simpler one.

The default planner, ``names`` (beyond the paper), asks one question of the query: does it name
anything the walk can start from — a name, date, time, quantity or quoted title (TR's K_e, see
``ppr.names_a_seed``) or a document title? Then F, else B. A question that names nothing ("What
time is the power outage in the neighborhood?") gives ``ppr`` only the chunks nearest to it as
seeds, which vector search ranks mostly alike: on LiHua-World dev those 14 of 228 questions had
the same evidence recall by either method but one, where ``ppr``'s BM25 words found what vector
missed ("What event is the community organizing?"; recall@5 0.902 for ``auto`` against 0.907),
for a saving within noise (``benchmarks.auto_latency``: −0.13 ± 0.12 ms a question). The
trained head (``head``) could not tell from the question when vector suffices (5-fold CV:
below ``ppr`` on 2WikiMultihopQA), nor could vector's score margin (top-1 minus top-5 cosine),
which under 5-fold CV sent almost no question to vector.
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
NONE_MIN = 0.8
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


class NamesPlanner:
    """F (``ppr``) when the question names something the walk can start from, else B (vector)."""

    name = "names"

    def __init__(self, named: Callable[[str], bool]) -> None:
        self.named = named  # ``ppr.names_a_seed`` on the open index (plan does not import retrieve)

    def choose(self, question: str) -> tuple[str, dict[str, float]]:
        """One label, no probabilities."""
        return ("F" if self.named(question) else "B"), {}


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
    """The head's most probable label, where A (no retrieval) must reach ``NONE_MIN``: under
    5-fold CV on the dev labels its 12 A picks were all wrong (P(A) up to 0.7), while the 23
    questions labelled A got P(A) ≤ 0.29 — the head cannot tell them, so A is all but off."""
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
                 names: Callable[[], NameMatcher | None],
                 named: Callable[[str], bool] = lambda question: True) -> Planner:
    """The planner the settings ask for; ``head`` falls back to rules when none is exported."""
    if settings.planner == "names":
        return NamesPlanner(named)
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


__all__ = ["LABELS", "METHOD_OF_LABEL", "NONE_MIN", "PLANNERS", "HeadPlanner", "NamesPlanner", "Plan",
           "Planner", "PlannerHead", "RulePlanner", "SLMPlanner", "head_label", "make_planner",
           "plan_features", "run_planner"]
