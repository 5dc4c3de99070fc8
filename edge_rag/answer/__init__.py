"""The answer stage: grounded answers from retrieved context, created by the ``answer_stage``
setting like the retrievers (``make_retriever``) and planners (``make_planner``).

- ``plain.py``: the retrieved chunks numbered as they are (``plain``);
- ``focused.py``: the best lines of the retrieved documents (``evidence_lines.py``), answer forms
  (``forms.py``) and abstention on evidence (``abstain.py``) (``focused``, the default);
- ``hops.py``: bridge and either-or questions answered a link or a date at a time (``ask``);
- ``types.py``: what both return; the prompts, chat template and stop strings are in
  ``edge_rag/prompts.py`` with every other prompt.

Design: docs/design/answer.md
"""

from __future__ import annotations

from ..config import Settings
from ..models.slm import SLM
from .focused import (
    ONLY_CITATIONS,
    RULES,
    Evidence,
    FocusedAnswerer,
    Prepared,
    dates_in,
    document_days,
    echoes,
    missing_date,
    on_days,
    quote,
    source_sentence,
)
from .plain import Answerer
from .types import Answer, AnswerStage, AnswerStream


def make_answer_stage(settings: Settings, slm: SLM, evidence: Evidence) -> AnswerStage:
    """The stage of ``settings.answer_stage`` (``plain``, else ``focused``), built with every
    setting it reads; ``evidence`` is what the focused stage reads besides the SLM."""
    if settings.answer_stage == "plain":
        return Answerer(slm, settings.context_token_budget, settings.answer_max_tokens,
                        settings.source_guard, settings.draft_tokens)
    return FocusedAnswerer(slm, evidence, settings.focus_tokens, settings.focus_max_new_tokens,
                           settings.abstain_threshold, settings.no_threshold, settings.abstain_terms,
                           settings.source_guard, settings.draft_tokens, settings.answer_rules_off)


__all__ = ["ONLY_CITATIONS", "RULES", "Answer", "AnswerStage", "AnswerStream", "Answerer", "Evidence",
           "FocusedAnswerer", "Prepared", "dates_in", "document_days", "echoes", "make_answer_stage",
           "missing_date", "on_days", "quote", "source_sentence"]
