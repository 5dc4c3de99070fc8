"""Workstation-side model export (torch, transformers, optimum): never imported by the runtime."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import warnings
from collections.abc import Iterator

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


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence third-party chatter (quantizer INFO lines, tracer warnings, progress prints).

    Python warnings and logging below ERROR are dropped and stdout is swallowed while the block
    runs; on failure the swallowed output is replayed on stderr so nothing useful is lost.
    """
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    captured = io.StringIO()
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(captured):
            warnings.simplefilter("ignore")
            yield
    except BaseException:
        sys.stderr.write(captured.getvalue())
        raise
    finally:
        logging.disable(previous)
