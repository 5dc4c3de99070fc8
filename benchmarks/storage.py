"""Index bytes across issue 16's schemas, and recall@5 against the bytes each method needs.

    python -m benchmarks.storage --dataset lihua --old DIR --old-results retrieval_lihua_schema2.json
    python -m benchmarks.storage --dataset lihua --keep --label "schema 4"   # add a side

Compares indexes of one data set: ``--old`` (a schema-2 index: f16 vectors in SQLite and in the
USearch files, every relation with a vector) and ``--new`` (default: the data set's benchmark
index, recorded under ``--label``): bytes per file, per SQLite table (``dbstat``) and per method
(``method_footprint``, the paper's Figure 7 x-axis), and each method's recall@5 from the retrieval
results files. ``--keep`` carries over the sides already recorded in ``storage_<dataset>.json``
(indexes that no longer exist). Writes ``storage_<dataset>.json`` and, with the ``bench`` extra, a
PNG of recall@5 against index bytes (the Figure-7 layout with retrieval recall on the y-axis:
answer accuracy needs SLM runs).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from contextlib import closing
from pathlib import Path

from .common import (
    RESULTS,
    markdown_table,
    method_footprint,
    options,
    pyplot,
    save_figure,
    stored_files,
    write_result,
)
from .datasets import DATASETS

METHODS = ("vector", "local", "dual", "topology", "ppr")
MIB = 2**20


def table_bytes(index: Path) -> dict[str, int]:
    """Bytes of each table of an index's SQLite file, with its indexes."""
    with closing(sqlite3.connect(f"file:{index / 'index.sqlite'}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT coalesce(s.tbl_name, d.name), sum(d.pgsize) FROM dbstat d "
                          "LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY 1 ORDER BY 2 DESC")
        return {str(name): int(size) for name, size in rows}


def describe(index: Path, results: Path) -> dict:
    """Bytes of an index and the recall@5 its retrieval results record."""
    files = stored_files(index)
    recall = json.loads(results.read_text(encoding="utf-8"))["methods"]
    return {"index": str(index), "results": results.name, "total_bytes": sum(files.values()),
            "files": files, "tables": table_bytes(index), "method_bytes": method_footprint(index),
            "recall@5": {m: recall[m]["All"]["recall@5"] for m in METHODS if m in recall}}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    new_index = Path(args.new) if args.new else DATASETS[args.dataset].index
    new_results = args.new_results or f"retrieval_{args.dataset}.json"
    recorded = RESULTS / f"storage_{args.dataset}.json"
    sides = json.loads(recorded.read_text(encoding="utf-8"))["indexes"] if args.keep else {}
    if args.old:
        sides["schema 2"] = describe(Path(args.old), RESULTS / args.old_results)
    sides[args.label] = describe(new_index, RESULTS / new_results)
    cell = lambda s, m: f"{s['recall@5'].get(m, '-')} @ {s['method_bytes'][m] / MIB:.1f} MiB"
    rows = [[m, *(cell(s, m) for s in sides.values())] for m in METHODS]
    rows.append(["total", *(f"{s['total_bytes'] / MIB:.1f} MiB" for s in sides.values())])
    print(markdown_table(["method", *sides], rows))
    payload: dict = {"dataset": args.dataset, "indexes": sides}
    if args.note:
        payload["note"] = args.note
    write_result(f"storage_{args.dataset}", payload)
    _plot(args.dataset, sides, RESULTS / f"storage_{args.dataset}.png")
    return 0


def _plot(dataset: str, sides: dict[str, dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    figure, axes = plt.subplots(figsize=(6, 4))
    for (label, side), marker in zip(sides.items(), ("o", "s", "^", "D")):
        methods = [m for m in METHODS if m in side["recall@5"]]
        x = [side["method_bytes"][m] / MIB for m in methods]
        y = [side["recall@5"][m] for m in methods]
        axes.scatter(x, y, marker=marker, label=label)
        for method, xi, yi in zip(methods, x, y):
            axes.annotate(method, (xi, yi), textcoords="offset points", xytext=(4, 3), fontsize=8)
    axes.set_xscale("log")
    ticks = [t for t in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if any(
        t / 2 <= side["method_bytes"][m] / MIB <= t * 2 for side in sides.values() for m in METHODS)]
    axes.set_xticks(ticks, [str(t) for t in ticks])
    axes.minorticks_off()
    axes.set_xlabel("index bytes the method needs (MiB, log)")
    axes.set_ylabel("recall@5 (dev)")
    axes.set_title(f"{dataset}: recall@5 against index size")
    axes.legend()
    save_figure(plt, figure, path)


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua")
    parser = argparse.ArgumentParser(parents=[shared], prog="python -m benchmarks.storage",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default=None, help="a schema-2 index directory")
    parser.add_argument("--old-results", default=None, help="its retrieval results file (in results/)")
    parser.add_argument("--keep", action="store_true", help="keep the sides recorded in the JSON")
    parser.add_argument("--label", default="schema 4", help="the name of the --new side")
    parser.add_argument("--new", default=None, help="the index to describe (default: the data set's)")
    parser.add_argument("--note", default="", help="a note stored with the result")
    parser.add_argument("--new-results", default=None,
                        help="its results file (default retrieval_<dataset>.json)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
