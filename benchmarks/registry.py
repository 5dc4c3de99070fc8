"""Every benchmark by group: its name, its file and what it measures (its docstring's first
paragraph, read without importing it). A new benchmark goes into its group's folder and its name
into ``GROUPS``; ``tests/test_benchmarks.py`` checks that each one is listed and answers ``--help``."""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
# group (a sub-package of benchmarks/) -> its benchmarks (NAME.py with a main(argv), or NAME.sh)
GROUPS: dict[str, tuple[str, ...]] = {
    "retrieval": ("retrieval", "vector_recall", "vector_store", "graph_ablation", "auto_latency",
                  "planner_labels", "planner_eval", "planner_margin", "code_speed"),
    "answers": ("answer_accuracy", "answer_rules", "answer_decode", "abstention", "injection", "ask_latency",
               "suite", "verdicts", "dialogue"),
    "slm": ("slm_speed", "slm_quality", "board_slm", "export_memory", "memory"),
    "index": ("index_build", "graph_build", "formats", "encryption"),
    "scale": ("scale", "scale_build", "scale_corpus", "scale_density", "scale_marginal"),
    "server": ("serve", "load", "hostile_server"),
    "peers": ("peers",),
    "checks": ("behaviour", "arm64", "arm64_probe"),
}


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: ``python -m benchmarks NAME``."""

    name: str
    group: str

    @property
    def path(self) -> Path:
        """The script: ``benchmarks/GROUP/NAME.py``, or a shell script ``NAME.sh``."""
        script = HERE / self.group / f"{self.name}.py"
        return script if script.is_file() else script.with_suffix(".sh")

    @property
    def module(self) -> str | None:
        """The module to import (``benchmarks.GROUP.NAME``); None for a shell script."""
        return f"benchmarks.{self.group}.{self.name}" if self.path.suffix == ".py" else None

    @property
    def summary(self) -> str:
        """What it measures: its docstring's first paragraph, or a shell script's first comment."""
        return first_line(self.path)


def every() -> list[Benchmark]:
    """Every benchmark, group by group."""
    return [Benchmark(name, group) for group, names in GROUPS.items() for name in names]


def find(name: str) -> Benchmark:
    """The benchmark called ``name``; a KeyError that suggests the closest names."""
    found = {b.name: b for b in every()}
    if name not in found:
        close = difflib.get_close_matches(name, found, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no benchmark named {name!r}{hint} (python -m benchmarks --list)")
    return found[name]


def group_summary(group: str) -> str:
    """What a group measures: its package's docstring."""
    return first_line(HERE / group / "__init__.py")


def first_line(path: Path) -> str:
    """A Python file's docstring's first paragraph, or a shell script's first comment line, as one
    line of plain text."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        first = (ast.get_docstring(ast.parse(text)) or "").split("\n\n")[0]
    else:
        comments = [line.lstrip("# ").strip() for line in text.splitlines()[1:] if line.startswith("#")]
        first = comments[0] if comments else ""
    return " ".join(first.replace("``", "").split())
