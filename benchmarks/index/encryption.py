"""Encryption at rest: a plain and an encrypted LiHua-World index side by side.

    python -m benchmarks encryption [--docs N] [--builds 2] [--key-file FILE]

Builds the LiHua-World corpus (all 442 conversations; ``--docs N``: the first N) into a plain and
an encrypted index in one run, alternating (plain, encrypted, encrypted, plain for ``--builds 2``),
default settings (``fast`` extractor), so the machine's load falls on both alike. Then:

- every file of the encrypted index is searched byte by byte for 50 distinctive phrases of the
  corpus (chat messages' text, 24 characters); the plain index is searched as the control (the
  write-ahead log while a writer holds the index open: tests/test_encrypt.py);
- the CLI opens it with a wrong key and with none: its stderr, exit status and whether any file
  changed are recorded;
- every LiHua dev question with evidence is retrieved from both (``vector`` and ``local``, top 5),
  alternating per question: the ranked chunks must be the same, recall@5 is reported, and the
  p50 of each index's retrieval time, with their ratio.

The key is a passphrase by default (SQLCipher derives the page key with PBKDF2 at each open,
counted in the build time); ``--key-file`` takes another (64 hex digits: a raw key).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.core.datasets import DATASETS, lihua_queries
from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.store.cipher import is_encrypted, read_key_file

PASSPHRASE = b"edge-rag benchmark passphrase"
PHRASES = 50
METHODS = ("vector", "local")


def phrases(documents: list, count: int = PHRASES) -> list[bytes]:
    """``count`` distinctive phrases of the corpus: 24 characters of chat messages, spread evenly."""
    found = []
    for doc in documents:
        for line in "".join(doc.blocks()).splitlines()[1:]:
            body = line.split(": ", 1)[-1].strip()
            if len(body) >= 40 and len(set(body.lower().split())) >= 6:
                found.append(body[8:32].encode("utf-8"))
    found = list(dict.fromkeys(found))
    return found[:: max(1, len(found) // count)][:count]


def build(folder: Path, documents: list, key: bytes | None) -> float:
    """Seconds to open a new index and insert every document (each process-free, same settings)."""
    shutil.rmtree(folder, ignore_errors=True)
    start = time.perf_counter()
    with EdgeRAG.open(folder, key=key, progress=False) as rag:
        assert rag.insert(*documents).ok
    return time.perf_counter() - start


def found_in(directory: Path, needles: list[bytes]) -> dict[str, int]:
    """How many of the needles each file of the directory holds."""
    return {p.name: sum(n in p.read_bytes() for n in needles) for p in sorted(directory.iterdir())}


def refusal(index: Path, key_file: Path | None) -> dict:
    """The CLI's answer to a missing or wrong key: exit status, stderr, files changed or not."""
    before = _digests(index)
    env = {k: v for k, v in os.environ.items() if k != "EDGE_RAG_KEY_FILE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    extra = ["--key-file", str(key_file)] if key_file else []
    done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "retrieve", "moving in", "--index",
                           str(index), *extra], capture_output=True, text=True, env=env)
    return {"exit": done.returncode, "stderr": done.stderr, "stdout": done.stdout,
            "files_unchanged": _digests(index) == before}


def _digests(index: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(index.iterdir())}


def retrieval(plain: Path, secret: Path, key: bytes, queries: list[dict]) -> dict:
    """Both indexes answer every question by each method, alternating; same chunks, recall, p50."""
    recall_of = DATASETS["lihua"].recall
    out = {}
    with EdgeRAG.open(plain, create=False) as a, EdgeRAG.open(secret, create=False, key=key) as b:
        recall = {"plain": recall_of(a), "encrypted": recall_of(b)}
        for method in METHODS:
            times: dict[str, list[float]] = {"plain": [], "encrypted": []}
            hits: dict[str, list[float]] = {"plain": [], "encrypted": []}
            same = 0
            for i, query in enumerate(queries):
                pair = [("plain", a), ("encrypted", b)][:: 1 if i % 2 == 0 else -1]
                chunks = {}
                for name, rag in pair:
                    rag.clear_caches()
                    start = time.perf_counter()
                    chunks[name] = rag.retrieve(query["question"], method=method).chunks
                    times[name].append((time.perf_counter() - start) * 1000)
                    hits[name].append(recall[name](chunks[name], query, 5))
                same += [(c.source, c.text) for c in chunks["plain"]] == \
                    [(c.source, c.text) for c in chunks["encrypted"]]
            p50 = {name: round(statistics.median(t), 2) for name, t in times.items()}
            out[method] = {"questions": len(queries), "same_chunks": same,
                           "recall@5": {n: round(statistics.mean(h), 4) for n, h in hits.items()},
                           "p50_ms": p50, "p50_ratio": round(p50["encrypted"] / p50["plain"], 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Build both, search the bytes, try wrong keys, compare retrieval; print and write JSON."""
    args = _parser().parse_args(argv)
    documents = DATASETS["lihua"].documents()[: args.docs]
    key = read_key_file(args.key_file) if args.key_file else PASSPHRASE
    work = Path(tempfile.mkdtemp(prefix="edge-rag-encryption-"))
    plain, secret = work / "plain", work / "encrypted"
    builds: dict[str, list[float]] = {"plain": [], "encrypted": []}
    for round_ in range(args.builds):
        order = [("plain", plain, None), ("encrypted", secret, key)][:: 1 if round_ % 2 == 0 else -1]
        for name, folder, k in order:
            builds[name].append(round(build(folder, documents, k), 2))
            print(f"built {name} in {builds[name][-1]} s", flush=True)
    needles = phrases(documents)
    wrong = work / "wrong.key"
    wrong.write_bytes(b"not the key, a wrong guess\n")
    wrong.chmod(0o600)  # a key file others can read is refused before any key is tried
    encrypted = is_encrypted(secret / "index.sqlite")
    queries = [q for q in lihua_queries() if q["evidence"]]
    result = {
        "documents": len(documents), "key": "file" if args.key_file else "passphrase",
        "encrypted": encrypted, "phrases": len(needles),
        "phrases_found": {"plain": found_in(plain, needles), "encrypted": found_in(secret, needles)},
        "build_s": builds, "build_ratio": round(sum(builds["encrypted"]) / sum(builds["plain"]), 3),
        "bytes": {"plain": sum(p.stat().st_size for p in plain.iterdir()),
                  "encrypted": sum(p.stat().st_size for p in secret.iterdir())},
        "missing_key": refusal(secret, None), "wrong_key": refusal(secret, wrong),
        "retrieval": retrieval(plain, secret, key, queries),
    }
    shutil.rmtree(work, ignore_errors=True)
    _print(result)
    path = write_result("encryption_lihua" + (f"_{args.docs}" if args.docs else ""), result, Settings())
    print(f"wrote {path}")
    return 0


def _print(result: dict) -> None:
    found = {name: sum(files.values()) for name, files in result["phrases_found"].items()}
    print(markdown_table(["index", "build s", "bytes", f"phrases found (of {result['phrases']})"],
                         [[name, result["build_s"][name], result["bytes"][name], found[name]]
                          for name in ("plain", "encrypted")]))
    print(markdown_table(["method", "same chunks", "recall@5 plain", "recall@5 encrypted", "p50 plain ms",
                          "p50 encrypted ms", "p50 ratio"],
                         [[m, f"{r['same_chunks']}/{r['questions']}", r["recall@5"]["plain"],
                           r["recall@5"]["encrypted"], r["p50_ms"]["plain"], r["p50_ms"]["encrypted"],
                           r["p50_ratio"]] for m, r in result["retrieval"].items()]))
    print(f"build ratio {result['build_ratio']}; wrong key: exit {result['wrong_key']['exit']} "
          f"{result['wrong_key']['stderr']!r}; missing key: exit {result['missing_key']['exit']}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=None, help="first N conversations (default: all)")
    parser.add_argument("--builds", type=int, default=2,
                        help="build rounds, alternating which index goes first (default: 2)")
    parser.add_argument("--key-file", type=Path, default=None,
                        help="key file for the encrypted index (default: a fixed passphrase)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
