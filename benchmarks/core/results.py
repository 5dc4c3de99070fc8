"""Results: ``benchmarks/results/NAME.json`` written with its stamp, Markdown tables, PNG plots."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

from benchmarks.core.paths import RESULTS


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/NAME.json`` with machine facts added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "machine": {"python": platform.python_version(), "cpu": platform.processor()
                           or platform.machine(), "system": platform.platform()}, **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


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
