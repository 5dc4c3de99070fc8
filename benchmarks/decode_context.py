"""Decode speed at two context lengths, measured step by step in alternation in one process.

    python -m benchmarks.decode_context [--models smollm2-135m-q4e8 qwen2.5-coder-0.5b-q4]
        [--prompt-tokens 300 1000] [--steps 200]

``benchmarks.slm_speed`` decodes each prompt length in its own child process, one after the
other: on a shared machine its 1,000 / 300 decode ratio moved between 0.72 and 0.88 across three
repeats of one run. Here one GQA session serves one cache per prompt length (each prefilled with
the chat prompt ``slm_speed`` uses, cut to that many tokens), and the decode steps alternate
between the caches, one greedy token each, so that whatever the machine does meanwhile falls on
both lengths alike. Reported per model and length: the median and mean step time and the ratio
of each length's median decode rate to the shortest's (``decode_vs_shortest``, the issue's
"decode at 1,000 tokens ≥ 0.8× decode at 300"). Writes ``decode_context.json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from edge_rag.config import models_home

from .common import markdown_table, write_result
from .slm_speed import summary_prompt


def measure(folder: str, prompt_tokens: list[int], steps: int) -> list[dict]:
    """Alternate decode steps between one cache per prompt length; step times per length."""
    from edge_rag.models.decoder import GqaDecoder
    from edge_rag.models.slm import SLM

    slm = SLM.from_path(models_home() / "models" / folder)
    if slm._gqa is None:
        raise SystemExit(f"{folder} is not a GQA graph (needs its in-place cache)")
    manifest = slm.folder.manifest
    prompts = [slm.tokenizer.encode(summary_prompt(slm, n), add_special_tokens=False).ids
               for n in prompt_tokens]
    window = max(map(len, prompts)) + steps + 1
    decoders, tokens = [], []
    for ids in prompts:
        decoder = GqaDecoder(slm.session, manifest, window)
        tokens.append(int(np.argmax(decoder.prefill([ids], slm.prefill_chunk)[0])))
        decoders.append((len(ids), decoder))
    times: list[list[float]] = [[] for _ in decoders]
    for _ in range(steps):
        for i, (_, decoder) in enumerate(decoders):
            start = time.perf_counter()
            logits = decoder.step([tokens[i]])
            times[i].append(time.perf_counter() - start)
            tokens[i] = int(np.argmax(logits[0]))
    rows = [{"model": folder, "prompt_tokens": n, "steps": steps,
             "median_step_ms": round(1000 * statistics.median(t), 3),
             "mean_step_ms": round(1000 * statistics.fmean(t), 3),
             "decode_tps": round(1 / statistics.median(t), 1)}
            for (n, _), t in zip(decoders, times)]
    for row in rows:
        row["decode_vs_shortest"] = round(row["decode_tps"] / rows[0]["decode_tps"], 3)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure each model folder, print the table, write JSON."""
    args = _parser().parse_args(argv)
    rows = [row for folder in args.models
            for row in measure(folder, sorted(args.prompt_tokens), args.steps)]
    headers = ["model", "prompt_tokens", "steps", "median_step_ms", "mean_step_ms", "decode_tps",
               "decode_vs_shortest"]
    print(markdown_table(headers, [[r[h] for h in headers] for r in rows]))
    print(f"wrote {write_result(args.output, {'rows': rows, 'steps': args.steps})}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-q4e8", "qwen2.5-coder-0.5b-q4"],
                        help="model folders under EDGE_RAG_HOME/models (GQA graphs)")
    parser.add_argument("--prompt-tokens", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--steps", type=int, default=200, help="decode steps per length")
    parser.add_argument("--output", default="decode_context", help="results file name, no .json")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
