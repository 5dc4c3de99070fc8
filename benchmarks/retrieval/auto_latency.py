"""Mean retrieval latency of ``auto`` against the fixed methods it chooses between, per question.

    python -m benchmarks auto_latency [--datasets lihua,2wiki] [--repeats 3] [--planner margin]

One process, one open index per data set, every cache warm (models, the walk's matrix, SQLite
pages: one untimed pass of every method first). Then, for each question, ``--repeats`` rounds of
vector, ppr and auto in a random order (seeded), so that drift in the machine's load falls on
all alike and no method always follows the same one (a method run right after ``ppr`` on the
same question finds its pages warm: in a fixed rotation that alone made ``auto`` 2 ms faster
than ``ppr`` on 2WikiMultihopQA, where it always runs ``ppr``). Before every call what recent
questions left behind is forgotten (``EdgeRAG.forget``: their embeddings, terms and the last
vector search), so each call pays for everything it needs and no method is served by another's
work. Per question the median of the rounds counts; the table gives the mean over questions, as
wall time and as the process's CPU time (other jobs on shared cores disturb CPU time far less),
and the paired difference auto − ppr with its standard error. ``--planner`` picks auto's planner
(default: the settings' default). Writes ``auto_latency.json``, or ``auto_latency_PLANNER.json``
for another planner.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.core.datasets import DATASETS
from benchmarks.core.options import options
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.config import PLANNERS

METHODS = ("vector", "ppr", "auto")


def main(argv: list[str] | None = None) -> int:
    """Time every method on every question of each data set, print and write the means."""
    args = _parser().parse_args(argv)
    result = {"repeats": args.repeats, "planner": args.planner, "datasets": {}}
    for name in args.datasets.split(","):
        questions = [q["question"] for q in DATASETS[name].queries() if q["evidence"]]
        result["datasets"][name] = measure(name, questions[: args.limit] if args.limit else questions,
                                           args.repeats, args.planner)
    _print(result)
    write_result("auto_latency" + ("" if args.planner == Settings().planner else f"_{args.planner}"), result,
                 Settings.load(None, planner=args.planner))
    return 0


def measure(name: str, questions: list[str], repeats: int, planner: str) -> dict:
    """Per-question medians of wall and CPU milliseconds per method, their means, auto's routes."""
    wall = {m: np.zeros((len(questions), repeats)) for m in METHODS}
    cpu = {m: np.zeros((len(questions), repeats)) for m in METHODS}
    shuffle = np.random.default_rng(0)
    with EdgeRAG.open(DATASETS[name].index, create=False, progress=False, planner=planner) as rag:
        routes = [rag.retrieve(q, "auto").plan.method for q in questions]  # warms every cache
        for method in METHODS[:2]:
            for question in questions:
                rag.retrieve(question, method)
        for i, question in enumerate(questions):
            for round_ in range(repeats):
                for j in shuffle.permutation(len(METHODS)):
                    method = METHODS[j]
                    wall[method][i, round_], cpu[method][i, round_] = _time(rag, method, question)
    return {"queries": len(questions), "auto_routes": {m: routes.count(m) for m in sorted(set(routes))},
            "wall_ms": _summary(wall), "cpu_ms": _summary(cpu)}


def _time(rag: EdgeRAG, method: str, question: str) -> tuple[float, float]:
    """One call's wall and CPU milliseconds, nothing of the question remembered beforehand."""
    rag.clear_caches()
    start, start_cpu = time.perf_counter(), time.process_time()
    rag.retrieve(question, method)
    return (time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000


def _summary(times: dict[str, np.ndarray]) -> dict:
    """Mean over questions of the per-question medians, and auto − ppr paired (mean, std. error)."""
    medians = {m: np.median(t, axis=1) for m, t in times.items()}
    diff = medians["auto"] - medians["ppr"]
    return {**{m: round(float(v.mean()), 2) for m, v in medians.items()},
            "auto_minus_ppr": round(float(diff.mean()), 2),
            "auto_minus_ppr_se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 2)}


def _print(result: dict) -> None:
    headers = ["data set", "queries", "auto routes", "clock", *METHODS, "auto − ppr (± s.e.)"]
    rows = [[name, r["queries"], ", ".join(f"{m} {n}" for m, n in sorted(r["auto_routes"].items())), clock]
            + [r[f"{clock}_ms"][m] for m in METHODS]
            + [f"{r[f'{clock}_ms']['auto_minus_ppr']} ± {r[f'{clock}_ms']['auto_minus_ppr_se']}"]
            for name, r in result["datasets"].items() for clock in ("wall", "cpu")]
    print(markdown_table(headers, rows))
    print(f"\nmean over questions of each question's median of {result['repeats']} rounds, random order (ms)")


def _parser() -> argparse.ArgumentParser:
    shared = options(limit=None, limit_help="only the first N questions")
    parser = argparse.ArgumentParser(parents=[shared], prog="python -m benchmarks auto_latency",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="lihua,2wiki", help="comma-separated data sets")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per question (median counts)")
    parser.add_argument("--planner", default=Settings().planner, choices=PLANNERS, help="auto's planner")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
