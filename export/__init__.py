"""Workstation-side model export (torch, transformers, optimum): never imported by the runtime."""

from __future__ import annotations

import sys

from edge_rag.errors import MissingExtra

EXTRA_HINT = "pip install 'edge-rag[export]'"


def log(message: str) -> None:
    """Progress line of a long export step, on stderr."""
    print(f"[export] {message}", file=sys.stderr, flush=True)


def require_export_extra() -> None:
    """Fail with the extra to install when the export toolchain is missing."""
    missing = []
    for module in ("torch", "transformers", "optimum.exporters.onnx", "onnx"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module.split(".")[0])
    if missing:
        raise MissingExtra(f"model export needs {', '.join(missing)}: {EXTRA_HINT}")
