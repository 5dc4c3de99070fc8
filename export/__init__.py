"""Workstation-side model export (torch, transformers, optimum): never imported by the runtime."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from edge_rag.errors import MissingExtra
from edge_rag.models.folder import MANIFEST

EXTRA_HINT = "pip install 'edge-rag[export]'"
_VERBOSE = False


def log(message: str) -> None:
    """Progress line of a long export step, on stderr."""
    print(f"[export] {message}", file=sys.stderr, flush=True)


def require_export_extra(modules: tuple[str, ...] = ("torch", "transformers", "optimum.exporters.onnx",
                                                     "onnx"), hint: str = EXTRA_HINT,
                         what: str = "model export") -> None:
    """Fail with the extra to install when the export toolchain (``modules``) is missing."""
    missing = []
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            missing.append(module.split(".")[0])
    if missing:
        raise MissingExtra(f"{what} needs {', '.join(missing)}: {hint}")


def already_exported(folder: Path, name: str, force: bool, version: int | None = None) -> bool:
    """True (and says so) when ``folder`` holds a finished export that ``--force`` does not redo.

    With ``version`` (the exporter's), a folder written by an older exporter (its manifest's
    ``exporter_version``, 1 when absent) is stale: False, so the caller writes it again.
    """
    if force or not (folder / MANIFEST).is_file():
        return False
    written = exporter_version(folder)
    if version is not None and written < version:
        log(f"{name} at {folder} was written by exporter version {written}: exporting it again "
            f"with version {version}")
        return False
    log(f"{name} already exported at {folder} (use --force to redo)")
    return True


def exporter_version(folder: Path) -> int:
    """The ``exporter_version`` in a model folder's manifest (1 when absent, 0 if unreadable)."""
    try:
        return int(json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
                   .get("exporter_version", 1))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def set_verbose(verbose: bool) -> None:
    """``--verbose``: let the libraries' warnings, INFO logs and prints through ``quiet()``."""
    global _VERBOSE
    _VERBOSE = verbose


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence third-party chatter (quantizer INFO lines, tracer warnings, progress prints).

    Python warnings and logging below ERROR are dropped, onnxruntime's own log keeps errors only
    and stdout is swallowed while the block runs; on failure the swallowed output is replayed on
    stderr so nothing useful is lost. A no-op after ``set_verbose(True)``.
    """
    if _VERBOSE:
        yield
        return
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    _onnxruntime_errors_only()
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
        _onnxruntime_errors_only(False)


def _onnxruntime_errors_only(errors_only: bool = True) -> None:
    import onnxruntime

    onnxruntime.set_default_logger_severity(3 if errors_only else 2)
