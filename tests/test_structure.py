"""The package's layering holds: every module imports only down the layer order (``LAYERS``), no
module cycle, SQL and vector bytes stay in store/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "edge_rag"
# The layer order, bottom first: a module imports (at run time or for types) only modules of its own
# unit or of a lower layer. Units of one layer do not import each other (index and retrieve share the
# lexicon and the store instead); the question probes sit below both plan and retrieve, Plan below
# retrieve (a retrieval records the plan that chose it).
LAYERS = [
    {"errors", "lexicon", "progress", "guard", "prompts", "import_order"},
    {"config"},
    {"store", "questions"},
    {"models"},
    {"budget"},
    {"plan"},
    {"index", "retrieve"},
    {"answer"},
    {"engine"},
    {"api"},
    {"serve"},
    {"cli", "__init__"},
]
LAYER = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (PACKAGE.parent / relative).with_suffix(".py").is_file() or (PACKAGE.parent / relative).is_dir()


def _imported(path: Path) -> set[str]:
    """Absolute names of the edge_rag modules a file imports (``from X import m`` counts X.m
    where m is a module)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join(base + tuple(filter(None, (node.module or "").split("."))))
            subs = {f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")}
            names.update(subs or {module})
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n == "edge_rag" or n.startswith("edge_rag.")}


def _unit(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph() -> dict[str, set[str]]:
    return {_name(path): _imported(path) for path in _modules()}


@pytest.mark.parametrize("path", [p for p in _modules() if p.parent.name != "store"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_sql_and_vector_bytes_stay_in_the_store(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\.execute(many)?\(|\bimport sqlite3\b|\.conn\b", text)
    assert not re.search(r"float16|frombuffer|tobytes", text)


def test_only_the_codec_encodes_vectors() -> None:
    users = [p.name for p in (PACKAGE / "store").glob("*.py")
             if re.search(r"float16|frombuffer|tobytes", p.read_text(encoding="utf-8"))]
    assert users == ["codec.py"]


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {_unit(name) for name in _graph()}
    assert units == set(LAYER), f"units without a layer: {sorted(units - set(LAYER))}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layer_order(path: Path) -> None:
    unit = _unit(_name(path))
    for name in _imported(path):
        other = _unit(name)
        assert other == unit or LAYER[other] < LAYER[unit], f"{_name(path)} imports {name}: not below {unit}"


def test_no_module_imports_itself_back() -> None:
    graph, done, trail = _graph(), set(), []

    def visit(name: str) -> None:
        if name in trail:
            raise AssertionError("import cycle: " + " -> ".join(trail[trail.index(name):] + [name]))
        if name in done:
            return
        trail.append(name)
        for other in sorted(graph.get(name, ())):
            visit(other)
        trail.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_lexicon_depends_on_nothing_of_the_package() -> None:
    assert _imported(PACKAGE / "lexicon.py") == set()


def test_the_package_is_marked_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^edge_rag = \[.*"py\.typed".*\]', pyproject, re.MULTILINE)


def test_nothing_outside_the_facade_reaches_into_it() -> None:
    """``EdgeRAG`` keeps its parts in ``_engine``: tests and benchmarks use the public API, or open
    the component they exercise (an ``Engine``, a store, a model) themselves."""
    root, reached, private = PACKAGE.parent, [], "._" + "engine"
    for folder in ("edge_rag", "tests", "benchmarks", "export"):
        for path in sorted((root / folder).rglob("*.py")):
            if path != PACKAGE / "api.py" and private in path.read_text(encoding="utf-8"):
                reached.append(str(path.relative_to(root)))
    assert not reached, f"these reach into EdgeRAG's private parts: {reached}"


def test_the_facade_stays_small() -> None:
    tree = ast.parse((PACKAGE / "api.py").read_text(encoding="utf-8"))
    facade = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EdgeRAG")
    assert facade.end_lineno - facade.lineno + 1 <= 300
