"""Scale: LiHua-World among distractors grown to 1×, 3×, 10× and 30× its size (issue 46).

    python -m benchmarks scale --build                 # build what is missing, then measure
    python -m benchmarks scale --sizes 1,3             # measure the indexes built so far
    python -m benchmarks scale --sizes 1 --queries 40  # fewer questions (a quick look)

The corpora are ``scale_corpus.py``'s (LiHua first, then 2Wiki, HotpotQA and MultiHop-RAG texts,
then generated chats), built stage by stage by ``scale_build.py`` (each size's build record:
wall and CPU time, text KB/s of the stage, peak RSS, where the time went). Each index is then
brought up to date by the step every build now ends with (``walk_cache.store_walk``: the walk's
arrays written beside the index; timed as ``finalise_s``), and measured in fresh processes:

- ``warm``: one process answers the LiHua dev questions (Null ones left out) by ``vector``,
  ``ppr`` and ``auto`` after one warm-up question each: p50/p95 per method and recall@5 (the
  question's evidence conversations among the top five chunks' documents; distractors never
  count, whatever their date);
- ``cold``: a new process opens the index and answers one ``ppr`` question: ``cold_first_s``
  from open to answer (imports excluded), and the whole ``edge-rag retrieve --method ppr``
  command's wall time and peak RSS (``retrieve_cli_*``);
- ``ask``: the whole ``edge-rag ask`` command with the default profile: peak RSS and wall.

Index bytes are every file of the index folder (SQLite, vector files, the walk's arrays) per KB
of text. Writes ``scale.json`` and ``scale.png`` (the bench extra's matplotlib).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.core.datasets import document_timestamp, lihua_queries
from benchmarks.core.measure import peak_rss_mb, percentiles, stored_files
from benchmarks.core.paths import RESULTS, ROOT
from benchmarks.core.results import markdown_table, pyplot, save_figure, write_result
from benchmarks.core.runtime import child_env, commit_of, runtime_of
from benchmarks.scale.scale_build import SIZES, index_of
from edge_rag import Settings

METHODS = ("vector", "ppr", "auto")
MEASURED = "scale_measure.json"
COLD_QUESTION = "What time does Li Hua check in with Adam about moving in?"
PYTHON = sys.executable


def main(argv: list[str] | None = None) -> int:
    """Build (when asked), measure every size that has an index, write the record."""
    args = _parser().parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe, Path(args.index), args)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.build:
        build(sizes)
    rows = [_measured(n, args) for n in sizes if (index_of(n) / "scale_build.json").is_file()]
    if not rows:
        print("no scale index built yet: python -m benchmarks scale --build")
        return 1
    _add_ratios(rows)
    result = {"command": "python -m benchmarks scale " + " ".join(argv if argv is not None else sys.argv[1:]),
              "queries": rows[0]["queries"], "measured_at": {r["times"]: r.get("measured_at") for r in rows},
              "sizes": rows, **({"note": args.note} if args.note else {}),
              **({"compared_with": commit_of(Path(args.compare))} if args.compare else {})}
    print(markdown_table(*_table(rows)))
    print(f"wrote {write_result(args.name, result, Settings())}")
    plot(rows, args.name)
    return 0


def build(sizes: list[int]) -> None:
    """Build each missing size from the one before it (``scale_build``), one process each."""
    previous = 0
    for times in SIZES:
        if times > max(sizes):
            break
        if not (index_of(times) / "scale_build.json").is_file():
            _run([PYTHON, "-m", "benchmarks.scale.scale_build", str(times), str(previous)])
        previous = times


def _measured(times: int, args: argparse.Namespace) -> dict[str, Any]:
    """A size's figures: measured now (and kept beside its index), or with ``--reuse`` the ones
    kept from an earlier run (sizes finish building at different times on a shared machine)."""
    kept = index_of(times) / MEASURED
    if args.reuse and kept.is_file():
        return dict(json.loads(kept.read_text(encoding="utf-8")))
    row = measure(times, args)
    kept.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return row


def measure(times: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of one size."""
    index = index_of(times)
    record = json.loads((index / "scale_build.json").read_text(encoding="utf-8"))
    finalise = probe_process("finalise", index, args)
    warm = probe_process("warm", index, args)
    cold = probe_process("cold", index, args)
    titled = probe_process("wiki", index, args) if times > 1 and not args.no_wiki else {}
    retrieve_cli = _cli(["retrieve", COLD_QUESTION, "--index", str(index), "--method", "ppr"])
    ask_cli = _cli(["ask", COLD_QUESTION, "--index", str(index)]) if not args.no_ask else {}
    files = stored_files(index, recursive=True)
    files = {k: v for k, v in files.items() if not k.endswith(".json")}
    row = {"times": times, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_before": [round(x, 2) for x in os.getloadavg()],
           "text_mb": round(record["text_bytes"] / 1e6, 2), "documents": record["documents"],
           "chunks": record["chunks"], "entities": record["entities"], "relations": record["relations"],
           "build": {k: record[k] for k in ("added_bytes", "seconds", "cpu_seconds", "kb_per_s",
                                             "kb_per_cpu_s", "peak_rss_mb", "load", "where")},
           "finalise_s": finalise["seconds"], "finalise_peak_rss_mb": finalise["peak_rss_mb"],
           "index_bytes": sum(files.values()),
           "index_bytes_per_kb": round(sum(files.values()) / (record["text_bytes"] / 1000), 1),
           "walk_bytes": sum(v for k, v in files.items() if k.startswith("walk/")),
           "estimates_mb": estimates(index),
           **warm, **cold, **titled, "retrieve_cli": retrieve_cli, "ask_cli": ask_cli}
    if args.compare:
        row["before"] = before(index, args, with_wiki=bool(titled))
    print(json.dumps({k: v for k, v in row.items() if k not in ("build",)}))
    return row


def estimates(index: Path) -> dict[str, dict[str, Any]]:
    """``budget.py``'s estimate with the default and the Raspberry Pi 4 profile, against its budget."""
    from edge_rag.budget import estimate_memory

    out = {}
    for profile in ("default", "rpi4"):
        estimate = estimate_memory(Settings.load(None if profile == "default" else profile), index)
        out[profile] = {**estimate.parts, "total": round(estimate.total_mb, 1), "budget": estimate.budget_mb}
    return out


def before(index: Path, args: argparse.Namespace, with_wiki: bool) -> dict[str, Any]:
    """The same measurements with the runtime checked out at ``--compare`` (an earlier commit's
    worktree: its ``edge_rag``, this checkout's probe), on the same index: old and new side by side
    in one run."""
    code = Path(args.compare)
    titled = probe_process("wiki", index, args, code) if with_wiki else {}
    return {**probe_process("warm", index, args, code), **probe_process("cold", index, args, code), **titled,
            "retrieve_cli": _cli(["retrieve", COLD_QUESTION, "--index", str(index), "--method", "ppr"], code)}


def probe_process(mode: str, index: Path, args: argparse.Namespace, code: Path = ROOT) -> dict[str, Any]:
    """``probe`` in a process of its own (its memory and its cold start are its own), run with
    the code in ``code`` (this checkout by default)."""
    command = [PYTHON, "-m", "benchmarks.scale.scale", "--probe", mode, "--index", str(index),
               "--queries", str(args.queries)]
    runtime = runtime_of(code)  # that checkout's edge_rag, this checkout's probe
    out = subprocess.run(command, capture_output=True, text=True, cwd=runtime, env=child_env(runtime),
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def probe(mode: str, index: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement inside this process: ``finalise``, ``warm`` or ``cold``."""
    start = time.perf_counter()
    from edge_rag import EdgeRAG

    if mode == "finalise":
        from edge_rag.retrieve.walk_cache import store_walk
        from edge_rag.store import WriteLock

        record = index / "finalise.json"
        with _parts(index) as parts, WriteLock(parts.directory):
            if store_walk(parts.directory, parts.store) or not record.is_file():
                done = {"seconds": round(time.perf_counter() - start, 2),
                        "peak_rss_mb": round(peak_rss_mb(), 1)}
                record.write_text(json.dumps(done) + "\n", encoding="utf-8")
        return dict(json.loads(record.read_text(encoding="utf-8")))
    if mode == "cold":
        start = time.perf_counter()
        with EdgeRAG.open(index, create=False, progress=False) as rag:
            rag.retrieve(COLD_QUESTION, "ppr")
            return {"cold_first_s": round(time.perf_counter() - start, 3),
                    "cold_peak_rss_mb": round(peak_rss_mb(), 1)}
    with EdgeRAG.open(index, create=False, progress=False) as rag:
        return wiki(rag, args.queries) if mode == "wiki" else warm(rag, args.queries)


def warm(rag: Any, limit: int) -> dict[str, Any]:
    """Latency and recall@5 of every method over the LiHua dev questions with evidence."""
    stamps = _lihua_stamps(rag)
    questions = [q for q in lihua_queries() if q["evidence"]][: limit or None]
    for method in METHODS:
        rag.retrieve(questions[0]["question"], method)
    timings: dict[str, list[float]] = {m: [] for m in METHODS}
    recall: dict[str, list[float]] = {m: [] for m in METHODS}
    for query in questions:
        for method in METHODS:
            _clear_caches(rag)
            start = time.perf_counter()
            found = rag.retrieve(query["question"], method, top_k=5)
            timings[method].append(1000 * (time.perf_counter() - start))
            docs = {stamps.get(c.doc_id) for c in found.chunks[:5]}
            recall[method].append(len(docs & set(query["evidence"])) / len(query["evidence"]))
    return {"queries": len(questions), "warm_peak_rss_mb": round(peak_rss_mb(), 1),
            "latency_ms": {m: percentiles(timings[m]) for m in METHODS},
            "recall_at_5": {m: round(sum(recall[m]) / len(recall[m]), 4) for m in METHODS}}


def wiki(rag: Any, limit: int) -> dict[str, Any]:
    """2WikiMultihopQA dev recall@2/@5 of ``vector`` and ``ppr`` over the questions whose
    supporting passages are all in the index (titled passages: the title links and seeds), and
    a digest of every ranking (equal digests: the same chunks in the same order)."""
    from benchmarks.core.datasets import wiki_queries, wiki_records

    title = {f"2wiki/{r['id']}": r["title"] for r in wiki_records()}
    present = {title[d.source] for d in rag.documents() if d.source.startswith("2wiki/")}
    questions = [q for q in wiki_queries() if set(q["evidence"]) <= present][: limit or None]
    out: dict[str, Any] = {"wiki_questions": len(questions)}
    for method in ("vector", "ppr"):
        found = [rag.retrieve(q["question"], method, top_k=10).chunks for q in questions]
        ranked = [list(dict.fromkeys(title.get(c.source, c.source) for c in f)) for f in found]
        for k in (2, 5):
            hits = [len(set(r[:k]) & set(q["evidence"])) / len(q["evidence"])
                    for r, q in zip(ranked, questions)]
            out[f"wiki_{method}_recall_at_{k}"] = round(sum(hits) / max(1, len(hits)), 4)
        digest = hashlib.sha256(json.dumps([[c.chunk_id for c in f] for f in found]).encode()).hexdigest()
        out[f"wiki_{method}_digest"] = digest[:12]
    return out


def _lihua_stamps(rag: Any) -> dict[str, str | None]:
    """Document id → ``Time:`` stamp, for LiHua-World's conversations only."""
    chunks = getattr(rag, "chunks", None) or rag.store.document_chunks  # the latter: before the facade
    return {d.id: document_timestamp(chunks(d.id)[0].text) for d in rag.documents()
            if d.source.startswith("LiHuaWorld.zip/")}


def _parts(index: Path) -> Any:
    """The index's parts (store, directory): an ``Engine``, or the ``EdgeRAG`` of a checkout from
    before the facade (``--compare``), whose parts were its own attributes."""
    try:
        from edge_rag.engine import Engine
    except ImportError:
        from edge_rag import EdgeRAG

        return EdgeRAG.open(index, create=False, progress=False)
    return Engine.open(index, create=False, progress=False)


def _clear_caches(rag: Any) -> None:
    (getattr(rag, "clear_caches", None) or rag.forget)()  # forget: before the facade


def _cli(args: list[str], code: Path = ROOT) -> dict[str, Any]:
    """Wall time and peak RSS of one ``edge-rag`` command (its own process)."""
    start = time.perf_counter()
    child = subprocess.Popen([PYTHON, "-m", "edge_rag.cli", *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, cwd=code, env=_env(code))
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode("utf-8", "replace")[-300:] if child.stderr else ""
    return {"wall_s": round(time.perf_counter() - start, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "exit": child.returncode, **({"error": error} if child.returncode else {})}


def _env(code: Path = ROOT) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code)}


def _run(command: list[str]) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, env=_env(), check=True)


def _add_ratios(rows: list[dict[str, Any]]) -> None:
    base = rows[0]
    for before, row in zip([None, *rows], rows):
        if before is not None:  # what the stage's text added to the index, per KB of that text
            added = row["build"]["added_bytes"] / 1000
            row["added_bytes_per_kb"] = round((row["index_bytes"] - before["index_bytes"]) / added, 1)
        row["vs_first"] = {
            "build_kb_per_cpu_s": round(row["build"]["kb_per_cpu_s"] / base["build"]["kb_per_cpu_s"], 3),
            "index_bytes_per_kb": round(row["index_bytes_per_kb"] / base["index_bytes_per_kb"], 3),
            "recall_at_5": {m: round(row["recall_at_5"][m] - base["recall_at_5"][m], 4) for m in METHODS}}


def _table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    headers = ["size", "text MB", "build KB/s (CPU)", "build peak MiB", "bytes/KB", "ppr p50/p95 ms",
               "vector p50", "auto p50", "cold first s", "retrieve MiB", "ask MiB",
               "R@5 vector/ppr/auto"]
    body = [[f"{r['times']}×", r["text_mb"], f"{r['build']['kb_per_s']} ({r['build']['kb_per_cpu_s']})",
             r["build"]["peak_rss_mb"], r["index_bytes_per_kb"],
             f"{r['latency_ms']['ppr']['p50']}/{r['latency_ms']['ppr']['p95']}",
             r["latency_ms"]["vector"]["p50"], r["latency_ms"]["auto"]["p50"], r["cold_first_s"],
             r["retrieve_cli"]["peak_rss_mb"], r["ask_cli"].get("peak_rss_mb", "-"),
             "/".join(str(r["recall_at_5"][m]) for m in METHODS)] for r in rows]
    return headers, body


def plot(rows: list[dict[str, Any]], name: str) -> None:
    """Four panels against the corpus size: latency, memory, build throughput, recall."""
    plt = pyplot()
    if plt is None:
        return
    x = [r["times"] for r in rows]
    figure, axes = plt.subplots(2, 2, figsize=(10, 7))
    for method in METHODS:
        axes[0][0].plot(x, [r["latency_ms"][method]["p50"] for r in rows], marker="o", label=f"{method} p50")
        axes[1][1].plot(x, [r["recall_at_5"][method] for r in rows], marker="o", label=method)
    axes[0][1].plot(x, [r["retrieve_cli"]["peak_rss_mb"] for r in rows], marker="o", label="retrieve (ppr)")
    axes[0][1].plot(x, [r["ask_cli"].get("peak_rss_mb", 0) for r in rows], marker="o", label="ask")
    axes[0][1].plot(x, [r["build"]["peak_rss_mb"] for r in rows], marker="o", label="build stage")
    before = [r for r in rows if "before" in r]
    if before:
        bx = [r["times"] for r in before]
        axes[0][0].plot(bx, [r["before"]["latency_ms"]["ppr"]["p50"] for r in before], "--", marker="x",
                        label="ppr p50 before")
        axes[0][1].plot(bx, [r["before"]["retrieve_cli"]["peak_rss_mb"] for r in before], "--", marker="x",
                        label="retrieve (ppr) before")
    axes[1][0].plot(x, [r["build"]["kb_per_cpu_s"] for r in rows], marker="o", label="KB per CPU second")
    axes[1][0].plot(x, [r["build"]["kb_per_s"] for r in rows], marker="o", label="KB per second (wall)")
    titles = ["warm latency (ms)", "peak RSS (MiB)", "build throughput of the stage", "LiHua dev recall@5"]
    for axis, title in zip(sum(axes.tolist(), []), titles):
        axis.set_xscale("log")
        axis.set_xlabel("corpus size (× LiHua-World)")
        axis.set_title(title)
        axis.legend(fontsize=8)
    save_figure(plt, figure, RESULTS / f"{name}.png")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES), help="e.g. 1,3,10,30")
    parser.add_argument("--build", action="store_true", help="build the missing sizes first (long)")
    parser.add_argument("--queries", type=int, default=0, help="only the first N dev questions (0: all)")
    parser.add_argument("--no-ask", action="store_true", help="skip the edge-rag ask process")
    parser.add_argument("--no-wiki", action="store_true", help="skip the 2Wiki questions (sizes above 1×)")
    parser.add_argument("--name", default="scale", help="results file name (default scale)")
    parser.add_argument("--note", default="", help="a sentence kept in the record (what the run is)")
    parser.add_argument("--reuse", action="store_true", help="take a size's figures kept from an earlier run")
    parser.add_argument("--compare", default="", help="also measure with the code checked out at this path "
                        "(an earlier commit's worktree): the 'before' figures")
    parser.add_argument("--probe", default="", help=argparse.SUPPRESS)
    parser.add_argument("--index", default="", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
