"""Memory: the budget's estimate against the peak RSS measured, per device profile and method.

    python -m benchmarks memory [--dataset lihua] [--profiles dev,rpi4,...] [--methods vector,dual,topology]
                                [--questions 2]

Each (profile, method) runs in a fresh process: open the data set's index for the profile, answer
``--questions`` questions with the SLM (nothing cached), report VmHWM. The profile's budget is
lifted in the child so that a profile that would refuse (the Pi Zero) is measured too; its
``fits`` column says what the budget check decides. Writes ``memory_<dataset>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from benchmarks.core.datasets import DATASETS, open_index
from benchmarks.core.measure import peak_rss_mb
from benchmarks.core.options import options
from benchmarks.core.paths import RESULTS
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.budget import MemoryEstimate, estimate_memory

PROFILES = ("dev", "rpi4", "rpi5", "jetson-orin-nano", "rpi-zero-2w")


def main(argv: list[str] | None = None) -> int:
    """Measure every profile and method; print and write the table."""
    args = _parser().parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    rows = []
    for profile in args.profiles.split(","):
        estimate = _estimate(args, profile)
        for method in args.methods.split(","):
            print(f"[{time.strftime('%H:%M:%S')}] {profile} / {method}", flush=True)
            rows.append(_measure(args, profile, method, estimate))
    headers = ["profile", "method", "SLM", "window", "budget MiB", "estimate MiB", "peak RSS MiB",
               "estimate / measured", "fits"]
    table = markdown_table(headers, [[r[h] for h in headers] for r in rows])
    print(table)
    (RESULTS / f"memory_{args.dataset}.md").write_text(table + "\n", encoding="utf-8")
    print(f"wrote {write_result(f'memory_{args.dataset}', {'dataset': args.dataset, 'rows': rows}, None)}")
    return 0


def _estimate(args: argparse.Namespace, profile: str) -> MemoryEstimate:
    """The budget's estimate for the profile's index of the data set (built here if missing)."""
    with open_index(DATASETS[args.dataset], profile, progress=False) as rag:
        return estimate_memory(rag.settings, rag.directory)


def _measure(args: argparse.Namespace, profile: str, method: str, estimate: MemoryEstimate) -> dict:
    settings = Settings.load(profile)
    command = [sys.executable, "-m", "benchmarks.slm.memory", "--child", "--dataset", args.dataset,
               "--profiles", profile, "--methods", method, "--questions", str(args.questions)]
    child = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return {"profile": profile, "method": method, "SLM": settings.slm, "window": settings.slm_context_tokens,
            "budget MiB": settings.memory_budget_mb or "none", "estimate MiB": round(estimate.total_mb),
            "peak RSS MiB": round(child["peak_rss_mb"]),
            "estimate / measured": round(estimate.total_mb / child["peak_rss_mb"], 2),
            "fits": "yes" if estimate.fits else "refused", "parts_mb": estimate.parts, **child}


def _child(args: argparse.Namespace) -> dict:
    dataset = DATASETS[args.dataset]
    questions = [q["question"] for q in dataset.queries()[: args.questions]]
    # The parent built the index; the child is a device session: open, ask, nothing else.
    index = dataset.index_for(Settings.load(args.profiles))
    with EdgeRAG.open(index, args.profiles, create=False, memory_budget_mb=0) as rag:
        sources = [len(rag.ask(q, method=args.methods).sources) for q in questions]
    return {"peak_rss_mb": round(peak_rss_mb(), 1), "sources_per_answer": sources}


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua")
    parser = argparse.ArgumentParser(parents=[shared], prog="python -m benchmarks memory",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated (default: all)")
    parser.add_argument("--methods", default="vector,dual,topology", help="comma-separated")
    parser.add_argument("--questions", type=int, default=2, help="fresh answers per run (default: 2)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
