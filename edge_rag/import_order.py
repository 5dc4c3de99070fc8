"""Loads onnxruntime before usearch, and refuses the one order that crashes.

onnxruntime 1.32's extension crashes the interpreter (SIGSEGV) when it is loaded after
usearch's compiled module in the same process (usearch 2.26, x86-64 and aarch64 wheels). edge_rag
imports this module first, so its own imports are safe; a program that imported usearch before
edge_rag gets an ImportError that says what to change instead of a crash.

Design: docs/design/api.md
"""

from __future__ import annotations

import sys

if "usearch.compiled" in sys.modules and "onnxruntime" not in sys.modules:
    raise ImportError("edge_rag must be imported before usearch: onnxruntime, which edge_rag "
                      "loads, crashes the process when usearch's compiled module is already "
                      "loaded. Import edge_rag (or onnxruntime) first.")

import onnxruntime  # noqa: E402,F401  (loaded here, before any usearch import)
