"""Marginal build cost: the same new text inserted into the scale index of every size.

``benchmarks.scale_build`` times each stage on the text that stage adds: LiHua-World's chats at
1×, encyclopaedic passages from 3×, generated chats from 10×. Its throughput therefore mixes two
things: how large the index already is, and what kind of text arrives (a KB of 2Wiki makes a third
more chunks than a KB of chat). Here one batch, ``BATCH`` conversations of a generated world that
no size holds, is inserted into a copy of each size's index, in a process of its own, the whole
``insert`` (chunks, vectors, graph, walk files) timed: its throughput at 30× over 1× is the
slow-down due to the index's size alone. ``--compare PATH`` also inserts it with the code
checked out at PATH (an earlier commit's worktree): old and new side by side in one run.

    python -m benchmarks.scale_marginal                          # sizes 1,3,10,30
    python -m benchmarks.scale_marginal --sizes 1,30 --compare ../wt-old
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, os.environ.get("EDGE_RAG_CODE", str(ROOT)))  # the probe: run as a file

from benchmarks.common import markdown_table, peak_rss_mb, write_result  # noqa: E402
from benchmarks.datasets import INDEXES  # noqa: E402
from benchmarks.scale_build import StackSampler, index_of  # noqa: E402
from benchmarks.scale_corpus import generated_world, text_bytes  # noqa: E402

WORLD = 10_000  # the 30× corpus holds worlds 0-39
BATCH = 110  # conversations: about 160 KB, a quarter of a generated year
WORK = INDEXES / "scale-marginal"


def main(argv: list[str] | None = None) -> int:
    """Insert the batch into a copy of each size's index (with each code), print and write."""
    args = _parser().parse_args(argv)
    if args.probe:  # (only what the compared checkout also has is imported on this path)
        print(json.dumps(probe(Path(args.probe))))
        return 0
    from benchmarks.common import commit_of

    sizes = [int(s) for s in args.sizes.split(",") if (index_of(int(s)) / "scale_build.json").is_file()]
    codes = {"now": ROOT, **({"before": Path(args.compare).resolve()} if args.compare else {})}
    rows = [{"times": n, **{name: insert_into(n, code) for name, code in codes.items()}} for n in sizes]
    first = rows[0]
    for row in rows:
        for name in codes:
            row[name]["vs_smallest"] = round(row[name]["kb_per_cpu_s"] / first[name]["kb_per_cpu_s"], 3)
    result = {"command": "python -m benchmarks.scale_marginal " + " ".join(argv or sys.argv[1:]),
              "batch": {"world": WORLD, "conversations": BATCH, "bytes": text_bytes(batch())},
              "sizes": rows, **({"compared_with": commit_of(codes["before"])} if args.compare else {})}
    print(markdown_table(*table(rows, list(codes))))
    print(f"wrote {write_result(args.name, result)}")
    return 0


def batch() -> list[Any]:
    """The new text: ``BATCH`` conversations of world ``WORLD``."""
    return generated_world(WORLD)[:BATCH]


def insert_into(times: int, code: Path) -> dict[str, Any]:
    """The batch inserted into a fresh copy of a size's index by ``code``, in its own process."""
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(index_of(times), WORK, ignore=shutil.ignore_patterns("*.lock", "*-wal", "*-shm"))
    try:
        env = {**os.environ, "PYTHONPATH": str(code), "EDGE_RAG_CODE": str(code)}
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe", str(WORK)],
                             capture_output=True, text=True, cwd=code, env=env, check=True)
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


def probe(index: Path) -> dict[str, Any]:
    """Insert the batch into ``index`` in this process: wall, CPU, KB per CPU second, peak RSS,
    and where the time went (``scale_build.StackSampler``)."""
    from edge_rag import EdgeRAG

    docs = batch()
    stacks = StackSampler()
    cpu, wall = _cpu(), time.perf_counter()
    with EdgeRAG.open(index, create=False, progress=False) as rag:
        report = rag.insert(*docs)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    stacks.stop()
    kb = text_bytes(docs) / 1000
    return {"added": len(report.added), "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
            "kb_per_cpu_s": round(kb / cpu, 2), "peak_rss_mb": round(peak_rss_mb(), 1),
            "load": [round(x, 2) for x in os.getloadavg()], "where": stacks.summary()}


def table(rows: list[dict[str, Any]], codes: list[str]) -> tuple[list[str], list[list[Any]]]:
    """One row per size: KB per CPU second (and its ratio to the smallest size) for each code."""
    fields = {"kb_per_cpu_s": "KB/CPU-s", "vs_smallest": "vs smallest", "cpu_seconds": "CPU s",
              "peak_rss_mb": "peak MiB"}
    headers = ["size"] + [f"{c}: {label}" for c in codes for label in fields.values()]
    return headers, [[f"{r['times']}×"] + [r[c][f] for c in codes for f in fields] for r in rows]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_marginal",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,3,10,30", help="sizes whose scale index exists (e.g. 1,30)")
    parser.add_argument("--compare", default="", help="also insert with the code checked out at this path")
    parser.add_argument("--name", default="marginal_build", help="results file name")
    parser.add_argument("--probe", default="", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
