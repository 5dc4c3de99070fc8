"""Retrieval speed and results of this checkout against another commit, side by side in one run.

    python -m benchmarks code_speed --against 58f1c35 --name structure_19a

Both versions of ``edge_rag/`` open the same index (a LiHua-World subset, built by this checkout
when missing) in their own processes, alternating old and new each round so that both see the
same machine load. Reports the median milliseconds per retrieval of each method, the new/old
ratio, and whether both versions returned the same chunks, entities and relations. For
refactors that must not change behaviour. Writes ``code_speed_<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from benchmarks.core.datasets import LIHUA_QUERIES, LIHUA_ZIP
from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag import Settings

METHODS = ("vector", "local", "dual", "topology")
# Runs inside each version's process: times every method on every question, prints JSON.
WORKER = """
import json, sys, time
from edge_rag import EdgeRAG
index, questions, methods = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = {}
with EdgeRAG.open(index, create=False, progress=False) as rag:
    for method in methods:
        rag.retrieve(questions[0], method)  # warm: models, vector files, name matcher
        times, results = [], []
        for question in questions:
            start = time.perf_counter()
            result = rag.retrieve(question, method).to_dict()
            times.append((time.perf_counter() - start) * 1000)
            result.pop("timings_ms")
            results.append(result)
        out[method] = {"ms": times, "results": results}
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    index = ROOT / "benchmarks" / ".indexes" / f"lihua-first{args.documents}"
    if not index.exists():
        _build(index, args.documents)
    questions = [q["question"] for q in json.loads(LIHUA_QUERIES.read_text())
                 .values()][: args.questions]
    with tempfile.TemporaryDirectory() as tmp:
        old = _export(args.against, Path(tmp))
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for round_ in range(args.rounds):
            order = [("old", old), ("new", ROOT)] if round_ % 2 == 0 else [("new", ROOT), ("old", old)]
            for side, code in order:
                runs[side].append(_run(code, index, questions))
    rows, summary = [], {}
    for method in METHODS:
        old_ms, new_ms = (statistics.median(t for run in runs[side] for t in run[method]["ms"])
                          for side in ("old", "new"))
        same = runs["old"][0][method]["results"] == runs["new"][0][method]["results"]
        summary[method] = {"old_ms_p50": round(old_ms, 2), "new_ms_p50": round(new_ms, 2),
                           "ratio_new_old": round(new_ms / old_ms, 3), "same_results": same}
        rows.append([method, old_ms, new_ms, new_ms / old_ms, "yes" if same else "NO"])
    print(markdown_table(["method", "old ms p50", "new ms p50", "new/old", "same results"], rows))
    path = write_result(f"code_speed_{args.name}", settings=Settings(), payload={
        "against": args.against, "index": f"LiHua-World, first {args.documents} files, fast extractor",
        "questions": len(questions), "rounds": args.rounds, "methods": summary})
    print(f"wrote {path}")
    return 0 if all(m["same_results"] for m in summary.values()) else 1


def _export(ref: str, folder: Path) -> Path:
    archive = folder / "old.tar"
    with open(archive, "wb") as handle:
        subprocess.run(["git", "archive", ref, "edge_rag"], cwd=ROOT, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "old", filter="data")
    return folder / "old"


def _run(code: Path, index: Path, questions: list[str]) -> dict:
    # cwd and PYTHONPATH both point at the version under test (``-c`` puts cwd first on sys.path).
    done = subprocess.run([sys.executable, "-c", WORKER, str(index), json.dumps(questions),
                           json.dumps(METHODS)], cwd=code,
                          env={**os.environ, "PYTHONPATH": str(code)},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _build(index: Path, documents: int) -> None:
    from edge_rag import Document, EdgeRAG

    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".txt"))[:documents]
        docs = [Document.from_text(archive.read(n).decode("utf-8"), f"{LIHUA_ZIP.name}/{n}") for n in names]
    with EdgeRAG.open(index, progress=False) as rag:
        rag.insert(*docs, progress=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks code_speed",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--against", required=True, help="git commit or branch to compare with")
    parser.add_argument("--name", required=True, help="result name: code_speed_<name>.json")
    parser.add_argument("--documents", type=int, default=80, help="LiHua-World files in the index")
    parser.add_argument("--questions", type=int, default=25, help="first N LiHua-World dev questions")
    parser.add_argument("--rounds", type=int, default=4, help="old/new alternations")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
