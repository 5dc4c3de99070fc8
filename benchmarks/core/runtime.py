"""Other versions of the runtime, for A/B runs in one process tree: the ``edge_rag`` package of an
earlier commit or of another checkout, run by this checkout's benchmarks in a child process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from benchmarks.core.paths import ROOT


def commit_of(code: Path) -> str:
    """The commit checked out at ``code`` (a worktree a benchmark compares with)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=code, capture_output=True,
                          text=True, check=True).stdout.strip()


def runtime_at(commit: str) -> Path:
    """The ``edge_rag`` package as it was at ``commit`` (``git archive``), in a cached folder."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", commit],
                            capture_output=True, text=True, check=True).stdout.strip()
    dest = Path(tempfile.gettempdir()) / f"edge-rag-runtime-{commit}"
    if not (dest / "edge_rag" / "__init__.py").is_file():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "edge_rag"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def runtime_of(code: Path) -> Path:
    """A folder holding only a link to ``code``'s ``edge_rag`` (a checkout being compared), so that a
    child started there runs that runtime with this checkout's benchmarks (``child_env``)."""
    code = code.resolve()
    if code == ROOT:
        return ROOT
    dest = Path(tempfile.gettempdir()) / f"edge-rag-runtime-of-{hashlib.sha256(bytes(code)).hexdigest()[:12]}"
    dest.mkdir(parents=True, exist_ok=True)
    link = dest / "edge_rag"
    if not link.is_symlink() or link.resolve() != code / "edge_rag":
        link.unlink(missing_ok=True)
        link.symlink_to(code / "edge_rag", target_is_directory=True)
    return dest


def child_env(runtime: Path | None = None) -> dict[str, str]:
    """The environment of a child benchmark process: this checkout's ``benchmarks`` importable. Run
    the child in ``runtime`` (``runtime_at``, ``runtime_of``) to put that ``edge_rag`` first: with
    ``python -m``, the working folder comes first on ``sys.path``."""
    env = dict(os.environ)
    paths = [str(ROOT)] if runtime in (None, ROOT) else [str(runtime), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*paths, env.get("PYTHONPATH", "")]))
    return env
