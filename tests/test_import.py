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
