"""The package's layering holds: SQL and vector bytes stay in store/, and index, retrieve and plan
share the lexicon instead of importing each other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "edge_rag"
# Sub-packages that must not import each other (at run time or for types): they share lexicon.py.
APART = {"index": {"retrieve", "plan"}, "retrieve": {"index"}, "plan": {"retrieve", "index"}}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imported(path: Path) -> set[str]:
    """Absolute names of the edge_rag modules a file imports."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            names.add(".".join(base + tuple(filter(None, (node.module or "").split(".")))))
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("edge_rag")}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_sql_and_vector_bytes_stay_in_the_store(path: Path) -> None:
    if path.parent.name == "store":
        return
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\.execute(many)?\(|\bimport sqlite3\b|\.conn\b", text)
    assert not re.search(r"float16|frombuffer|tobytes", text)


def test_only_the_codec_encodes_vectors() -> None:
    users = [p.name for p in (PACKAGE / "store").glob("*.py")
             if re.search(r"float16|frombuffer|tobytes", p.read_text(encoding="utf-8"))]
    assert users == ["codec.py"]


@pytest.mark.parametrize("layer", sorted(APART))
def test_index_retrieve_and_plan_do_not_import_each_other(layer: str) -> None:
    for path in (PACKAGE / layer).glob("*.py"):
        reached = {name.split(".")[1] for name in _imported(path) if name.count(".") >= 1}
        assert not reached & APART[layer], f"{path.name} imports {sorted(reached & APART[layer])}"


def test_the_lexicon_depends_on_nothing_of_the_package() -> None:
    assert _imported(PACKAGE / "lexicon.py") == set()


def test_the_package_is_marked_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^edge_rag = \[.*"py\.typed".*\]', pyproject, re.MULTILINE)
