"""The scale benchmark's builds: one index grown stage by stage (1×, 3×, 10×, 30× LiHua-World).

Each stage runs in a process of its own (its peak RSS is that stage's) and inserts only what the
size adds to the index the stage before left (``scale-chain``); the index is then copied to
``scale-<N>x`` for the measurements. A stage's throughput is text absorbed per second while the
index already holds the smaller sizes: flat throughput means the build does not slow as the index
grows. A sampler thread reads the build's Python stacks ten times a second and counts, per thread,
the stage of the build and the innermost ``edge_rag`` function: where the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.core.measure import RssSampler, peak_rss_mb
from benchmarks.core.paths import INDEXES
from benchmarks.scale.scale_corpus import documents, text_bytes
from edge_rag import EdgeRAG

SIZES = (1, 3, 10, 30)
CHAIN = INDEXES / "scale-chain"
STAGES = ("_insert_reported", "_stage", "save_vectors", "_extract", "_add_mentions", "refresh",
          "embed_pending", "compact", "trim_heap")


def index_of(times: int) -> Path:
    """Where the index of a size is kept for measuring."""
    return INDEXES / f"scale-{times}x"


def build_stage(times: int, previous: int) -> dict[str, Any]:
    """Insert what ``times`` adds to ``previous`` into the chain index; copy it; the record."""
    corpus = documents(times)
    start = len(documents(previous)) if previous else 0
    new = corpus[start:]
    cpu, wall = _cpu(), time.perf_counter()
    rss, stacks = RssSampler(), StackSampler()
    with EdgeRAG.open(CHAIN, progress=False) as rag:
        report = rag.insert(*new)
        stats = rag.stats()
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    rss.stop()
    stacks.stop()
    _copy(CHAIN, index_of(times))
    added = text_bytes(new)
    return {"times": times, "documents": stats.documents, "text_bytes": text_bytes(corpus),
            "added_documents": len(report.added), "added_bytes": added, "seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1), "kb_per_s": round(added / 1000 / wall, 2),
            "kb_per_cpu_s": round(added / 1000 / cpu, 2), "peak_rss_mb": round(peak_rss_mb(), 1),
            "graph_seconds": round(report.graph.seconds, 1), "chunks": stats.chunks,
            "entities": stats.entities, "relations": stats.relations, "index_bytes": stats.total_bytes,
            "files": stats.files, "load": [round(x, 2) for x in os.getloadavg()],
            "rss_mb_every_10s": rss.series(), "where": stacks.summary()}


class StackSampler:
    """Counts, ten times a second, what each thread of the build is doing (stage > function)."""

    def __init__(self, every: float = 0.1) -> None:
        self.counts: Counter[str] = Counter()
        self._every, self._done = every, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling."""
        self._done.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        """Share of samples per 'thread: stage > function', largest first (top 25)."""
        total = sum(self.counts.values()) or 1
        return {k: round(v / total, 4) for k, v in self.counts.most_common(25)}

    def _run(self) -> None:
        main, me = threading.main_thread().ident, threading.get_ident()
        while not self._done.wait(self._every):
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    label = _label(frame)
                    if label:
                        self.counts[("main: " if ident == main else "worker: ") + label] += 1


def _label(frame: Any) -> str:
    names: list[tuple[str, str]] = []
    while frame is not None:
        code = frame.f_code
        if "edge_rag" in code.co_filename:
            names.append((Path(code.co_filename).stem, code.co_name))
        frame = frame.f_back
    if not names:
        return ""
    stage = next((f for _, f in reversed(names) if f in STAGES), "other")
    leaf = names[0]
    return f"{stage} > {leaf[0]}.{leaf[1]}"


def _copy(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.lock", "*-wal", "*-shm"))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    """One stage: its record is written beside the index it leaves (``scale_build.json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("times", type=int, help="the size this stage reaches (× LiHua-World)")
    parser.add_argument("previous", type=int, help="the size the chain index holds now (0: start afresh)")
    args = parser.parse_args(argv)
    if args.previous == 0:
        shutil.rmtree(CHAIN, ignore_errors=True)
    record = build_stage(args.times, args.previous)
    path = index_of(args.times) / "scale_build.json"
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in record.items() if k != "rss_mb_every_10s"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
