"""No module import cycle anywhere in the repository: the runtime, the exporter, the benchmarks and
the tests, read with ``ast`` (imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Import name of each top-level folder (export/ installs as edge_rag_export).
PACKAGES = {"edge_rag": "edge_rag", "export": "edge_rag_export", "benchmarks": "benchmarks", "tests": "tests"}


def _name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    parts = [PACKAGES[folder], *rest]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_name(path): path for folder in PACKAGES for path in sorted((ROOT / folder).rglob("*.py"))}


def _imported(path: Path, modules: dict[str, Path]) -> set[str]:
    """The repository's modules a file imports (``from X import m`` counts X.m where m is a module)."""
    name = _name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + [p for p in (node.module or "").split(".") if p])
            subs = {f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules}
            found |= subs or {module}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found & set(modules)


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of the graph (its modules in order, the first repeated), or none."""
    done: set[str] = set()
    trail: list[str] = []

    def visit(name: str) -> list[str]:
        if name in trail:
            return trail[trail.index(name):] + [name]
        if name in done:
            return []
        trail.append(name)
        for other in sorted(graph[name]):
            if found := visit(other):
                return found
        trail.pop()
        done.add(name)
        return []

    return next((found for name in sorted(graph) if (found := visit(name))), [])


def test_no_module_imports_itself_back_anywhere_in_the_repository() -> None:
    modules = _modules()
    assert {"benchmarks.core.datasets", "edge_rag_export.slm", "tests.conftest"} <= set(modules)
    graph = {name: _imported(path, modules) for name, path in modules.items()}
    cycle = _cycle(graph)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_lazy_cycle() -> None:
    # benchmarks/common.py imported datasets inside a function while datasets imported common.
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []
