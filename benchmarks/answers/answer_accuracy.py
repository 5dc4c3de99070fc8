"""Answer accuracy with the SLM on LiHua-World or 2WikiMultihopQA dev queries.

    python -m benchmarks answer_accuracy [--dataset lihua|2wiki] [--slm qwen2.5-coder-0.5b-q4]
                                         [--method vector] [--limit N] [--type Multi] [--no-weights]
                                         [--stage focused|plain] [--as-is]

A query is right when its gold answer (or, on 2Wiki, one of its aliases) is contained in the
answer (at word boundaries, dates and times as values: benchmarks/core/containment.py); a Null
query is right when the answer says the information is missing. Beside containment, the
LLM-judged accuracy (all, by type, by half) is looked up from the committed verdicts
(benchmarks/results/verdicts/, keyed by question id and answer text), with the number of answers
not judged yet and containment's agreement with the LLM; unjudged answers are written as judge
input to benchmarks/results/verdicts/pending/ (and ``--judge-dir``), folded back by
``python -m benchmarks verdicts import``.
Token F1 and exact match (after dropping citations like "[1]") are the HotpotQA measures. Answers
are cached in benchmarks/results/cache/ keyed by query, method, model and prompt version, so
reruns are cheap. ``--stage`` picks the answer stage (default: the profile's ``answer_stage``,
``focused``); abstention precision and recall (Null vs answerable queries), the median prompt
and prefill and answers that are only citations are reported too. ``--slm`` defaults to the
profile's SLM; ``--as-is`` opens the benchmark index as it is (indexing nothing: the 2Wiki index
without its relation vectors serves ``vector`` retrieval).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.core.answers import (
    ANSWER_FIELDS,
    FOCUSED_FIELDS,
    MISSING,
    answer_all,
    cache_path,
    is_correct,
    load_cache,
)
from benchmarks.core.datasets import DATASETS, half, open_benchmark_index, stratified
from benchmarks.core.measure import peak_rss_mb, percentiles
from benchmarks.core.options import options
from benchmarks.core.results import markdown_table, write_result
from benchmarks.core.verdicts import judge_input, llm_summary, write_pending
from edge_rag import Settings
from edge_rag.answer import ONLY_CITATIONS


def main(argv: list[str] | None = None) -> int:
    """Answer the dev queries, print accuracy per type, write JSON."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    queries = stratified(dataset.queries(), args.limit)
    queries = [q for q in queries if args.type in (None, q["type"])]
    method = args.method + ("" if args.use_weights else "-noweights")
    args.slm = args.slm or Settings().slm
    overrides = {"slm": args.slm, "use_weights": args.use_weights, "answer_stage": args.stage,
                 **({"answer_rules_off": tuple(args.rules_off.split(","))} if args.rules_off else {})}
    settings = Settings.load(None, **overrides)
    cached = sum(q["id"] in load_cache(cache_path(args.dataset, args.slm, method, settings))
                 for q in queries)
    with open_benchmark_index(dataset, args.as_is, **overrides) as rag:
        rows = answer_all(rag, args.dataset, queries, args.method, args.slm)
    summary = _summary(rows)
    stage = _stage_summary(rows)
    llm = llm_summary(rows, args.dataset)
    print(json.dumps(stage))
    print("LLM-judged (benchmarks/results/verdicts): " + json.dumps(llm))
    for kind, row in summary.items():
        row["llm_judged"] = llm["all"] if kind == "All" else llm["types"].get(kind)
    headers = ["type", "queries", "accuracy", "llm_judged", "exact_match", "token_f1", "retrieve_ms",
               "prefill_ms", "decode_ms"]
    print(markdown_table(headers, [[t, *(s[h] for h in headers[1:])] for t, s in summary.items()]))
    # Peak RSS means something only when this run loaded the SLM (not every answer cached).
    payload = {"dataset": args.dataset, "slm": args.slm, "method": method, "limit": args.limit,
               "answer_stage": settings.answer_stage,
               "settings": {f: getattr(settings, f) for f in ANSWER_FIELDS + FOCUSED_FIELDS},
               "summary": summary, "stage": stage, "llm_judged": llm, "answers_from_cache": cached,
               "peak_rss_mb": round(peak_rss_mb(), 1), "answers": rows}
    suffix = ("-focused" if settings.answer_stage == "focused" else "") + (
        f"_off-{args.rules_off.replace(',', '-')}" if args.rules_off else "") + (
        f"_limit{args.limit}" if args.limit else "") + (f"_{args.type}" if args.type else "")
    tag = "" if args.dataset == "lihua" else f"{args.dataset}-"
    name = f"answer_accuracy_{tag}{args.slm}_{method}{suffix}"
    print(f"wrote {write_result(name, payload, rag.settings)}")
    unjudged = judge_input([r for r in rows if r["llm"] is None], {q["id"]: q for q in queries})
    for path in write_pending(name.replace("answer_accuracy_", f"{args.dataset}-" if not tag else ""),
                              unjudged, args.judge_dir):
        print(f"{len(unjudged)} answers to judge: {path}")
    return 0


def _summary(rows: list[dict]) -> dict:
    out = {}
    for kind in ["Single", "Multi", "Null", "All"]:
        group = [r for r in rows if kind == "All" or r["type"] == kind]
        if group:
            out[kind] = {"queries": len(group),
                         "accuracy": round(sum(r["correct"] for r in group) / len(group), 4),
                         "exact_match": round(sum(r["exact"] for r in group) / len(group), 4),
                         "token_f1": round(sum(r["f1"] for r in group) / len(group), 4),
                         **{k: round(sum(r[k] for r in group) / len(group), 1)
                            for k in ("retrieve_ms", "prefill_ms", "decode_ms")}}
    return out


def _stage_summary(rows: list[dict]) -> dict:
    """Abstention precision/recall (Null vs answerable), prompt and prefill medians, citation-only
    answers."""
    abstained = [r for r in rows if MISSING.search(r["answer"].lower())]
    nulls = [r for r in rows if r["type"] == "Null"]
    answerable = len(rows) - len(nulls)
    right = sum(r["type"] == "Null" for r in abstained)
    prompts = [r["prompt_tokens"] for r in rows if r.get("prompt_tokens") is not None]
    return {"abstained": len(abstained),
            "abstention_precision": round(right / len(abstained), 4) if abstained else None,
            "abstention_recall": round(right / len(nulls), 4) if nulls else None,
            "false_abstention": round((len(abstained) - right) / answerable, 4) if answerable else None,
            "only_citations": sum(bool(ONLY_CITATIONS.match(r["answer"])) for r in rows),
            # Right only thanks to the source words quoted after a short answer (" — \"...\"").
            "right_by_quote": sum(r["correct"] and QUOTE_MARK in r["answer"] and not is_correct(
                r["answer"].split(QUOTE_MARK)[0], r["gold"], r["type"]) for r in rows),
            "prompt_tokens": percentiles(prompts, 0) if prompts else None,
            "prefill_ms": percentiles([r["prefill_ms"] for r in rows]),
            # Bridge questions answered link by link (the hops rule), and accuracy on each half of dev.
            "asked_in_hops": sum(bool(r.get("hops")) for r in rows),
            "halves": {h: round(sum(r["correct"] for r in part) / len(part), 4)
                       for h in "AB" if (part := [r for r in rows if half(r["id"]) == h])},
            **_support(rows, abstained),
            "forms": {f: sum(r.get("form") == f for r in rows)
                      for f in sorted({str(r.get("form")) for r in rows})}}


QUOTE_MARK = ' — "'


def _support(rows: list[dict], abstained: list[dict]) -> dict:
    """The claim check (edge_rag/answer/support.py): the share of answered questions whose
    answer, as generated, names nothing its cited sources and the question do not hold, and as
    shown (claims re-cited or cut; answers that would state one withdrawn)."""
    answered = [r for r in rows if r not in abstained]
    checked = [r for r in rows if r.get("claims_unsupported") is not None]
    if not checked:
        return {"fully_supported": None}
    withdrawn = sum(r.get("abstain") == "claims not in sources" for r in rows)
    return {"fully_supported_as_generated": round(sum(not r["claims_unsupported"] for r in answered)
                                                  / len(answered), 4) if answered else None,
            "fully_supported": 1.0 if answered else None,
            "claims_recited": sum(bool(r.get("claims_recited")) for r in rows),
            "claims_cut": sum(bool(r.get("claims_cut")) for r in rows),
            "abstained_on_claims": withdrawn}


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua", limit=None, limit_help="type-stratified subset size", as_is=True)
    parser = argparse.ArgumentParser(parents=[shared], description=__doc__.split("\n")[0])
    parser.add_argument("--slm", default=None,
                        help=f"exported SLM folder name (default: the profile's, {Settings().slm})")
    parser.add_argument("--method", default="vector", help="retrieval method")
    parser.add_argument("--type", default=None, help="only queries of this type (Single, Multi, Null)")
    parser.add_argument("--stage", default=None, choices=("focused", "plain"),
                        help="answer stage (default: the profile's answer_stage)")
    parser.add_argument("--rules-off", default="",
                        help="answer rules switched off, comma-separated (edge_rag.config.ANSWER_RULES)")
    parser.add_argument("--no-weights", dest="use_weights", action="store_false",
                        help="the -Weights ablation (use_weights=false)")
    parser.add_argument("--judge-dir", type=Path, default=None,
                        help="also write the unjudged answers' judge input here (the pending list "
                             "always goes to benchmarks/results/verdicts/pending/)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
