"""VR evidence recall@k on LiHua-World dev queries, with index time, throughput, size, RSS.

    python -m benchmarks vector_recall [--index DIR] [--profile dev] [--chunk-tokens N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.core.datasets import LIHUA_ZIP, document_timestamp, lihua_queries
from benchmarks.core.measure import peak_rss_mb, percentiles
from benchmarks.core.options import options
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG

KS = (1, 3, 5, 10)


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) a LiHua-World index and print VR recall@k on the dev queries."""
    args = _parser().parse_args(argv)
    overrides = {"chunk_tokens": args.chunk_tokens, "chunk_overlap": args.chunk_overlap}
    folder = Path(args.index or tempfile.mkdtemp(prefix="edge-rag-bench-")) / "lihua-world"
    if args.rebuild and folder.exists():
        shutil.rmtree(folder)
    with EdgeRAG.open(folder, args.profile, **overrides) as rag:
        build = _build(rag)
        recall = _recall(rag, lihua_queries())
        embedder = rag.stats().embedder
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()}
    result = {"settings": {"profile": rag.settings.profile, "chunk_tokens":
                           rag.settings.chunk_tokens, "chunk_overlap": rag.settings.chunk_overlap,
                           "embedder": embedder, "vector_dtype": rag.settings.vector_dtype},
              "build": build, "recall": recall, "index_bytes": files,
              "index_total_bytes": sum(files.values()), "peak_rss_mb": round(peak_rss_mb(), 1)}
    _print(result)
    print(f"wrote {write_result(args.name, result, rag.settings)}")
    return 0


def _build(rag: EdgeRAG) -> dict:
    start = time.perf_counter()
    report = rag.insert(LIHUA_ZIP)
    seconds = time.perf_counter() - start
    return {"documents": len(report.added), "chunks": report.chunks, "seconds": round(seconds, 2),
            "chunks_per_second": round(report.chunks / seconds, 2) if report.chunks else None,
            "reused": not report.added}


def _recall(rag: EdgeRAG, queries: list[dict]) -> dict:
    timestamps = {d.id: document_timestamp(rag.chunks(d.id)[0].text)
                  for d in rag.documents()}
    per_type: dict[str, list[list[float]]] = {}
    latencies = []
    for query in (q for q in queries if q["type"] != "Null"):
        start = time.perf_counter()
        found = rag.retrieve(query["question"], "vector", top_k=max(KS) * 3)
        latencies.append((time.perf_counter() - start) * 1000)
        row = [_chunk_recall(found.chunks, timestamps, query["evidence"], k) for k in KS]
        per_type.setdefault(query["type"], []).append(row)
        per_type.setdefault("All", []).append(row)
    summary = {t: {f"recall@{k}": round(sum(r[i] for r in rows) / len(rows), 4)
                   for i, k in enumerate(KS)} | {"queries": len(rows)}
               for t, rows in per_type.items()}
    summary["latency_ms"] = percentiles(latencies, digits=2)
    return summary


def _chunk_recall(chunks, timestamps: dict, evidence: list[str], k: int) -> float:
    """Share of evidence documents among the documents of the top-k chunks."""
    hit = {timestamps[c.doc_id] for c in chunks[:k]}
    return len(hit & set(evidence)) / len(evidence)


def _print(result: dict) -> None:
    recall = result["recall"]
    rows = [[t, recall[t]["queries"], *(recall[t][f"recall@{k}"] for k in KS)]
            for t in ("Single", "Multi", "All") if t in recall]
    print(markdown_table(["type", "queries", *(f"R@{k}" for k in KS)], rows))
    build = result["build"]
    print(f"\nindex: {build['documents']} docs, {build['chunks']} chunks in {build['seconds']} s "
          f"({build['chunks_per_second']} chunks/s); {result['index_total_bytes'] / 2**20:.1f} MiB; "
          f"peak RSS {result['peak_rss_mb']} MiB; retrieve p50 {recall['latency_ms']['p50']} ms")


def _parser() -> argparse.ArgumentParser:
    shared = options(profile=None)
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n")[0])
    parser.add_argument("--index", help="folder for the benchmark index (default: a temp folder)")
    parser.add_argument("--chunk-tokens", type=int, default=None)
    parser.add_argument("--chunk-overlap", type=int, default=None)
    parser.add_argument("--rebuild", action="store_true", help="delete and rebuild the index")
    parser.add_argument("--name", default="vector_recall", help="result file name")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
