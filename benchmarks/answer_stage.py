"""The old (plain) and new (focused) answer stage side by side in one process: prompt, prefill, accuracy.

    python -m benchmarks.answer_stage [--dataset lihua|2wiki] [--limit 40] [--method vector] [--block 10]
                                      [--slm qwen2.5-coder-0.5b-q4] [--as-is]

Each question is retrieved once and answered by both stages with the same loaded SLM. The stages
take turns in blocks of ``--block`` questions (plain, focused, plain, ...): the SLM's prefix cache
holds the last prompt, so within a block each stage reuses its own fixed system prompt as it would
in a session of its own, and the machine's load drifts over both alike. Prefill ratios, not
absolute times, are the result.
"""

from __future__ import annotations

import argparse
import statistics
import time

from edge_rag import Settings
from edge_rag.answer import Answerer

from .common import judge, markdown_table, options, percentiles, stratified, write_result
from .datasets import DATASETS, open_benchmark_index

STAGES = ("plain", "focused")


def main(argv: list[str] | None = None) -> int:
    """Answer a stratified subset with both stages, print medians and the ratio, write JSON."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    queries = stratified(dataset.queries(), args.limit)
    args.slm = args.slm or Settings().slm
    rows = []
    with open_benchmark_index(dataset, args.as_is, slm=args.slm) as rag:
        settings = rag.settings
        stages = {"plain": Answerer(rag.slm, settings.context_token_budget, settings.answer_max_tokens),
                  "focused": rag.answerer}
        retrievals = [rag.retrieve(q["question"], method=args.method) for q in queries]
        for start in range(0, len(queries), args.block):
            for stage in STAGES:
                for query, retrieval in list(zip(queries, retrievals))[start:start + args.block]:
                    rows.append(_row(stage, query, stages[stage].answer(query["question"], retrieval)))
    summary = {stage: _summary([r for r in rows if r["stage"] == stage]) for stage in STAGES}
    ratio = summary["focused"]["prefill_ms"]["p50"] / max(summary["plain"]["prefill_ms"]["p50"], 1e-9)
    headers = ["stage", "queries", "accuracy", "prompt_p50", "cached_p50", "prefill_p50", "decode_p50"]
    print(markdown_table(headers, [[s, v["queries"], v["accuracy"], v["prompt_tokens"]["p50"],
                                    v["cached_tokens"]["p50"], v["prefill_ms"]["p50"],
                                    v["decode_ms"]["p50"]] for s, v in summary.items()]))
    print(f"median prefill focused / plain: {ratio:.3f}")
    payload = {"dataset": args.dataset, "slm": args.slm, "method": args.method, "limit": args.limit,
               "block": args.block, "summary": summary, "prefill_ratio_p50": round(ratio, 4),
               "answers": rows}
    print(f"wrote {write_result(f'answer_stage_{args.dataset}_{args.method}_{args.limit}', payload)}")
    return 0


def _row(stage: str, query: dict, answer) -> dict:
    print(f"[{time.strftime('%H:%M:%S')}] {stage} {query['id']}: {answer.text[:70]!r}", flush=True)
    timings = answer.timings
    return {"stage": stage, "id": query["id"], "type": query["type"], "answer": answer.text,
            "gold": query["answer"], **judge(query, answer.text),
            "prompt_tokens": timings.get("prompt_tokens", 0),
            "cached_tokens": timings.get("cached_tokens", 0),
            "prefill_ms": round(timings.get("prefill", 0.0), 1),
            "decode_ms": round(timings.get("decode", 0.0), 1),
            "focus_ms": round(timings.get("focus", 0.0), 1)}


def _summary(rows: list[dict]) -> dict:
    return {"queries": len(rows), "accuracy": round(sum(r["correct"] for r in rows) / len(rows), 4),
            "token_f1": round(statistics.mean(r["f1"] for r in rows), 4),
            **{k: percentiles([r[k] for r in rows]) for k in
               ("prompt_tokens", "cached_tokens", "prefill_ms", "decode_ms", "focus_ms")}}


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua", as_is=True, limit=40, limit_help="type-stratified subset size")
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n")[0])
    parser.add_argument("--slm", default=None,
                        help=f"exported SLM folder name (default: the profile's, {Settings().slm})")
    parser.add_argument("--method", default="vector", help="retrieval method")
    parser.add_argument("--block", type=int, default=10, help="questions per stage turn")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
