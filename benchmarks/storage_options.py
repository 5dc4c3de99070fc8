"""What each idea for a smaller index would save, measured on a copy of a built index.

    python -m benchmarks.storage_options --dataset lihua
    python -m benchmarks.storage_options --dataset 2wiki

Each option is applied alone to a fresh copy of the benchmark index's ``index.sqlite`` (SQL that
imitates the schema change: a column emptied, an index dropped, a vector cut to the bytes a
narrower code would take), the copy is ``VACUUM``-ed, and its size is compared with the copy
left as it is. Only bytes are measured here: an option that changes what retrieval sees (fewer
bits per vector) needs the retrieval benchmark before it can be adopted. Writes
``storage_options_<dataset>.json``.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
from pathlib import Path

from edge_rag.store.sqlite import DB_FILE

from .common import options, write_result
from .datasets import DATASETS

MIB = 2**20
OPTIONS: dict[str, tuple[str, list[str]]] = {
    "relation_description_derived": (
        "a relation's description is joined from its mentions when read (as node descriptions are)",
        ["UPDATE relations SET description = ''"]),
    "relation_text_sha_dropped": (
        "no text hash per relation (vectors reused by another key, or re-embedded)",
        ["UPDATE relations SET text_sha = NULL"]),
    "relation_mention_indexes_dropped": (
        "no text indexes on relation_mentions(source_key) and (target_key): integer key ids "
        "instead would keep lookups indexed at a fraction of the bytes",
        ["DROP INDEX relation_mentions_source", "DROP INDEX relation_mentions_target"]),
    "co_occur_keywords_derived": (
        "the fast extractor's 'co-occur' keyword stored as '' (implied by the relation kind)",
        ["UPDATE relation_mentions SET keywords = '' WHERE keywords = 'co-occur'",
         "UPDATE relations SET keywords = '' WHERE keywords = 'co-occur'"]),
    "relation_vectors_4bit": (
        "relation vectors at 4 bits (192 of 384 bytes); recall unmeasured",
        ["UPDATE relations SET vector = substr(vector, 1, 192) WHERE vector IS NOT NULL"]),
    "name_vectors_4bit": (
        "entity name vectors at 4 bits (192 of 384 bytes); recall and aggregation unmeasured",
        ["UPDATE entity_keys SET vector = substr(vector, 1, 192)"]),
    "chunk_vectors_4bit": (
        "chunk vectors at 4 bits (192 of 384 bytes); recall unmeasured",
        ["UPDATE chunks SET vector = substr(vector, 1, 192)"]),
}


def main(argv: list[str] | None = None) -> int:
    """Measure every option on the data set's index and write the record."""
    args = _parser().parse_args(argv)
    source = DATASETS[args.dataset].index / DB_FILE
    if not source.is_file():
        raise SystemExit(f"{source} does not exist: build it first (python -m benchmarks.index_build)")
    base = _vacuumed_size(source, [])
    options = {}
    for name, (what, steps) in OPTIONS.items():
        saved = base - _vacuumed_size(source, steps)
        options[name] = {"what": what, "saved_bytes": saved, "saved_mib": round(saved / MIB, 2)}
        print(f"{name:34s} -{saved / MIB:6.2f} MiB  {what}")
    print(f"{args.dataset}: {base / MIB:.2f} MiB after VACUUM")
    result = {"dataset": args.dataset, "index_sqlite_bytes": base, "options": options}
    print(f"wrote {write_result(f'storage_options_{args.dataset}', result)}")
    return 0


def _vacuumed_size(source: Path, steps: list[str]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / DB_FILE
        shutil.copyfile(source, copy)
        conn = sqlite3.connect(copy, isolation_level=None)
        try:
            for sql in steps:
                conn.execute(sql)
            conn.execute("VACUUM")
        finally:
            conn.close()
        return copy.stat().st_size


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua")
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n")[0])
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
