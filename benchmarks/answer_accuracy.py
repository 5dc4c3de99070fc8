"""Answer accuracy with the SLM on LiHua-World or 2WikiMultihopQA dev queries.

    python -m benchmarks.answer_accuracy [--dataset lihua|2wiki] [--slm qwen2.5-coder-0.5b-q4]
                                         [--method vector] [--limit N] [--type Multi] [--no-weights]
                                         [--stage focused|plain] [--as-is]

A query is right when its normalised gold answer (or, on 2Wiki, one of its aliases) is contained
in the normalised answer; a Null query is right when the answer says the information is missing.
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
import hashlib
import json
import re
import string
import time
from pathlib import Path
from typing import Any

from edge_rag import EdgeRAG, Settings
from edge_rag.answer import ONLY_CITATIONS
from edge_rag.prompts import FOCUSED_PROMPT_VERSION, PROMPT_VERSION
from edge_rag.retrieve import RETRIEVAL_VERSION

from .common import RESULTS, markdown_table, peak_rss_mb, percentiles, write_result
from .datasets import DATASETS, Dataset, open_index

MISSING = re.compile(r"insufficient information|not (?:contain|mention|provide|specif|say|include)"
                     r"|no (?:information|mention)|does not (?:say|state)|cannot (?:be )?(?:determin|answer)"
                     r"|unknown|not (?:available|known)")

ANSWER_FIELDS = ("top_k", "context_token_budget", "answer_max_tokens", "slm_context_tokens")
FOCUSED_FIELDS = ("answer_stage", "focus_tokens", "focus_max_new_tokens", "abstain_threshold",
                  "no_threshold", "abstain_terms")
GRAPH_FIELDS = ("graph_entities", "graph_relations", "lr_alpha", "tr_hops",
                "graph_support_weight", "graph_support_spread", "keyword_extractor")
CITATION = re.compile(r"\[\d+(?:,\s*\d+)*\]")


def normalise(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse spaces (the HotpotQA rules)."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def is_correct(answer: str, gold: str, kind: str) -> bool:
    """Normalised containment; Null questions need an explicit 'missing' answer.

    Spaces are ignored in the containment test: LiHua-World writes names both as
    "Yuriko Yamamoto" and "YurikoYamamoto", times as "2 PM" and "2pm".
    """
    if kind == "Null":
        return MISSING.search(answer.lower()) is not None
    return _compact(gold) in _compact(answer)


def exact_match(answer: str, gold: str) -> bool:
    """Normalised equality once citations like "[1]" are dropped."""
    return normalise(CITATION.sub("", answer)) == normalise(gold)


def token_f1(answer: str, gold: str) -> float:
    """Token-overlap F1 of the normalised texts (the HotpotQA answer F1)."""
    predicted, expected = normalise(answer).split(), normalise(gold).split()
    common = sum(min(predicted.count(t), expected.count(t)) for t in set(expected))
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _compact(text: str) -> str:
    return normalise(text).replace(" ", "")


def stratified(queries: list[dict], limit: int | None) -> list[dict]:
    """A fixed, type-stratified subset: every k-th query of each type in id order."""
    if not limit or limit >= len(queries):
        return queries
    chosen = []
    for kind in sorted({q["type"] for q in queries}):
        # Length first: numeric ids in numeric order, hex ids in a fixed order.
        group = sorted((q for q in queries if q["type"] == kind), key=lambda q: (len(q["id"]), q["id"]))
        share = max(1, round(limit * len(group) / len(queries)))
        step = len(group) / share
        chosen += [group[int(i * step)] for i in range(share)]
    return chosen


def main(argv: list[str] | None = None) -> int:
    """Answer the dev queries, print accuracy per type, write JSON."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    queries = stratified(dataset.queries(), args.limit)
    queries = [q for q in queries if args.type in (None, q["type"])]
    method = args.method + ("" if args.use_weights else "-noweights")
    args.slm = args.slm or Settings().slm
    overrides = {"slm": args.slm, "use_weights": args.use_weights, "answer_stage": args.stage}
    settings = Settings.load(None, **overrides)
    cached = sum(q["id"] in _load_cache(cache_path(args.dataset, args.slm, method, settings))
                 for q in queries)
    with open_benchmark_index(dataset, args.as_is, **overrides) as rag:
        rows = answer_all(rag, args.dataset, queries, args.method, args.slm)
    summary = _summary(rows)
    stage = _stage_summary(rows)
    print(json.dumps(stage))
    headers = ["type", "queries", "accuracy", "exact_match", "token_f1", "retrieve_ms", "prefill_ms",
               "decode_ms"]
    print(markdown_table(headers, [[t, *(s[h] for h in headers[1:])] for t, s in summary.items()]))
    # Peak RSS means something only when this run loaded the SLM (not every answer cached).
    payload = {"dataset": args.dataset, "slm": args.slm, "method": method, "limit": args.limit,
               "answer_stage": settings.answer_stage,
               "settings": {f: getattr(settings, f) for f in ANSWER_FIELDS + FOCUSED_FIELDS},
               "summary": summary, "stage": stage, "answers_from_cache": cached,
               "peak_rss_mb": round(peak_rss_mb(), 1), "answers": rows}
    suffix = ("-focused" if settings.answer_stage == "focused" else "") + (
        f"_limit{args.limit}" if args.limit else "") + (f"_{args.type}" if args.type else "")
    tag = "" if args.dataset == "lihua" else f"{args.dataset}-"
    print(f"wrote {write_result(f'answer_accuracy_{tag}{args.slm}_{method}{suffix}', payload)}")
    return 0


def open_benchmark_index(dataset: Dataset, as_is: bool, **overrides: Any) -> EdgeRAG:
    """The data set's index: completed first (``open_index``), or as it is (``as_is``)."""
    if as_is:
        return EdgeRAG.open(dataset.index_for(Settings.load(None, **overrides)), create=False,
                            **overrides)
    return open_index(dataset, **overrides)


def cache_path(dataset: str, slm: str, method: str, settings: Settings | None = None) -> Path:
    """Where the answers of one data set, SLM and method (``-noweights`` suffix included) live.

    The name carries a fingerprint of the settings that shape the prompt and the answer (for graph
    methods also their ranking and ``RETRIEVAL_VERSION``), so that another profile or a changed
    ranking never reuses stale answers.
    """
    tag = "" if dataset == "lihua" else f"{dataset}-"
    settings = settings or Settings()
    fields = ANSWER_FIELDS[2:] if method.startswith("none") else ANSWER_FIELDS
    shape: list = [getattr(settings, f) for f in fields]
    if method.split("-")[0] in ("local", "dual", "topology", "ppr"):
        shape += [RETRIEVAL_VERSION, *(getattr(settings, f) for f in GRAPH_FIELDS)]
    if settings.answer_stage != "plain":
        # The plain stage keeps the fingerprint it always had, so its old answers stay valid.
        shape += [FOCUSED_PROMPT_VERSION, *(getattr(settings, f) for f in FOCUSED_FIELDS)]
    method += "-s" + hashlib.sha256(repr(shape).encode()).hexdigest()[:6]
    return RESULTS / "cache" / f"answers-{tag}{slm}-{method}-p{PROMPT_VERSION}.jsonl"


def answer_all(rag: EdgeRAG, dataset: str, queries: list[dict], method: str, slm: str) -> list[dict]:
    """Answer (or take from the cache) and judge every query; the open index's settings apply."""
    name = method + ("" if rag.settings.use_weights else "-noweights")
    path = cache_path(dataset, slm, name, rag.settings)
    cache = _load_cache(path)
    return [_answer(rag, q, method, cache, path) for q in queries]


def _answer(rag: EdgeRAG, query: dict, method: str, cache: dict, cache_path: Path) -> dict:
    if query["id"] not in cache:
        answer = rag.ask(query["question"], method=method)
        retrieve = sum(answer.retrieval.timings_ms.values()) if answer.retrieval else 0.0
        cache[query["id"]] = {"id": query["id"], "answer": answer.text,
                              "retrieve_ms": round(retrieve, 1),
                              "prefill_ms": round(answer.timings.get("prefill", 0.0), 1),
                              "decode_ms": round(answer.timings.get("decode", 0.0), 1),
                              "prompt_tokens": answer.timings.get("prompt_tokens"),
                              "cached_tokens": answer.timings.get("cached_tokens"),
                              **{k: answer.details.get(k)
                                 for k in ("form", "abstain", "unsupported", "p_abstain", "p_no")}}
        with open(cache_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(cache[query["id"]]) + "\n")
        print(f"[{time.strftime('%H:%M:%S')}] {query['id']} {query['type']}: {answer.text[:80]!r}",
              flush=True)
    row = dict(cache[query["id"]])
    row.update(type=query["type"], gold=query["answer"], **judge(query, row["answer"]))
    row["f1"] = round(row["f1"], 4)
    return row


def judge(query: dict, answer: str) -> dict:
    """``correct`` (containment), ``exact`` and ``f1`` of an answer against the gold or its aliases."""
    golds = query.get("aliases", [query["answer"]])
    return {"correct": any(is_correct(answer, g, query["type"]) for g in golds),
            "exact": any(exact_match(answer, g) for g in golds),
            "f1": max(token_f1(answer, g) for g in golds)}


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
            "forms": {f: sum(r.get("form") == f for r in rows)
                      for f in sorted({str(r.get("form")) for r in rows})}}


QUOTE_MARK = ' — "'


def _load_cache(path: Path) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        return {}
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines()) if row}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="lihua", choices=sorted(DATASETS))
    parser.add_argument("--slm", default=None,
                        help=f"exported SLM folder name (default: the profile's, {Settings().slm})")
    parser.add_argument("--method", default="vector", help="retrieval method")
    parser.add_argument("--limit", type=int, default=None, help="type-stratified subset size")
    parser.add_argument("--type", default=None, help="only queries of this type (Single, Multi, Null)")
    parser.add_argument("--stage", default=None, choices=("focused", "plain"),
                        help="answer stage (default: the profile's answer_stage)")
    parser.add_argument("--as-is", action="store_true",
                        help="use the benchmark index as it is (index nothing, embed nothing)")
    parser.add_argument("--no-weights", dest="use_weights", action="store_false",
                        help="the -Weights ablation (use_weights=false)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
