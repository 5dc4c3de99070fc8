"""The rule planner: the paper's §3.3 criteria as a few cues; the fallback when no head exists.

Design: docs/design/planner.md
"""

from __future__ import annotations

import numpy as np

from .features import CHEAP_NAMES


def rule_label(cheap: np.ndarray) -> str:
    """A (never: no retrieval is never safe on a private corpus), B, C, D or E from cues.

    Chains ("the director of the film …") and comparisons of several entities need paths
    (E); several entities or aggregation need the two-level view (D); one named entity in a
    focused question suits the local neighbourhood (C); anything else is semantic matching (B).
    """
    value = dict(zip(CHEAP_NAMES, cheap.tolist()))
    entities = round(max(value["entities"], value["specific_terms"]) * 5)
    if value["cue_chain"] > 0 and entities >= 1 or value["cue_comparison"] > 0 and entities >= 2:
        return "E"
    if entities >= 2 or value["cue_aggregation"] > 0:
        return "D"
    if entities == 1:
        return "C"
    return "B"
