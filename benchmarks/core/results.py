"""Results: ``benchmarks/results/NAME.json`` written with its stamp, Markdown tables, PNG plots.

Every results file starts with its stamp (``stamp``): the benchmark's name, when it was written,
the commit (``git rev-parse HEAD``, and ``commit_dirty`` when the tree had uncommitted changes),
the command that ran it, the settings that differ from ``Settings()`` and the machine. Files
written before the stamp carry ``"commit_source": "git log"`` instead of ``commit_dirty``: their
commit is the one that added or last changed the file, recorded afterwards.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.core.paths import RESULTS, ROOT
from edge_rag import Settings

STAMP_KEYS = ("benchmark", "when", "commit", "commit_dirty", "commit_source", "command", "settings_changed",
              "machine")


def write_result(name: str, payload: dict[str, Any], settings: Settings | None = None) -> Path:
    """Write ``benchmarks/results/NAME.json``: the stamp (``settings``: what the run used, None for
    a benchmark that runs no ``Settings``), then the payload."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    head = stamp(name, settings)
    payload = {**head, **payload, "benchmark": name, "commit": head["commit"],
               "commit_dirty": head["commit_dirty"]}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def stamp(name: str, settings: Settings | None = None) -> dict[str, Any]:
    """What every results file starts with (the module's docstring says what each field holds)."""
    return {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **commit(),
            "command": command(), "settings_changed": changed_settings(settings), "machine": machine()}


def commit() -> dict[str, Any]:
    """This checkout's HEAD and whether its tracked files have uncommitted changes (null outside git)."""
    def git(*args: str) -> str | None:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no") if head else None
    return {"commit": head, "commit_dirty": None if changes is None else bool(changes)}


def command(argv: list[str] | None = None) -> str:
    """The command line that ran this process, as a person would type it from the checkout."""
    first, *rest = argv or sys.argv
    path = Path(first).resolve()
    if first.startswith("python -m "):  # set by the benchmark tool (``python -m benchmarks NAME``)
        program = first
    elif path.suffix == ".py" and path.is_relative_to(ROOT / "benchmarks") and path.name != "__main__.py":
        program = "python -m " + ".".join(path.relative_to(ROOT).with_suffix("").parts)
    else:
        program = "python -m benchmarks" if path.name == "__main__.py" else path.name
    return " ".join([program, *map(shlex.quote, rest)])


def changed_settings(settings: Settings | None) -> dict[str, Any] | None:
    """The fields of ``settings`` that differ from ``Settings()`` (JSON values); None without settings."""
    if settings is None:
        return None
    default = Settings()
    return {f.name: _jsonable(getattr(settings, f.name)) for f in dataclasses.fields(settings)
            if getattr(settings, f.name) != getattr(default, f.name)}


def machine() -> dict[str, Any]:
    """The CPU, its cores (and those this process may use), memory, system, and the load average."""
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return {"python": platform.python_version(), "cpu": _proc_field("/proc/cpuinfo", "model name")
            or platform.processor() or platform.machine(), "arch": platform.machine(), "cores": cores,
            "cores_usable": usable, "memory_gib": _memory_gib(), "system": platform.platform(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def _proc_field(path: str, field: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as lines:
            return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(field)), None)
    except OSError:
        return None


def _memory_gib() -> float | None:
    total = _proc_field("/proc/meminfo", "MemTotal")  # "24576000 kB"
    return round(int(total.split()[0]) / 2**20, 1) if total else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    cells = [[_cell(v) for v in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def pyplot() -> Any | None:
    """matplotlib's pyplot on the file-only Agg backend, or None (with a hint) without the bench extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: pip install 'edge-rag[bench]'")
        return None
    return plt


def save_figure(plt: Any, figure: Any, path: Path) -> None:
    """Write a figure as a PNG and release it."""
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")
