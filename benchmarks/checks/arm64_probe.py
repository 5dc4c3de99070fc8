"""The small, fixed workload that benchmarks/checks/arm64.sh runs on the emulated aarch64 board and on x86.

    python benchmarks/checks/arm64_probe.py --out probe.json [--docs 12] [--questions 4] [--answer-tokens 16]

Indexes the first ``--docs`` conversations of the shipped demo corpus (export/demo/), retrieves with
every retrieval method (and ``auto``, the planner head) for the first ``--questions`` demo questions,
answers the first question with at most ``--answer-tokens`` new tokens with the SLM (default
SmolLM2-135M int8), then encrypts the index (SQLCipher, the [encrypt] extra) and retrieves again.
Writes the machine, versions, the top chunks of every method and question, the answer, the
encryption check and the seconds of each stage as JSON. Runtime imports only: it runs on a board that has
the wheel and the model folders, no torch. Run it on both machines and compare ``retrieval``.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEMO = HERE.parents[1] / "export" / "demo"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--docs", type=int, default=12, help="conversations to index (default 12)")
    parser.add_argument("--questions", type=int, default=4, help="demo questions (default 4)")
    parser.add_argument("--answer-tokens", type=int, default=16, help="longest answer (default 16)")
    parser.add_argument("--slm", default="smollm2-135m-int8", help="SLM model folder")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime threads (default 2)")
    return parser.parse_args(argv)


def corpus(count: int) -> list[Path]:
    """The first ``count`` demo conversations, in time order (the README question's is the 2nd)."""
    return sorted((DEMO / "LiHua-World").rglob("*.txt"))[:count]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Index, retrieve with every method, answer once; return what the JSON holds (also written
    before the answer, so that a run stopped during generation keeps its retrieval results)."""
    import numpy
    import onnxruntime

    import edge_rag

    questions = json.loads((DEMO / "questions.json").read_text(encoding="utf-8"))[: args.questions]
    seconds: dict[str, float] = {}
    result: dict[str, Any] = {
        "machine": platform.machine(), "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__, "numpy": numpy.__version__,
        "edge_rag": edge_rag.__version__, "docs": args.docs,
        "questions": [q["question"] for q in questions],
    }
    with tempfile.TemporaryDirectory() as tmp:
        _probe(Path(tmp) / "index", args, questions, result, seconds)
        # Encryption at rest (the [encrypt] extra, SQLCipher's aarch64 wheel): the same index.
        result["encryption"] = encryption(Path(tmp) / "index", args.docs, questions,
                                          result["retrieval"]["vector"])
    result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return result


def _probe(index: Path, args: argparse.Namespace, questions: list[dict], result: dict[str, Any],
           seconds: dict[str, float]) -> None:
    from edge_rag import EdgeRAG
    from edge_rag.engine import Engine
    from edge_rag.retrieve import RETRIEVERS

    engine = Engine.open(index, slm=args.slm, answer_max_tokens=args.answer_tokens, threads=args.threads,
                         slm_context_tokens=512, context_token_budget=160, progress=False)
    with EdgeRAG(engine) as rag:
        start = time.perf_counter()
        report = rag.insert(*corpus(args.docs))
        seconds["index"] = time.perf_counter() - start
        result["chunks"] = report.chunks
        vectors = engine.embedder.embed([q["question"] for q in questions])
        result["question_vectors"] = [[round(float(v), 6) for v in row] for row in vectors]
        result["retrieval"] = {}
        for method in [*sorted(RETRIEVERS), "auto"]:
            start = time.perf_counter()
            found = [rag.retrieve(q["question"], method=method, top_k=3).chunks for q in questions]
            result["retrieval"][method] = [[_chunk_key(c) for c in chunks] for chunks in found]
            result.setdefault("scores", {})[method] = [[round(c.score, 4) for c in chunks]
                                                        for chunks in found]
            seconds[f"retrieve_{method}"] = time.perf_counter() - start
        result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
        _write(args.out, result)
        start = time.perf_counter()
        answer = rag.ask(questions[0]["question"], method="vector", top_k=1)
        seconds["answer"] = time.perf_counter() - start
        result["answer"] = answer.text
        result["answer_gold"] = questions[0]["answer"]


def encryption(index: Path, docs: int, questions: list[dict], plain: list[list[str]]) -> dict[str, Any]:
    """Encrypt the probe's index, retrieve from it, try a wrong key, search its files for the text."""
    from edge_rag import EdgeRAG
    from edge_rag.engine import Engine
    from edge_rag.errors import EdgeRagError

    key, start = "arm64 probe passphrase", time.perf_counter()
    try:
        EdgeRAG.change_key(index, None, key)
        engine = Engine.open(index, create=False, key=key)
        with EdgeRAG(engine) as rag:
            found = [[_chunk_key(c) for c in rag.retrieve(q["question"], method="vector", top_k=3).chunks]
                     for q in questions]
            version = engine.store.conn.execute("PRAGMA cipher_version").fetchone()[0]
    except EdgeRagError as exc:
        return {"error": str(exc)}
    try:
        EdgeRAG.open(index, create=False, key="not the key").close()
        refused = "opened with a wrong key"
    except EdgeRagError as exc:
        refused = str(exc)
    lines = [line.split(": ", 1)[-1][:24].encode() for path in corpus(docs)
             for line in path.read_text(encoding="utf-8").splitlines()[1:] if len(line) > 40]
    data = b"".join(p.read_bytes() for p in index.iterdir())
    return {"sqlcipher": version, "seconds": round(time.perf_counter() - start, 2),
            "retrieval_same_as_plain": found == plain, "wrong_key": refused,
            "files": sorted(p.name for p in index.iterdir()),
            "phrases": len(lines), "phrases_found": sum(line in data for line in lines)}


def _chunk_key(chunk: Any) -> str:
    """A chunk named by its file and its text's start: the same on every machine."""
    return f"{Path(chunk.source).name}:{' '.join(chunk.text.split())[:40]}"


def _write(path: Path, result: dict[str, Any]) -> None:
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def compare(first: dict[str, Any], second: dict[str, Any]) -> dict[str, bool]:
    """Per method: the same top chunks, in the same order, for every question."""
    return {m: first["retrieval"].get(m) == second["retrieval"].get(m) for m in first["retrieval"]}


def agreement(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """How close two runs are: same top-1 chunk everywhere, shared top-3 chunks, the cosine of the
    question embeddings of the two machines."""
    import numpy

    pairs = [(a, b) for m in first["retrieval"]
             for a, b in zip(first["retrieval"][m], second["retrieval"][m])]
    vectors = [numpy.asarray(run["question_vectors"]) for run in (first, second)]
    shared = sum(len(set(a) & set(b)) for a, b in pairs) / max(1, sum(len(a) for a, _ in pairs))
    return {"top1_same": all(a[:1] == b[:1] for a, b in pairs), "top3_shared": round(shared, 3),
            "question_embedding_min_cosine": round(float(numpy.sum(vectors[0] * vectors[1], 1).min()), 6)}


def main(argv: list[str] | None = None) -> int:
    """Run the probe and write its JSON."""
    args = parse_args(argv)
    result = run(args)
    _write(args.out, result)
    print(json.dumps({k: result[k] for k in ("machine", "answer", "seconds")}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
