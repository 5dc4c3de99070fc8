"""Marginal build cost: the same new text inserted into the scale index of every size.

``scale_build`` times each stage on the text that stage adds: LiHua-World's chats at
1×, encyclopaedic passages from 3×, generated chats from 10×. Its throughput therefore mixes two
things: how large the index already is, and what kind of text arrives (a KB of 2Wiki makes a third
more chunks than a KB of chat). Here the same text, generated conversations of a world that no
size holds, goes into a copy of each size's index, each insert in a process of its own with the
whole ``insert`` timed (chunks, vectors, graph, walk files): first one conversation (a synced
file), then ``BATCH`` more. Their throughput at 30× over 1× is the slow-down due to the index's
size alone. Each copy first takes ``BATCH`` conversations of another world, untimed: an index as
this code leaves it after writes (what a write keeps for the next one, such as candidate sets and
busy names' running summaries, is there, as it is in an index this code built).
``--compare PATH`` does the same with the runtime checked out at PATH (an earlier commit's
worktree: its ``edge_rag``, this checkout's probe): old and new side by side in one run.
``--repeat N`` times the two steps N times into fresh copies of each primed index, each round
going through every size and code in turn, and reports the median CPU time of each step (this
machine's speed drifts by a third within minutes: one run each compared conditions more than codes).

    python -m benchmarks scale_marginal                          # sizes 1,3,10,30
    python -m benchmarks scale_marginal --sizes 1,30 --compare ../wt-old --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.core.measure import peak_rss_mb, stored_files
from benchmarks.core.paths import INDEXES, ROOT
from benchmarks.core.results import markdown_table, write_result
from benchmarks.core.runtime import child_env, commit_of, runtime_of
from benchmarks.scale.scale_build import StackSampler, index_of
from benchmarks.scale.scale_corpus import generated_world, text_bytes
from edge_rag import Settings

WORLD = 10_000  # the 30× corpus holds worlds 0-39; the primer is the next world's
BATCH = 110  # conversations: about 160 KB, a quarter of a generated year
STEPS = {"primer": slice(0, BATCH), "one": slice(1, 2), "batch": slice(2, 2 + BATCH)}  # of the chats
TIMED = ("one", "batch")
WORK = INDEXES / "scale-marginal"


def main(argv: list[str] | None = None) -> int:
    """Insert the steps into a copy of each size's index (with each code), print and write."""
    args = _parser().parse_args(argv)
    if args.probe:
        print(json.dumps(probe(Path(args.probe), args.step)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if (index_of(int(s)) / "scale_build.json").is_file()]
    if not sizes:
        print("no scale index built yet: python -m benchmarks scale --build")
        return 1
    codes = {"now": ROOT, **({"before": Path(args.compare).resolve()} if args.compare else {})}
    primers = {(n, name): prime(n, code, name) for n in sizes for name, code in codes.items()}
    primed = {key: primed_copy(*key) for key in primers}
    runs: dict[tuple[int, str], list[dict[str, Any]]] = {key: [] for key in primed}
    try:
        for _ in range(args.repeat):
            for (n, name), index in primed.items():
                runs[(n, name)].append(timed_steps(index, codes[name]))
    finally:
        for index in primed.values():
            shutil.rmtree(index, ignore_errors=True)
    rows: list[dict[str, Any]] = [{"times": n, **{name: summary(primers[(n, name)], runs[(n, name)])
                                                  for name in codes}} for n in sizes]
    for row in rows:
        for name in codes:
            for step in TIMED:
                smallest = rows[0][name][step]["kb_per_cpu_s"]
                row[name][step]["vs_smallest"] = round(row[name][step]["kb_per_cpu_s"] / smallest, 3)
    result = {"command": "python -m benchmarks scale_marginal " + " ".join(argv or sys.argv[1:]),
              "batch": {"world": WORLD, "conversations": BATCH, "bytes": text_bytes(step_docs("batch")),
                        "one_bytes": text_bytes(step_docs("one"))},
              "sizes": rows, **({"compared_with": commit_of(codes["before"])} if args.compare else {})}
    print(markdown_table(*table(rows, list(codes))))
    print(f"wrote {write_result(args.name, result, Settings())}")
    return 0


def step_docs(step: str) -> list[Any]:
    """The conversations a step inserts (``STEPS``): world ``WORLD``'s, the primer's the next."""
    return generated_world(WORLD + (step == "primer"))[STEPS[step]]


def primed_copy(times: int, name: str) -> Path:
    """Where a size's index primed by the code called ``name`` is kept during a run."""
    return WORK.with_name(f"{WORK.name}-{times}x-{name}")


def prime(times: int, code: Path, name: str) -> dict[str, Any]:
    """Copy a size's index to ``primed_copy`` and insert the primer step there with ``code``;
    the step's record."""
    index = primed_copy(times, name)
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(index_of(times), index, ignore=shutil.ignore_patterns("*.lock", "*-wal", "*-shm"))
    return _probe_process(code, "primer", index)


def timed_steps(primed: Path, code: Path) -> dict[str, Any]:
    """The timed steps, in order, into a fresh copy of a primed index by ``code``."""
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(primed, WORK, ignore=shutil.ignore_patterns("*.lock", "*-wal", "*-shm"))
    try:
        return {step: _probe_process(code, step, WORK) for step in TIMED}
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


def summary(primer: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each timed step's run of median CPU time (with every run's CPU seconds), and the primer's."""
    out: dict[str, Any] = {"primer": primer}
    for step in TIMED:
        ordered = sorted((r[step] for r in runs), key=lambda r: r["cpu_seconds"])
        middle = ordered[(len(ordered) - 1) // 2]
        out[step] = {**middle, "cpu_seconds_runs": [r[step]["cpu_seconds"] for r in runs],
                     "cpu_seconds_median": statistics.median(r[step]["cpu_seconds"] for r in runs)}
    return out


def _probe_process(code: Path, step: str, index: Path) -> dict[str, Any]:
    # The runtime of ``code``, these benchmarks' own probe: only ``edge_rag`` differs between codes.
    runtime = runtime_of(code)
    command = [sys.executable, "-m", "benchmarks.scale.scale_marginal", "--probe", str(index), "--step", step]
    out = subprocess.run(command, capture_output=True, text=True, cwd=runtime, env=child_env(runtime),
                         check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def probe(index: Path, step: str) -> dict[str, Any]:
    """Insert a step's conversations into ``index`` in this process: wall, CPU, KB per CPU
    second, peak RSS, what the index grew by per KB of text, and where the time went
    (``scale_build.StackSampler``)."""
    from edge_rag import EdgeRAG

    docs = step_docs(step)
    size = sum(stored_files(index, recursive=True).values())
    stacks = StackSampler()
    cpu, wall = _cpu(), time.perf_counter()
    with EdgeRAG.open(index, create=False, progress=False) as rag:
        report = rag.insert(*docs)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    stacks.stop()
    kb = text_bytes(docs) / 1000
    grown = sum(stored_files(index, recursive=True).values()) - size
    return {"added": len(report.added), "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
            "kb_per_cpu_s": round(kb / cpu, 2), "peak_rss_mb": round(peak_rss_mb(), 1),
            "index_bytes_added": grown, "index_bytes_per_kb": round(grown / kb, 1),
            "load": [round(x, 2) for x in os.getloadavg()], "where": stacks.summary()}


def table(rows: list[dict[str, Any]], codes: list[str]) -> tuple[list[str], list[list[Any]]]:
    """One row per size and code: CPU seconds of one conversation, then the batch's KB per CPU
    second and its ratio to the smallest size, its peak RSS and index bytes added per KB."""
    headers = ["size", "code", "one: CPU s", "one: vs smallest", "batch: KB/CPU-s", "batch: vs smallest",
               "batch: CPU s", "batch: peak MiB", "batch: index bytes/KB"]
    fields = [("one", "cpu_seconds"), ("one", "vs_smallest"), ("batch", "kb_per_cpu_s"),
              ("batch", "vs_smallest"), ("batch", "cpu_seconds"), ("batch", "peak_rss_mb"),
              ("batch", "index_bytes_per_kb")]
    return headers, [[f"{r['times']}×", c, *(r[c][step][f] for step, f in fields)]
                     for r in rows for c in codes]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale_marginal",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,3,10,30", help="sizes whose scale index exists (e.g. 1,30)")
    parser.add_argument("--compare", default="", help="also insert with the code checked out at this path")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of the timed steps (the run of median CPU time is reported)")
    parser.add_argument("--name", default="marginal_build", help="results file name")
    parser.add_argument("--probe", default="", help=argparse.SUPPRESS)
    parser.add_argument("--step", default="batch", choices=list(STEPS), help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
