"""What the benchmarks measure with: peak and current RSS, percentiles, an RSS sampler, the bytes
an index keeps (per file and per retrieval method) and evidence recall per question type."""

from __future__ import annotations

import resource
import sqlite3
import statistics
import sys
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from edge_rag import EdgeRAG
from edge_rag.store.vectors import CANDIDATES_FILE


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


class RssSampler:
    """Resident memory of this process, read from /proc once a second in a thread: the peak of
    each 10-second window shows which stage of the build holds the memory."""

    def __init__(self, every: float = 1.0) -> None:
        self.peaks: dict[int, float] = {}
        self._start, self._every, self._done = time.perf_counter(), every, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling."""
        self._done.set()
        self._thread.join()

    def series(self) -> list[list[float]]:
        """[window start in seconds, peak MiB] for each 10-second window."""
        return [[10 * w, round(mb, 1)] for w, mb in sorted(self.peaks.items())]

    def _run(self) -> None:
        while not self._done.wait(self._every):
            window = int((time.perf_counter() - self._start) // 10)
            self.peaks[window] = max(self.peaks.get(window, 0.0), rss_mb())


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
    pages are split by table with the ``dbstat`` virtual table. The entity names' candidate sets
    (``candidates.npz``) serve the next write, no retrieval.
    """
    files = {name: size for name, size in stored_files(index).items() if name != CANDIDATES_FILE}
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


def evaluate_recall(rag: EdgeRAG, method: str, queries: list[dict], truth: Callable,
                    ks: tuple[int, ...]) -> dict:
    """recall@k per question type (and All) of one method over the queries, with latency p50/p95."""
    hits: dict[str, dict[int, list[float]]] = {}
    latencies = []
    for query in queries:
        start = time.perf_counter()
        found = rag.retrieve(query["question"], method=method, top_k=2 * max(ks))
        latencies.append((time.perf_counter() - start) * 1000)
        for kind in (query["type"], "All"):
            for k in ks:
                hits.setdefault(kind, {}).setdefault(k, []).append(truth(found.chunks, query, k))
    out = {kind: {"queries": len(v[ks[0]]), **{f"recall@{k}": round(statistics.mean(v[k]), 3) for k in ks}}
           for kind, v in hits.items()}
    out["latency_ms"] = percentiles(latencies)
    return out
