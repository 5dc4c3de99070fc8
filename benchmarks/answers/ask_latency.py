"""End-to-end answer latency: ``EdgeRAG.ask`` on dev questions, runtimes side by side.

    python -m benchmarks ask_latency [--dataset lihua] [--method vector] [--limit 60]
                                     [--variants now now,draft_tokens=0 369a9ba]

A variant is a runtime, ``now`` (this checkout's ``edge_rag/``) or a commit (its ``edge_rag/``
through ``slm_speed.runtime_at``), then optional ``,FIELD=VALUE`` settings overrides. Each variant
runs in its own process on the same benchmark index and model folders: one warm-up question
(model loading), then every type-stratified dev question through ``rag.ask`` as a user calls it.
Reported per variant: median and mean wall time of an answer, the mean of each timing the answer
records (prefill, decode, focus, ...), how many answers read as the first variant's and the
process's peak RSS (VmHWM: the models, the index and every answer). A
commit's runtime must read today's model folders (exporter version 4 on: commit 369a9ba and later).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchmarks.core.measure import peak_rss_mb
from benchmarks.core.options import options, setting
from benchmarks.core.results import markdown_table, write_result
from benchmarks.core.runtime import child_env, runtime_at
from edge_rag import Settings


def child(dataset_name: str, method: str, limit: int, overrides: dict) -> list[dict]:
    """Every question answered by the runtime first on ``sys.path``; one row per question."""
    from benchmarks.core.datasets import DATASETS, stratified
    from edge_rag import EdgeRAG, Settings

    dataset = DATASETS[dataset_name]
    queries = stratified(dataset.queries(), limit)
    rows = []
    with EdgeRAG.open(dataset.index_for(Settings.load(None, **overrides)), create=False,
                      **overrides) as rag:
        rag.ask(queries[-1]["question"], method=method)  # warm-up: the models load
        for query in queries:
            start = time.perf_counter()
            answer = rag.ask(query["question"], method=method)
            rows.append({"id": query["id"], "ask_ms": (time.perf_counter() - start) * 1000,
                         "text": answer.text, "timings": answer.timings})
    return rows


def run_variant(variant: str, args: argparse.Namespace) -> dict:
    """One variant in its own process (a commit's runtime first on its path)."""
    runtime, *settings = variant.split(",")
    command = [sys.executable, "-m", "benchmarks.answers.ask_latency", "--child", *settings,
               "--dataset", args.dataset, "--method", args.method, "--limit", str(args.limit)]
    cwd = None if runtime == "now" else runtime_at(runtime)
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=child_env(cwd),
                            cwd=cwd).stdout
    return json.loads(output.strip().splitlines()[-1])  # rows and the process's peak RSS


def summary(rows: list[dict], first: list[dict]) -> dict:
    """Median and mean answer time, mean of each recorded timing, answers equal to ``first``'s."""
    keys = sorted({k for r in rows for k in r["timings"]})
    means = {k: round(statistics.mean(r["timings"].get(k, 0.0) for r in rows), 1) for k in keys}
    same = sum(a["text"] == b["text"] for a, b in zip(rows, first))
    return {"questions": len(rows), "median_ms": round(statistics.median(r["ask_ms"] for r in rows), 1),
            "mean_ms": round(statistics.mean(r["ask_ms"] for r in rows), 1),
            "same_as_first": same, "timing_means": means}


def main(argv: list[str] | None = None) -> int:
    """Run every variant, print the comparison, write JSON."""
    args = _parser().parse_args(argv)
    if args.child is not None:
        overrides = dict(setting(item) for item in args.child)
        rows = child(args.dataset, args.method, args.limit, overrides)
        print(json.dumps({"rows": rows, "peak_rss_mb": round(peak_rss_mb(), 1)}))
        return 0
    runs = {}
    for variant in args.variants:
        print(f"running {variant} ...", flush=True)
        runs[variant] = run_variant(variant, args)
    first = runs[args.variants[0]]["rows"]
    summaries = {variant: {**summary(run["rows"], first), "peak_rss_mb": run["peak_rss_mb"]}
                 for variant, run in runs.items()}
    headers = ["variant", "median_ms", "mean_ms", "prefill", "decode", "focus", "same_as_first",
               "peak_rss_mb"]
    print(markdown_table(headers, [[v, s["median_ms"], s["mean_ms"], s["timing_means"].get("prefill", ""),
                                    s["timing_means"].get("decode", ""), s["timing_means"].get("focus", ""),
                                    f"{s['same_as_first']}/{s['questions']}", s["peak_rss_mb"]]
                                   for v, s in summaries.items()]))
    payload = {"dataset": args.dataset, "method": args.method, "limit": args.limit,
               "summary": summaries, "answers": {v: run["rows"] for v, run in runs.items()}}
    print(f"wrote {write_result(f'ask_latency_{args.dataset}_{args.method}', payload, Settings())}")
    return 0


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua", limit=60, limit_help="type-stratified dev questions")
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--method", default="vector", help="retrieval method")
    parser.add_argument("--variants", nargs="+", default=["now", "now,draft_tokens=0"],
                        help="now or a commit, then ,FIELD=VALUE settings overrides")
    parser.add_argument("--child", nargs="*", default=None, help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
