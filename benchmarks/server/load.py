"""Load: reader processes query an index while one writer inserts and deletes, for a fixed time.

    python -m benchmarks load [--seconds 60] [--readers 4] [--base 24] [--methods vector,dual]
                              [--threads 1] [--min-writes 0] [--output FILE] [--work DIR]

The base index holds the first ``--base`` LiHua-World conversations (built once under
``benchmarks/.indexes/``, copied fresh for every run, so the writer's work never accumulates).
Every process loads its models, then all start together. The writer keeps a rolling window of
churn documents (several chunks each): it inserts a new one, and deletes the oldest once two
are present, until the time is up (and it has done ``--min-writes`` operations); then the
readers stop. Each reader cycles through the LiHua dev questions and the
retrieval methods; after every query it takes one snapshot of the SQLite file (one SELECT, so
one read transaction) and checks that no document is half there: each visible document has all
of its chunks (``n_chunks`` rows, at least one) and no chunk lacks its document.

Every process runs onnxruntime with ``--threads`` threads (default 1: five processes that each
spin a thread per core would fight over a small board's cores). Before the start the writer
times one insert and one delete alone, so the slowdown under load is a ratio of one run.

Reported: queries/s (all readers), per-query latency p50/p95, writer inserts/s and deletes/s
(and insert latency alone vs under load), reader errors and half-document sightings (both must
be 0). Writes ``load.json`` and ``load.md``.
Times are noisy on a shared machine; the error and sighting counts are the result that matters.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.core.datasets import LIHUA_ZIP, lihua_queries
from benchmarks.core.measure import percentiles
from benchmarks.core.paths import RESULTS, ROOT
from benchmarks.core.results import markdown_table, stamp, write_result
from edge_rag import Settings

INDEXES = ROOT / "benchmarks" / ".indexes"
STOP = "stop"
CHURN_LINES = 40
# One statement, so one read snapshot: documents whose chunk rows disagree with n_chunks, and
# chunks whose document is not (yet, or any more) visible.
HALF_DOCUMENTS = """
SELECT (SELECT count(*) FROM documents d
        WHERE d.n_chunks < 1 OR d.n_chunks != (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)),
       (SELECT count(*) FROM chunks c WHERE c.doc_id NOT IN (SELECT id FROM documents)),
       (SELECT count(*) FROM documents)
"""
FALLBACK_QUESTIONS = ["Who fixed the heating?", "When does Li Hua check in with Adam?",
                      "What did the churn note say about lanterns?"]


def main(argv: list[str] | None = None) -> int:
    """Run the load test (or one of its child roles) and print the table."""
    args = _parser().parse_args(argv)
    if args.role:
        return _child(args)
    result = run(args.seconds, args.readers, args.base, args.methods.split(","), args.work,
                 args.min_writes, args.threads)
    writer = result["writer"]
    table = markdown_table(["readers", "seconds", "queries", "queries/s", "query p50 ms", "query p95 ms",
                            "inserts/s", "deletes/s", "insert ms alone", "insert ms p50 under load",
                            "reader errors", "half documents seen"],
                           [[result["readers"], result["seconds"], result["queries"],
                             result["queries_per_s"], result["query_ms"]["p50"], result["query_ms"]["p95"],
                             writer["inserts_per_s"], writer["deletes_per_s"], writer["alone_insert_ms"],
                             writer["insert_ms"]["p50"], result["reader_errors"],
                             result["half_documents_seen"]]])
    print(table)
    output = Path(args.output) if args.output else None
    settings = Settings.load(None, threads=args.threads)
    if output is None:
        (RESULTS / "load.md").write_text(table + "\n", encoding="utf-8")
        print(f"wrote {write_result('load', result, settings)}")
    else:
        stamped = {**stamp("load", settings), **result}
        output.write_text(json.dumps(stamped, indent=2) + "\n", encoding="utf-8")
    return 0 if result["reader_errors"] == 0 and result["half_documents_seen"] == 0 else 1


def run(seconds: float, readers: int, base: int, methods: list[str], work: str | None = None,
        min_writes: int = 0, threads: int = 1) -> dict[str, Any]:
    """One load run on a fresh copy of the base index; returns the merged figures."""
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        index = Path(scratch) / "index"
        shutil.copytree(_base_index(base, Path(work) if work else INDEXES), index)
        children = [_spawn("writer", index, methods, min_writes, threads)]
        children += [_spawn("reader", index, methods, i, threads) for i in range(readers)]
        for child in children:  # every child has loaded its models
            assert child.stdout.readline().strip() == "ready", "a load child failed to start"
        start = time.perf_counter()
        for child in children:
            child.stdin.write(f"{seconds}\n")
            child.stdin.flush()
        writer = _finish(children[0])
        elapsed = time.perf_counter() - start
        (index.parent / STOP).write_text("stop\n", encoding="utf-8")
        outputs = [_finish(child) for child in children[1:]]
    return {**_merge(writer, outputs, elapsed, base, methods), "threads": threads}


def _spawn(role: str, index: Path, methods: list[str], number: int, threads: int) -> subprocess.Popen:
    # number: a reader's index (where it starts in the question list), the writer's --min-writes.
    command = [sys.executable, "-m", "benchmarks.server.load", "--role", role, "--index", str(index),
               "--methods", ",".join(methods), "--number", str(number), "--threads", str(threads)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)


def _finish(child: subprocess.Popen) -> dict[str, Any]:
    out, _ = child.communicate(timeout=3600)
    if child.returncode != 0:
        return {"role": "crashed", "errors": [f"child exited {child.returncode}"], "queries": 0,
                "latencies_ms": [], "half_documents_seen": 0, "checks": 0}
    return json.loads(out.strip().splitlines()[-1])


def _merge(writer: dict[str, Any], readers: list[dict[str, Any]], seconds: float, base: int,
           methods: list[str]) -> dict[str, Any]:
    seconds = round(seconds, 1)
    latencies = [ms for r in readers for ms in r["latencies_ms"]]
    queries = sum(r["queries"] for r in readers)
    errors = [e for r in readers for e in r["errors"]] + writer.get("errors", [])
    return {
        "readers": len(readers), "seconds": seconds, "base_documents": base, "methods": methods,
        "queries": queries, "queries_per_s": round(queries / seconds, 2),
        "query_ms": percentiles(latencies), "snapshot_checks": sum(r["checks"] for r in readers),
        "reader_errors": sum(len(r["errors"]) for r in readers),
        "half_documents_seen": sum(r["half_documents_seen"] for r in readers),
        "errors": errors[:20],
        "writer": {"inserts": writer.get("inserts", 0), "deletes": writer.get("deletes", 0),
                   "inserts_per_s": round(writer.get("inserts", 0) / seconds, 2),
                   "deletes_per_s": round(writer.get("deletes", 0) / seconds, 2),
                   "alone_insert_ms": round(writer.get("alone_insert_ms", 0.0), 1),
                   "alone_delete_ms": round(writer.get("alone_delete_ms", 0.0), 1),
                   "insert_ms": percentiles(writer.get("insert_ms", [])),
                   "delete_ms": percentiles(writer.get("delete_ms", [])),
                   "time_s": writer.get("time_s", {})},
        "per_reader_queries": [r["queries"] for r in readers],
        "reader_time_s": {key: round(sum(r.get("time_s", {}).get(key, 0.0) for r in readers), 2)
                          for key in ("wall", "on_cpu", "waiting_for_a_core", "blocked_or_sleeping")},
    }


# -- the base index ----------------------------------------------------------------------

def _base_index(count: int, folder: Path) -> Path:
    """LiHua-World's first ``count`` conversations (or a few notes without the data set)."""
    from edge_rag import EdgeRAG

    path = folder / f"load-base-{count}"
    if (path / "built").is_file():
        return path
    shutil.rmtree(path, ignore_errors=True)
    with EdgeRAG.open(path, progress=False) as rag:
        for text, source in _base_texts(count):
            rag.insert_text(text, source=source)
    (path / "built").write_text("ok\n", encoding="utf-8")
    return path


def _base_texts(count: int) -> list[tuple[str, str]]:
    if not LIHUA_ZIP.is_file():
        return [(f"Note {i}: the harbour lantern {i} was lit by Ada at dusk.", f"note-{i}")
                for i in range(count)]
    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".txt"))[:count]
        return [(archive.read(n).decode("utf-8"), Path(n).name) for n in names]


# -- the child processes -----------------------------------------------------------------

def _child(args: argparse.Namespace) -> int:
    from edge_rag import EdgeRAG

    with EdgeRAG.open(args.index, create=False, progress=False, threads=args.threads) as rag:
        for method in args.methods.split(","):  # load the models before the start
            rag.retrieve("warm up", method=method, top_k=1)
        alone = _time_alone(rag) if args.role == "writer" else {}
        print("ready", flush=True)
        seconds = float(sys.stdin.readline())
        role = _write if args.role == "writer" else _read
        result = {**role(rag, args, time.monotonic() + seconds), **alone}
    print(json.dumps(result), flush=True)
    return 0


def _write(rag: Any, args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    present: list[str] = []
    out: dict[str, Any] = {"role": "writer", "inserts": 0, "deletes": 0, "insert_ms": [],
                           "delete_ms": [], "errors": []}
    number, began, (cpu0, wait0) = 0, time.perf_counter(), _schedstat()
    while time.monotonic() < deadline or out["inserts"] + out["deletes"] < args.number:
        start = time.perf_counter()
        try:
            if len(present) >= 2:
                rag.delete(present.pop(0))
                out["deletes"] += 1
                out["delete_ms"].append((time.perf_counter() - start) * 1000)
                continue
            report = rag.insert_text(_churn_text(number), source=f"churn-{number}")
            present.extend(report.added)
            out["inserts"] += 1
            out["insert_ms"].append((time.perf_counter() - start) * 1000)
            number += 1
        except Exception as exc:  # noqa: BLE001 - a load test counts every failure
            out["errors"].append(f"writer: {type(exc).__name__}: {exc}")
    out["time_s"] = _time_split(began, cpu0, wait0)
    return out


def _time_split(began: float, cpu0: float, wait0: float) -> dict[str, float]:
    """Where a loop's wall time went: on a CPU, waiting for a core, blocked (locks, I/O)."""
    cpu, wait = _schedstat()
    wall = time.perf_counter() - began
    return {"wall": round(wall, 2), "on_cpu": round(cpu - cpu0, 2),
            "waiting_for_a_core": round(wait - wait0, 2),
            "blocked_or_sleeping": round(max(0.0, wall - (cpu - cpu0) - (wait - wait0)), 2)}


def _time_alone(rag: Any) -> dict[str, float]:
    """One insert and one delete before the readers start (the baseline of the same run)."""
    start = time.perf_counter()
    [doc_id] = rag.insert_text(_churn_text(-1), source="churn-alone").added
    middle = time.perf_counter()
    rag.delete(doc_id)
    return {"alone_insert_ms": (middle - start) * 1000,
            "alone_delete_ms": (time.perf_counter() - middle) * 1000}


def _schedstat() -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for a core) of this process's main thread
    so far, from Linux's /proc/self/schedstat (zeros elsewhere)."""
    try:
        with open("/proc/self/schedstat", encoding="ascii") as stat:
            on_cpu, waiting, _ = stat.read().split()
        return int(on_cpu) / 1e9, int(waiting) / 1e9
    except (OSError, ValueError):
        return 0.0, 0.0


def _churn_text(number: int) -> str:
    return "\n".join(f"Churn note {number}, line {i}: the lantern keeper Ada logged ship {number * 100 + i} "
                     f"passing the breakwater at {i % 24:02d}:{(i * 7) % 60:02d}."
                     for i in range(CHURN_LINES))


def _read(rag: Any, args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    questions = _questions()
    methods = args.methods.split(",")
    out: dict[str, Any] = {"role": "reader", "queries": 0, "latencies_ms": [], "errors": [],
                           "half_documents_seen": 0, "checks": 0}
    observer = sqlite3.connect(f"file:{Path(args.index) / 'index.sqlite'}?mode=ro", uri=True, timeout=30)
    step, stop = args.number, Path(args.index).parent / STOP
    began, (cpu0, wait0) = time.perf_counter(), _schedstat()
    while not stop.exists():
        question, method = questions[step % len(questions)], methods[step % len(methods)]
        step += 1
        start = time.perf_counter()
        try:
            result = rag.retrieve(question, method=method, top_k=3)
            if any(not chunk.text or not chunk.source for chunk in result.chunks):
                raise AssertionError("a retrieved chunk without text or source")
        except Exception as exc:  # noqa: BLE001 - a load test counts every failure
            out["errors"].append(f"reader {args.number}: {type(exc).__name__}: {exc}")
            continue
        out["latencies_ms"].append((time.perf_counter() - start) * 1000)
        out["queries"] += 1
        half, orphans, _ = observer.execute(HALF_DOCUMENTS).fetchone()
        out["half_documents_seen"] += half + orphans
        out["checks"] += 1
    observer.close()
    out["time_s"] = _time_split(began, cpu0, wait0)
    return out


def _questions() -> list[str]:
    try:
        return [q["question"] for q in lihua_queries()][:100] + FALLBACK_QUESTIONS
    except OSError:
        return FALLBACK_QUESTIONS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the load runs (default 60)")
    parser.add_argument("--readers", type=int, default=4, help="reader processes (default 4)")
    parser.add_argument("--base", type=int, default=24, help="LiHua conversations in the base index")
    parser.add_argument("--methods", default="vector,dual", help="retrieval methods readers cycle")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime threads per process")
    parser.add_argument("--min-writes", type=int, default=0,
                        help="the writer goes on past --seconds until it did this many operations")
    parser.add_argument("--output", default=None, help="write the result JSON here instead of "
                        "benchmarks/results/load.json")
    parser.add_argument("--work", default=None, help="folder for the scratch copy of the index")
    parser.add_argument("--role", choices=("reader", "writer"), help=argparse.SUPPRESS)
    parser.add_argument("--index", help=argparse.SUPPRESS)
    parser.add_argument("--number", type=int, default=0, help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
