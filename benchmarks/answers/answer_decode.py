"""Answer decoding with and without prompt lookup, side by side on LiHua-World dev questions.

    python -m benchmarks answer_decode [--dataset lihua] [--slm qwen2.5-coder-0.5b-q4]
                                       [--method vector] [--limit 60] [--draft-tokens 3]

Each question is answered twice by the answer stage of the profile (focused by default), once
decoding one token a call (``draft_tokens`` 0) and once with prompt-lookup drafts
(``edge_rag/models/lookup.py``), in alternating order and each from an empty KV cache, so that
both prefill alike and only decoding differs. Reported: decode time and tokens per second,
the drafted tokens kept, how many answers are identical to the letter, and accuracy both ways
(the ``answer_accuracy`` rules). Abstained questions generate nothing and are left out.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from benchmarks.core.answers import is_correct
from benchmarks.core.datasets import DATASETS, open_engine, stratified
from benchmarks.core.options import options
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.engine import Engine


def measure(engine: Engine, question: str, method: str, draft_tokens: int) -> dict:
    """One answer with ``draft_tokens``; its text, decode time, tokens and drafts kept."""
    answerer = engine.answerer
    answerer.config = replace(answerer.config, draft_tokens=draft_tokens)
    engine.slm._gqa.reset()
    prepared = answerer.prepare(question, EdgeRAG(engine).retrieve(question, method=method))
    if prepared.abstain:
        return {}
    result = engine.slm.generate(prepared.prompt, answerer.config, answerer._mask(prepared))
    return {"text": result.text, "decode_ms": result.decode_ms, "tokens": result.new_tokens,
            "accepted": result.accepted_tokens, "prompt_tokens": result.prompt_tokens}


def main(argv: list[str] | None = None) -> int:
    """Answer every question both ways, print the comparison, write JSON."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    queries = stratified(dataset.queries(), args.limit)
    slm = args.slm or Settings().slm
    modes = {"stepwise": 0, "lookup": args.draft_tokens}
    rows = []
    with open_engine(dataset, slm=slm) as engine:
        if engine.slm._gqa is None:
            raise SystemExit(f"{slm} is not a GQA graph: prompt lookup needs one")
        for number, query in enumerate(queries):
            order = list(modes) if number % 2 == 0 else list(reversed(modes))
            runs = {mode: measure(engine, query["question"], args.method, modes[mode]) for mode in order}
            if not runs["stepwise"]:
                continue
            for run in runs.values():
                run["right"] = is_correct(run["text"], query["answer"], query["type"])
            rows.append({"id": query["id"], "type": query["type"], **runs})
            print(f"{query['id']}: {runs['stepwise']['tokens']} tokens, "
                  f"{runs['stepwise']['decode_ms']:.0f} -> {runs['lookup']['decode_ms']:.0f} ms, "
                  f"{runs['lookup']['accepted']} drafted kept", flush=True)
    summary = {mode: _summary(rows, mode) for mode in modes}
    summary["identical_answers"] = sum(r["stepwise"]["text"] == r["lookup"]["text"] for r in rows)
    summary["decode_ratio"] = round(summary["stepwise"]["decode_ms"] / summary["lookup"]["decode_ms"], 3)
    headers = ["mode", "answers", "right", "decode_ms", "decode_tps", "tokens", "accepted"]
    print(markdown_table(headers, [[m, *(summary[m][h] for h in headers[1:])] for m in modes]))
    print(f"identical answers: {summary['identical_answers']}/{len(rows)}; "
          f"decode time stepwise / lookup: {summary['decode_ratio']}")
    payload = {"dataset": args.dataset, "slm": slm, "method": args.method, "limit": args.limit,
               "draft_tokens": args.draft_tokens, "summary": summary, "answers": rows}
    path = write_result(args.output or f'answer_decode_{args.dataset}_{slm}', payload, engine.settings)
    print(f"wrote {path}")
    return 0


def _summary(rows: list[dict], mode: str) -> dict:
    runs = [r[mode] for r in rows]
    decode = sum(r["decode_ms"] for r in runs)
    tokens = sum(r["tokens"] for r in runs)
    return {"answers": len(runs), "right": sum(r["right"] for r in runs),
            "decode_ms": round(decode, 1), "decode_tps": round(tokens / (decode / 1000), 1),
            "tokens": tokens, "accepted": sum(r["accepted"] for r in runs),
            "median_decode_ms": round(statistics.median(r["decode_ms"] for r in runs), 1)}


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua", limit=60, limit_help="type-stratified dev questions")
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--slm", help="model folder name (default: the profile's SLM)")
    parser.add_argument("--output", default="", help="results file name, no .json "
                        "(default: answer_decode_DATASET_SLM)")
    parser.add_argument("--method", default="vector", help="retrieval method")
    parser.add_argument("--draft-tokens", type=int, default=3, help="prompt-lookup draft length")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
