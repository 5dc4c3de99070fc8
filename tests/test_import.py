"""The runtime stays light: importing edge_rag pulls no torch, transformers or optimum."""

import subprocess
import sys

HEAVY = "{'torch', 'transformers', 'optimum'}"


def test_import_edge_rag_loads_no_heavy_packages():
    modules = "edge_rag, edge_rag.cli, edge_rag.models.slm, edge_rag.models.constraints, edge_rag.answer"
    code = f"import {modules}, sys; assert not {HEAVY} & set(sys.modules), sys.modules.keys()"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_api_names_have_docstrings():
    import edge_rag

    missing = [name for name in edge_rag.__all__
               if not name.startswith("_") and not getattr(edge_rag, name).__doc__]
    assert missing == []


ALLOWED = {"onnxruntime", "tokenizers", "usearch", "rapidfuzz", "numpy", "tomli", "edge_rag"}
OPTIONAL = {"matplotlib"}  # imported inside `edge-rag graph --png` only; MissingExtra names [bench]
OPTIONAL |= {"starlette", "uvicorn", "python_multipart"}  # edge_rag.serve only: [serve]
OPTIONAL |= {"sqlcipher3"}  # imported when an encrypted index opens only; MissingExtra names [encrypt]


def test_runtime_imports_only_the_allowed_packages():
    """Every module of edge_rag imported: no third-party package outside the design card's list.

    `tomli` is the standard library's `tomllib` for Python < 3.11. Packages that the allowed ones
    pull in themselves (onnxruntime's, for one) are theirs, so only what edge_rag's own
    source imports is checked, by reading its import statements.
    """
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "edge_rag"
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    foreign = {name for name in found - ALLOWED - OPTIONAL if name not in sys.stdlib_module_names}
    assert foreign == set()


def test_usearch_imported_first_is_a_clear_error_not_a_crash():
    """onnxruntime loaded after usearch's compiled module segfaults; edge_rag says so instead."""
    crash = subprocess.run([sys.executable, "-c", "import usearch.index, edge_rag"],
                           capture_output=True, text=True)
    assert crash.returncode == 1 and "edge_rag must be imported before usearch" in crash.stderr
    fine = subprocess.run([sys.executable, "-c", "import edge_rag, usearch.index"],
                          capture_output=True, text=True)
    assert fine.returncode == 0, fine.stderr
