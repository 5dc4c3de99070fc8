"""The SLMs the board profiles take, answering LiHua-World dev questions: size, memory, prefill.

    python -m benchmarks board_slm [--slms qwen2.5-coder-0.5b-q4 qwen2.5-coder-1.5b-q4]
                                   [--limit 30] [--method vector] [--profile rpi5]

Each SLM runs in its own process with the profile's settings (its budget lifted so that the
process is measured, not refused) on the same index: one warm-up question (the models load),
then ``--limit`` type-stratified dev questions through ``EdgeRAG.ask``. Reported per SLM: the
folder's size, the answer prompt's tokens and prefill time (median and 90th percentile), decode
and whole-answer time, the process's peak RSS (VmHWM), and the budget's estimate
(``edge_rag/budget.py``) for those settings against that peak. Writes ``board_slm_<profile>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks.core.measure import peak_rss_mb
from benchmarks.core.results import markdown_table, write_result
from edge_rag import Settings

SLMS = ("qwen2.5-coder-0.5b-q4", "qwen2.5-coder-1.5b-q4")


def child(slm: str, profile: str, method: str, limit: int) -> dict:
    """Answer the questions with ``slm`` in this process; per-answer timings and the peak RSS."""
    from benchmarks.core.datasets import DATASETS, stratified
    from edge_rag import EdgeRAG
    from edge_rag.budget import estimate_memory

    dataset = DATASETS["lihua"]
    settings = Settings.load(profile, slm=slm, memory_budget_mb=0)
    queries = stratified(dataset.queries(), limit)
    rows = []
    with EdgeRAG.open(dataset.index_for(settings), profile, create=False, slm=slm,
                      memory_budget_mb=0) as rag:
        estimate = estimate_memory(rag.settings, rag.directory)
        rag.ask(queries[-1]["question"], method=method)  # warm-up: the models load
        for query in queries:
            start = time.perf_counter()
            answer = rag.ask(query["question"], method=method)
            rows.append({"id": query["id"], "ask_ms": (time.perf_counter() - start) * 1000,
                         **{k: answer.timings.get(k, 0.0) for k in ("prompt_tokens", "prefill", "decode")}})
    return {"rows": rows, "peak_rss_mb": round(peak_rss_mb(), 1), "estimate_mb": round(estimate.total_mb, 1),
            "estimate_parts_mb": estimate.parts, "window": settings.slm_context_tokens}


def summarise(slm: str, measured: dict) -> dict:
    """One table row from a child's measurements."""
    from edge_rag.config import models_home

    rows = measured["rows"]
    folder = models_home() / "models" / slm
    prefill = sorted(r["prefill"] / 1000 for r in rows)
    return {"slm": slm, "folder_mb": round(sum(p.stat().st_size for p in folder.iterdir()) / 1e6, 1),
            "questions": len(rows), "prompt_tokens": statistics.median(r["prompt_tokens"] for r in rows),
            "prefill_s_median": round(statistics.median(prefill), 2),
            "prefill_s_p90": round(prefill[int(0.9 * (len(prefill) - 1))], 2),
            "decode_s_median": round(statistics.median(r["decode"] for r in rows) / 1000, 2),
            "ask_s_median": round(statistics.median(r["ask_ms"] for r in rows) / 1000, 2),
            "peak_rss_mb": measured["peak_rss_mb"], "estimate_mb": measured["estimate_mb"],
            "estimate_vs_peak": round(measured["estimate_mb"] / measured["peak_rss_mb"], 2),
            "window": measured["window"]}


def main(argv: list[str] | None = None) -> int:
    """Run every SLM in its own process, print the table, write JSON."""
    args = _parser().parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.profile, args.method, args.limit)))
        return 0
    measured, table_rows = {}, []
    for slm in args.slms:
        print(f"[{time.strftime('%H:%M:%S')}] {slm} ...", file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "benchmarks.slm.board_slm", "--child", slm,
                   "--profile", args.profile, "--method", args.method, "--limit", str(args.limit)]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        measured[slm] = json.loads(output.strip().splitlines()[-1])
        table_rows.append(summarise(slm, measured[slm]))
    headers = list(table_rows[0])
    print(markdown_table(headers, [[r[h] for h in headers] for r in table_rows]))
    payload = {"profile": args.profile, "method": args.method, "limit": args.limit,
               "load_average": [round(x, 1) for x in os.getloadavg()], "rows": table_rows,
               "answers": {slm: m["rows"] for slm, m in measured.items()}}
    path = write_result(f"board_slm_{args.profile}", payload, Settings.load(args.profile, memory_budget_mb=0))
    print(f"wrote {path}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--slms", nargs="+", default=list(SLMS), help="SLM model folders")
    parser.add_argument("--profile", default="rpi5", help="device profile whose settings are used")
    parser.add_argument("--method", default="vector", help="retrieval method")
    parser.add_argument("--limit", type=int, default=30, help="type-stratified dev questions")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
