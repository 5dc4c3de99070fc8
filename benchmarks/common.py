"""Shared pieces of the benchmark scripts: datasets, evidence matching, tables, results."""

from __future__ import annotations

import json
import platform
import re
import resource
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"
LIHUA_ZIP = SHARED / "lihua-world" / "data" / "LiHuaWorld.zip"
LIHUA_QUERIES = SHARED / "lihua-world" / "queries.dev.json"
WIKI = SHARED / "2wikimultihopqa"
TIMESTAMP = re.compile(r"(\d{8})_(\d{2}):?(\d{2})")


def lihua_queries(path: Path = LIHUA_QUERIES) -> list[dict[str, Any]]:
    """LiHua-World queries with normalised evidence timestamps (``YYYYMMDD_HH:MM``)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for key, item in raw.items():
        evidence = normalise_evidence(item.get("evidence", ""))
        out.append({"id": key, "question": item["question"], "answer": item["answer"],
                    "type": item["type"], "evidence": evidence})
    return out


def wiki_records() -> list[dict[str, Any]]:
    """2WikiMultihopQA passages: ``id``, ``title``, ``text``."""
    lines = (WIKI / "corpus.derived.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def wiki_queries() -> list[dict[str, Any]]:
    """2WikiMultihopQA dev questions; evidence = supporting passage titles, all typed Multi."""
    raw = json.loads((WIKI / "queries.dev.json").read_text(encoding="utf-8"))
    return [{"id": q["id"], "question": q["question"], "answer": q["answer"], "type": "Multi",
             "aliases": list(dict.fromkeys([q["answer"], *q.get("answer_aliases", [])])),
             "evidence": sorted(set(q["supporting_facts"]))} for q in raw]


def normalise_evidence(text: str) -> list[str]:
    """Timestamps of an evidence string; tolerates missing colons and 'Time: ' prefixes."""
    return sorted({f"{d}_{h}:{m}" for d, h, m in TIMESTAMP.findall(text or "")})


def document_timestamp(first_chunk_text: str) -> str | None:
    """The ``Time:`` header of a LiHua-World conversation."""
    match = TIMESTAMP.search(first_chunk_text.split("\n", 1)[0])
    return f"{match[1]}_{match[2]}:{match[3]}" if match else None


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    Reads VmHWM on Linux: ru_maxrss would include the peak of the parent that forked us.
    """
    found = _status_mb("VmHWM")
    if found is None:
        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20
    return found


def rss_mb() -> float:
    """Resident set size of this process now, in MiB (VmRSS; 0 where /proc is missing)."""
    return _status_mb("VmRSS") or 0.0


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next(line for line in status if line.startswith(f"{field}:"))
        return int(line.split()[1]) / 1024
    except (OSError, StopIteration):
        return None


def percentiles(values: list[float], digits: int = 1) -> dict[str, float]:
    """p50 and p95 of a list of timings (nearest rank; 0 for an empty list)."""
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0
    return {"p50": round(at(0.5), digits), "p95": round(at(0.95), digits)}


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    cells = [[_cell(v) for v in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/NAME.json`` with machine facts added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "machine": {"python": platform.python_version(), "cpu": platform.processor()
                           or platform.machine(), "system": platform.platform()}, **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


VECTOR_TABLES = {"documents", "chunks", "manifest", "vector_files", "sqlite_schema", "sqlite_sequence"}


def stored_files(folder: Path, recursive: bool = False) -> dict[str, int]:
    """Bytes per file an index keeps on disk (relative names).

    SQLite's -wal/-shm files and the write lock come and go with connections: not the index.
    """
    paths = folder.rglob("*") if recursive else folder.iterdir()
    return {str(p.relative_to(folder)): p.stat().st_size for p in paths
            if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock"))}


def method_footprint(index: Path) -> dict[str, int]:
    """Bytes on disk each retrieval method needs from an index (the paper's Figure 7 x-axis).

    ``vector`` needs the documents and chunks tables and ``chunks.usearch`` (when kept); ``local``
    the whole graph but not the relation vectors (their codes in SQLite and any relation file),
    and so does ``ppr``; ``dual``, ``topology`` and ``auto``
    everything. SQLite's
    pages are split by table with the ``dbstat`` virtual table.
    """
    files = stored_files(index)
    with closing(sqlite3.connect(f"file:{index / 'index.sqlite'}?mode=ro", uri=True)) as db:
        owner = dict(db.execute("SELECT name, tbl_name FROM sqlite_schema"))
        pages = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        relation_codes = db.execute("SELECT coalesce(sum(length(vector)), 0) FROM relations").fetchone()[0]
    vector_sql = sum(size for name, size in pages if owner.get(name, name) in VECTOR_TABLES)
    total = sum(files.values())
    no_relation_vectors = total - files.get("relations.usearch", 0) - int(relation_codes)
    return {"none": 0, "vector": vector_sql + files.get("chunks.usearch", 0),
            "local": no_relation_vectors, "dual": total, "topology": total,
            "ppr": no_relation_vectors, "auto": total}


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


def setting(item: str) -> tuple[str, object]:
    """A ``FIELD=VALUE`` settings override, the value read as JSON where it parses (numbers,
    true), else as text."""
    key, _, value = item.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value
