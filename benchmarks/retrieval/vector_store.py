"""One copy of each vector: exact search over SQLite's codes against an HNSW file, per kind.

    python -m benchmarks vector_store                    # LiHua-World and 2Wiki benchmark indexes
    python -m benchmarks vector_store --dataset lihua --limit 100

For each vector kind (chunks, entity names, relations) of a benchmark index, in one run: the
vectors and their codes' bytes in SQLite, the bytes an HNSW ``.usearch`` file adds, the time to
load the codes from SQLite into the exact matrix and to open (memory-map) the file, the p50 of
one search (top 10) of each, and the HNSW's recall@10 against exact search. Queries are the
embedded dev questions. Writes ``vector_store.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.core.datasets import DATASETS
from benchmarks.core.measure import peak_rss_mb, percentiles
from benchmarks.core.results import markdown_table, write_result
from edge_rag import Settings
from edge_rag.engine import Engine
from edge_rag.store.vectors import ExactVectors, VectorIndex

K = 10


def main(argv: list[str] | None = None) -> int:
    """Measure every kind of every chosen data set's index and write the result."""
    args = _parser().parse_args(argv)
    rows = {}
    for name in args.dataset.split(","):
        dataset = DATASETS[name]
        with Engine.open(dataset.index, create=False, progress=False) as engine:
            questions = [q["question"] for q in dataset.queries()[: args.limit]]
            queries = engine.embedder.embed(questions)
            for kind in ("chunk", "entity", "relation"):
                rows[f"{name}/{kind}"] = _measure(engine, kind, queries)
                print(f"{name}/{kind}: {rows[f'{name}/{kind}']}", flush=True)
    _print(rows)
    result = {"k": K, "queries_per_dataset": args.limit, "kinds": rows,
              "peak_rss_mb": round(peak_rss_mb(), 1),
              "note": "exact = the codes read from SQLite into one matrix and searched by USearch's "
                      "brute-force kernel (no file); hnsw = the same codes in an HNSW file "
                      "(the schema-3 layout), memory-mapped. Loaded machine: compare within a row."}
    print(f"wrote {write_result('vector_store', result, Settings())}")
    return 0


def _measure(engine: Engine, kind: str, queries: np.ndarray) -> dict:
    dim, dtype = engine.embedder.dim, engine.settings.vector_dtype
    start = time.perf_counter()
    exact = ExactVectors.load(engine.store, kind, dim, dtype)
    load_ms = (time.perf_counter() - start) * 1000
    if not len(exact):
        return {"vectors": 0}
    with tempfile.TemporaryDirectory() as folder:
        hnsw = VectorIndex(Path(folder), kind, dim, dtype, engine.store)
        hnsw.index, hnsw.exact = exact.to_hnsw(dtype), None
        hnsw.index.save(str(hnsw.path))
        file_bytes = hnsw.path.stat().st_size
        start = time.perf_counter()
        hnsw.index = type(hnsw.index).restore(str(hnsw.path), view=True)
        open_ms = (time.perf_counter() - start) * 1000
        exact_index = VectorIndex(Path(folder), kind, dim, dtype, engine.store)
        exact_index.exact = exact
        exact_ms, hnsw_ms, overlap = [], [], []
        for query in queries:
            truth, ms = _timed(exact_index, query)
            found, ms_h = _timed(hnsw, query)
            exact_ms.append(ms)
            hnsw_ms.append(ms_h)
            overlap.append(len(set(truth) & set(found)) / max(1, len(truth)))
    return {"vectors": len(exact), "code_bytes": int(exact.rows.nbytes), "hnsw_file_bytes": file_bytes,
            "load_exact_ms": round(load_ms, 1), "open_hnsw_ms": round(open_ms, 1),
            "exact_p50_ms": percentiles(exact_ms, digits=3)["p50"],
            "hnsw_p50_ms": percentiles(hnsw_ms, digits=3)["p50"],
            "hnsw_recall@10": round(float(np.mean(overlap)), 4)}


def _timed(index: VectorIndex, query: np.ndarray) -> tuple[list[int], float]:
    start = time.perf_counter()
    keys, _ = index.search(query, K)
    return [int(k) for k in keys], (time.perf_counter() - start) * 1000


def _print(rows: dict) -> None:
    head = ["kind", "vectors", "codes MB", "HNSW file MB", "load exact ms", "open HNSW ms",
            "exact p50 ms", "HNSW p50 ms", "HNSW R@10"]
    body = [[name, r["vectors"], round(r.get("code_bytes", 0) / 1e6, 2),
             round(r.get("hnsw_file_bytes", 0) / 1e6, 2), r.get("load_exact_ms"), r.get("open_hnsw_ms"),
             r.get("exact_p50_ms"), r.get("hnsw_p50_ms"), r.get("hnsw_recall@10")]
            for name, r in rows.items()]
    print(markdown_table(head, body))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="lihua,2wiki", help="comma-separated data sets")
    parser.add_argument("--limit", type=int, default=200, help="dev questions used as queries")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
