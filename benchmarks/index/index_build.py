"""Build one data set's benchmark index in a process that does nothing else: time, CPU, peak RSS.

    python -m benchmarks index_build --dataset 2wiki            # builds benchmarks/.indexes/2wiki
    python -m benchmarks index_build --dataset lihua --rebuild  # delete and build again
    python -m benchmarks index_build --dataset 2wiki --limit 1500 --rebuild  # a slice, to profile

The process indexes every document of the data set (the fast extractor by default) and then
exits, so its peak RSS is the build's alone (the retrieval benchmark builds and evaluates in
one process). Wall time, CPU time (user + system; above the wall time when more than one core
worked) and the machine's load average before and after (the cores may be shared) are recorded
with the index's bytes in ``index_build_<dataset>.json``. ``--limit N`` builds the first N
documents into their own folder (``<dataset>-limitN``) and writes ``index_build_<dataset>_limitN.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import time
from pathlib import Path

from benchmarks.core.datasets import DATASETS, Dataset, open_index
from benchmarks.core.measure import RssSampler, peak_rss_mb
from benchmarks.core.options import options
from benchmarks.core.paths import INDEXES
from benchmarks.core.results import write_result
from edge_rag import Settings


def main(argv: list[str] | None = None) -> int:
    """Build the index and write the record."""
    args = _parser().parse_args(argv)
    dataset, name = DATASETS[args.dataset], f"index_build_{args.dataset}"
    if args.limit:
        dataset, name = _slice(dataset, args.limit), f"{name}_limit{args.limit}"
    if args.rebuild:
        shutil.rmtree(dataset.index, ignore_errors=True)
    load_before = os.getloadavg()
    start, cpu = time.perf_counter(), _cpu_seconds()
    sampler = RssSampler()
    with open_index(dataset, progress=not args.quiet) as rag:
        stats = rag.stats()
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    sampler.stop()
    result = {"dataset": args.dataset, "limit": args.limit, "documents": stats.documents,
              "chunks": stats.chunks,
              "entities": stats.entities, "relations": stats.relations,
              "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
              "cores_used": round(cpu / seconds, 2), "peak_rss_mb": round(peak_rss_mb(), 1),
              "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()],
              "rss_mb_every_10s": sampler.series(),
              "index_bytes": stats.total_bytes, "files": stats.files, "tables": stats.tables}
    print(f"{args.dataset}: {stats.documents} documents, {stats.chunks} chunks in {seconds:,.0f} s "
          f"({cpu:,.0f} s CPU, {result['cores_used']} cores), peak RSS {result['peak_rss_mb']} MiB, "
          f"{stats.total_bytes / 2**20:.1f} MiB; load {result['load_before']} -> {result['load_after']}")
    print(f"wrote {write_result(name, result, rag.settings)}")
    return 0


def _slice(dataset: Dataset, limit: int) -> Dataset:
    """The data set's first ``limit`` documents, indexed in a folder of their own."""
    documents = dataset.documents

    class Sliced(Dataset):
        @property
        def index(self) -> Path:
            return INDEXES / f"{dataset.name}-limit{limit}"

        def index_for(self, settings: Settings) -> Path:
            return self.index

    return Sliced(dataset.name, lambda: documents()[:limit], dataset.queries, dataset.recall,
                  dataset.ks, dataset.multi_hop, dataset.note)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="2wiki", limit=0, limit_help="index only the first N documents")
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n")[0])
    parser.add_argument("--rebuild", action="store_true", help="delete the index first")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
