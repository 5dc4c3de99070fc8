"""An index browsed as its users' card says: sqlite-utils (the ``[inspect]`` extra) opens the
SQLite file and reads the views a person would ask for."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sqlite_utils = pytest.importorskip("sqlite_utils")


def test_sqlite_utils_reads_the_views_of_a_built_index(lihua_index: Path) -> None:
    db = sqlite_utils.Database(lihua_index / "index.sqlite")
    assert {"entity_relations", "document_chunks"} <= set(db.view_names())
    relations = list(db["entity_relations"].rows_where("kind = ?", ["structural"], limit=5))
    assert relations and all(r["source"] and r["target"] and r["weight"] is not None for r in relations)
    similar = list(db["entity_relations"].rows_where("kind = ?", ["similar"], limit=5))
    assert all(r["score"] is not None for r in similar)
    chunks = list(db.query("SELECT source, chunk, text FROM document_chunks ORDER BY source, chunk LIMIT 3"))
    assert chunks and chunks[0]["chunk"] == 0 and chunks[0]["text"].startswith("Time:")


def test_the_readme_commands_run(lihua_index: Path) -> None:
    tool = shutil.which("sqlite-utils") or str(Path(sys.executable).parent / "sqlite-utils")
    counts = subprocess.run([tool, "tables", str(lihua_index / "index.sqlite"), "--counts"],
                            capture_output=True, text=True, check=True)
    assert {"table": "documents", "count": 35} in json.loads(counts.stdout)
    query = ("SELECT target, weight FROM entity_relations WHERE source = 'LiHua' AND kind = 'structural' "
             "ORDER BY weight DESC LIMIT 3")
    found = subprocess.run([tool, str(lihua_index / "index.sqlite"), query], capture_output=True, text=True,
                           check=True)
    assert len(json.loads(found.stdout)) == 3
