"""Evidence recall and latency of every retrieval method (VR, LR, DR, TR, ppr, titles, auto with the
default planner, and the no-weights ablation).

    python -m benchmarks retrieval                      # LiHua-World dev queries, fast-extractor graph
    python -m benchmarks retrieval --dataset 2wiki      # 2WikiMultihopQA dev questions
    python -m benchmarks retrieval --dataset hotpotqa   # also: multihop (derived corpus)
    python -m benchmarks retrieval --dataset 2wiki --methods vector,ppr --as-is   # some methods only

LiHua-World: recall@k is the share of a query's evidence conversations among the documents of
the top-k chunks (Null queries have no evidence and are left out), split by Single and Multi.
2WikiMultihopQA: the share of a question's supporting passages among the first k distinct passages
of the ranked chunks (a long passage can have several chunks), as HippoRAG reports recall@2/@5.
MultiHop-RAG: the share of a query's evidence facts found verbatim in the top-k chunks (the
upstream rule). Queries without evidence are left out. Writes ``retrieval_<dataset>.json``, or
``retrieval_<dataset>_<methods>.json`` when ``--methods`` picks some; ``--as-is`` uses the index
as it stands without indexing what is missing (an index whose relation vectors are not yet
embedded serves vector and ppr, which do not read them).
"""

from __future__ import annotations

import argparse
import time

from benchmarks.core.datasets import DATASETS, open_index
from benchmarks.core.measure import evaluate_recall, peak_rss_mb
from benchmarks.core.options import options
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings

METHODS = ("vector", "local", "dual", "topology", "ppr", "titles", "auto")
ABLATED = ("local", "dual", "topology", "ppr")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    start = time.perf_counter()
    if args.as_is:
        opened = EdgeRAG.open(dataset.index, create=False)
    else:
        opened = open_index(dataset, progress=not args.quiet)
    with opened as rag:
        build = {"seconds": round(time.perf_counter() - start, 1), **_stats(rag)}
        truth = dataset.recall(rag)
    queries = [q for q in dataset.queries() if q["evidence"]]
    queries = queries[: args.limit] if args.limit else queries
    rows = {}
    methods = args.methods.split(",") if args.methods else METHODS
    ablated = [] if args.no_ablation else [m for m in ABLATED if m in methods]
    for method, weights in [(m, True) for m in methods] + [(m, False) for m in ablated]:
        name = method if weights else f"{method} -weights"
        with EdgeRAG.open(dataset.index, create=False, use_weights=weights) as rag:
            rows[name] = evaluate_recall(rag, method, queries, truth, dataset.ks)
    result = {"dataset": args.dataset, "note": dataset.note, "queries": len(queries), "build": build,
              "methods": rows, "peak_rss_mb": round(peak_rss_mb(), 1)}
    _print(result, dataset.ks)
    write_result(f"retrieval_{args.dataset}" + (f"_{'_'.join(methods)}" if args.methods else ""), result,
                 Settings())
    return 0


def _stats(rag: EdgeRAG) -> dict:
    stats = rag.stats()
    return {"documents": stats.documents, "chunks": stats.chunks, "entities": stats.entities,
            "relations": stats.relations, "similar_edges": stats.similar_edges,
            "total_bytes": stats.total_bytes}


def _print(result: dict, ks: tuple[int, ...]) -> None:
    kinds = [k for k in ("Single", "Multi", "All") if k in next(iter(result["methods"].values()))]
    headers = ["method"] + [f"{kind} R@{k}" for kind in kinds for k in ks] + ["p50 ms", "p95 ms"]
    rows = [[name] + [r[kind][f"recall@{k}"] for kind in kinds for k in ks]
            + [r["latency_ms"]["p50"], r["latency_ms"]["p95"]] for name, r in result["methods"].items()]
    print(markdown_table(headers, rows))
    print(f"\n{result['queries']} queries; index: {result['build']}")


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua", limit=None, limit_help="only the first N queries", as_is=True)
    parser = argparse.ArgumentParser(parents=[shared], prog="python -m benchmarks retrieval",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--methods", default=None, help=f"comma-separated subset of {','.join(METHODS)}")
    parser.add_argument("--no-ablation", action="store_true", help="skip the no-weights runs")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
