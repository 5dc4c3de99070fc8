"""SLM export quality against fp32: perplexity on a fixed text, top-1 agreement, fixed questions.

    python -m benchmarks slm_quality [--models smollm2-135m qwen2.5-coder-0.5b]
        [--variants int8 q8 q4] [--tokens 256]

The reference is ``MODEL-gqa-fp32`` (``edge-rag export slm --keep-fp32``): the GGUF's weights
dequantized to fp32, no further rounding. The fixed text is the opening of the RAP-RAG paper
(../shared/paper/rap-rag.txt), fed token by token through each model's own decode loop, so
both graph kinds (optimum int8, GQA 4/8-bit) are measured the same way. Acceptance (issue 15):
perplexity within 3 % of fp32 at 8 bits and 8 % at 4 bits, at most one changed answer of ten.
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np

from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag.config import models_home

TEXT = ROOT.parent / "shared" / "paper" / "rap-rag.txt"
LIMITS = {"8": 3.0, "4": 8.0}  # by the variant's weight bits: int8, q8, q4, asym-q4, q4e8, q4b64 ...


def fixed_text() -> str:
    """The first paragraphs of the paper, whitespace-normalised."""
    return re.sub(r"\s+", " ", TEXT.read_text(encoding="utf-8"))[:4000]


def token_logprobs(slm, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Log-probability of each next token and the argmax, decoding one token at a time."""
    logits, past, mask = slm._prefill([ids[:1]])
    logprobs, top = [], []
    for token in ids[1:]:
        row = logits[0].astype(np.float64)
        row -= row.max()
        logprobs.append(row[token] - np.log(np.exp(row).sum()))
        top.append(int(np.argmax(row)))
        logits, past, mask = slm._step([token], past, mask)
    return np.array(logprobs), np.array(top)


def evaluate(model: str, variant: str, tokens: int, reference: dict | None) -> dict:
    """Perplexity and agreement of one exported folder (``reference``: the fp32 row)."""
    from edge_rag.models.slm import SLM

    folder = models_home() / "models" / f"{model}-{variant}"
    slm = SLM.from_path(folder, context_tokens=max(tokens + 8, 512))
    ids = slm.tokenizer.encode(fixed_text(), add_special_tokens=False).ids[:tokens]
    logprobs, top = token_logprobs(slm, ids)
    row = {"model": model, "variant": variant, "tokens": len(ids),
           "perplexity": round(float(np.exp(-logprobs.mean())), 3), "_top": top,
           "_answers": _answers(slm)}
    if reference is not None:
        row["ppl_change_pct"] = round(100 * (row["perplexity"] / reference["perplexity"] - 1), 2)
        row["top1_agreement_pct"] = round(100 * float(np.mean(top == reference["_top"])), 1)
        row["same_answers"] = _same_answers(reference["_answers"], row["_answers"])
        row["identical_texts"] = sum(a == b for a, b in zip(reference["_answers"], row["_answers"]))
        bits = re.search(r"(?:int|q)(\d+)", variant)
        limit = LIMITS.get(bits.group(1)) if bits else None
        row["passes"] = bool(limit is None or (abs(row["ppl_change_pct"]) <= limit
                                               and row["same_answers"] >= 9))
    return row


def _answers(slm) -> list[str]:
    from edge_rag_export.slm import CHECK_QUESTIONS

    from edge_rag.models.slm import GenerationConfig

    config = GenerationConfig(max_new_tokens=24)
    return [slm.generate(slm.chat(q), config).text.strip() for q in CHECK_QUESTIONS]


def _same_answers(reference: list[str], answers: list[str]) -> int:
    from edge_rag_export.slm import CHECKS, _same_answer

    return sum(_same_answer(a, b, key) for a, b, (*_, key) in zip(reference, answers, CHECKS))


def main(argv: list[str] | None = None) -> int:
    """Evaluate every requested model and variant against its fp32 graph; print, write JSON."""
    args = _parser().parse_args(argv)
    rows = []
    for model in args.models:
        print(f"measuring {model}-gqa-fp32 ...", file=sys.stderr, flush=True)
        reference = evaluate(model, "gqa-fp32", args.tokens, None)
        rows.append(reference)
        for variant in args.variants:
            if not (models_home() / "models" / f"{model}-{variant}").is_dir():
                print(f"skip {model}-{variant}: not exported", file=sys.stderr)
                continue
            print(f"measuring {model}-{variant} ...", file=sys.stderr, flush=True)
            rows.append(evaluate(model, variant, args.tokens, reference))
    for row in rows:
        row.pop("_top")
        row.pop("_answers")
    headers = ["model", "variant", "perplexity", "ppl_change_pct", "top1_agreement_pct",
               "same_answers", "identical_texts", "passes"]
    print(markdown_table(headers, [[r.get(h, "") for h in headers] for r in rows]))
    print(f"wrote {write_result('slm_quality', {'tokens': args.tokens, 'rows': rows}, None)}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "qwen2.5-coder-0.5b"])
    parser.add_argument("--variants", nargs="+", default=["int8", "q8", "q4"])
    parser.add_argument("--tokens", type=int, default=256)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
