"""The on-device benchmark suite: one profile, one data set, every method, one table.

    python -m benchmarks.suite [--profile dev] [--dataset lihua|2wiki|hotpotqa|multihop]
                               [--limit 60] [--queries FILE] [--methods none,vector,...] [--no-ablation]

For each method (none, vector, local, dual, topology, auto, and the -weights rows of the graph
methods): answer accuracy (normalised containment) and token F1 on a type-stratified subset
(``--limit``), evidence recall@k on the same queries, latency p50/p95 per stage (plan, retrieve,
prefill, decode), plus the index's bytes per file and the process's peak RSS against the profile's
memory estimate. Answers are cached per data set, SLM, method and prompt-shaping settings
(``benchmarks/results/cache``), so a rerun only generates what is new; the expected duration is
printed before the run. Writes ``suite_<dataset>_<profile>.json`` and ``.md``, and with the
``bench`` extra a PNG of accuracy against latency.

Work in progress (issue 7): ``auto`` plans with the exported head, which was trained on these
dev queries (``planner_eval`` gives the cross-validated figure); peak RSS means something only
when the run generated answers (cached answers never load the SLM); the accuracy-vs-index-size
plot and the per-profile memory calibration are still to come.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from edge_rag import EdgeRAG, Settings
from edge_rag.retrieve import GRAPH_METHODS

from .answer_accuracy import _load_cache, answer_all, cache_path, stratified
from .common import RESULTS, markdown_table, peak_rss_mb, percentiles, write_result
from .datasets import DATASETS, Dataset, open_index

METHODS = ("none", "vector", "local", "dual", "topology", "auto")
SECONDS_PER_ANSWER = 8.0  # Qwen 0.5B int8 on 2 cores, 1,024-token context (answer_accuracy runs)


def main(argv: list[str] | None = None) -> int:
    """Run the suite for one profile and data set; print and write the results."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    settings = Settings.load(args.profile)
    queries = _queries(args, dataset)
    runs = [(m, True) for m in args.methods.split(",")]
    if not args.no_ablation:
        runs += [(m, False) for m in args.methods.split(",") if m in GRAPH_METHODS]
    _announce(args, settings, queries, runs)
    with open_index(dataset, profile=args.profile) as rag:
        recall = dataset.recall(rag)
        estimate = rag.memory_estimate()
        index = {"files": rag.stats().files, "total_bytes": rag.stats().total_bytes}
    rows = {}
    for method, weights in runs:
        name = method if weights else f"{method} -weights"
        print(f"[{time.strftime('%H:%M:%S')}] {name}", flush=True)
        with EdgeRAG.open(dataset.index, args.profile, create=False, use_weights=weights) as rag:
            rows[name] = _run(rag, args.dataset, method, queries, recall, dataset.ks)
    result = {"profile": args.profile, "dataset": args.dataset, "note": dataset.note,
              "slm": settings.slm, "queries": len(queries), "methods": rows, "index": index,
              "memory": {"estimate_mb": round(estimate.total_mb, 1), "parts_mb": estimate.parts,
                         "budget_mb": settings.memory_budget_mb, "peak_rss_mb": round(peak_rss_mb(), 1)}}
    name = f"suite_{args.dataset}_{args.profile}"
    table = _table(result, dataset.ks)
    print(table)
    (RESULTS / f"{name}.md").write_text(table + "\n", encoding="utf-8")
    write_result(name, result)
    _plot(result, RESULTS / f"{name}.png")
    return 0


def _queries(args: argparse.Namespace, dataset: Dataset) -> list[dict]:
    if args.queries:
        raw = json.loads(Path(args.queries).read_text(encoding="utf-8"))
        items = raw.items() if isinstance(raw, dict) else enumerate(raw)
        queries = [{"id": str(q.get("id", key)), "question": q["question"], "answer": q["answer"],
                    "type": q.get("type", "Single"), "evidence": q.get("evidence") or []} for key, q in items]
    else:
        queries = dataset.queries()
    return stratified(queries, args.limit)


def _announce(args: argparse.Namespace, settings: Settings, queries: list[dict], runs: list) -> None:
    new = 0
    for method, weights in runs:
        if method == "auto":
            continue
        name = method + ("" if weights else "-noweights")
        cached = _load_cache(cache_path(args.dataset, settings.slm, name, settings))
        new += sum(q["id"] not in cached for q in queries)
    minutes = (new * SECONDS_PER_ANSWER + len(queries) * len(runs) * 0.5) / 60
    print(f"{len(queries)} queries x {len(runs)} runs; {new} answers to generate; "
          f"expected about {minutes:.0f} min on 2 cores", flush=True)


def _run(rag: EdgeRAG, dataset: str, method: str, queries: list[dict], recall: Callable,
         ks: tuple[int, int]) -> dict:
    stages: dict[str, list[float]] = {}
    recalls: dict[int, list[float]] = {k: [] for k in ks}
    chosen: dict[str, list[dict]] = {}
    for query in queries:
        found = rag.retrieve(query["question"], method=method, top_k=2 * max(ks))
        for k in ks:
            if query["evidence"]:
                recalls[k].append(recall(found.chunks, query, k))
        stages.setdefault("plan", []).append(found.timings_ms.get("plan", 0.0))
        stages.setdefault("retrieve", []).append(sum(v for s, v in found.timings_ms.items() if s != "plan"))
        chosen.setdefault(found.method, []).append(query)
    # auto's answer is the chosen method's answer: the pipeline after planning is the same.
    answers = [row for name, group in chosen.items()
               for row in answer_all(rag, dataset, group, name, rag.settings.slm)]
    for key in ("prefill_ms", "decode_ms"):
        stages[key[:-3]] = [row[key] for row in answers]
    out = {"accuracy": round(statistics.mean(r["correct"] for r in answers), 4),
           "token_f1": round(statistics.mean(r["f1"] for r in answers), 4),
           **{f"recall@{k}": round(statistics.mean(v), 4) for k, v in recalls.items() if v},
           "latency_ms": {s: percentiles(v) for s, v in stages.items()}}
    if method == "auto":
        out["chosen"] = {name: len(group) for name, group in chosen.items()}
    return out


def _table(result: dict, ks: tuple[int, int]) -> str:
    headers = ["method", "accuracy", "F1", *(f"R@{k}" for k in ks), "plan p50", "retrieve p50/p95",
               "prefill p50", "decode p50"]
    rows = []
    for name, r in result["methods"].items():
        lat = r["latency_ms"]
        rows.append([name, r["accuracy"], r["token_f1"], *(r.get(f"recall@{k}", "") for k in ks),
                     lat["plan"]["p50"], f"{lat['retrieve']['p50']} / {lat['retrieve']['p95']}",
                     lat["prefill"]["p50"], lat["decode"]["p50"]])
    memory = result["memory"]
    foot = (f"\n{result['queries']} queries, profile {result['profile']}, SLM {result['slm']}; index "
            f"{result['index']['total_bytes'] / 2**20:.1f} MiB; memory estimate {memory['estimate_mb']} MiB, "
            f"peak RSS {memory['peak_rss_mb']} MiB, budget {memory['budget_mb'] or 'none'}")
    return markdown_table(headers, rows) + foot


def _plot(result: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: pip install 'edge-rag[bench]'")
        return
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, r in result["methods"].items():
        lat = r["latency_ms"]
        total = sum(lat[s]["p50"] for s in ("plan", "retrieve", "prefill", "decode")) / 1000
        axes.scatter(total, r["accuracy"])
        axes.annotate(name, (total, r["accuracy"]), fontsize=8)
    axes.set_xlabel("median latency per query (s)")
    axes.set_ylabel("answer accuracy")
    axes.set_title(f"{result['dataset']} · {result['profile']} · {result['slm']}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.suite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="dev", help="device profile (default: %(default)s)")
    parser.add_argument("--dataset", default="lihua", choices=sorted(DATASETS))
    parser.add_argument("--limit", type=int, default=60, help="type-stratified query subset (default: 60)")
    parser.add_argument("--queries", help="a query file of the LiHua-World format instead of the data set's")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: all)")
    parser.add_argument("--no-ablation", action="store_true", help="skip the -weights rows")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
