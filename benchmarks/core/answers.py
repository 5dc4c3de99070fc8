"""Judging answers and the answer cache: containment, exact match and token F1 against the gold
(or an alias), and the cached answers of a data set, SLM, method and settings fingerprint
(``benchmarks/results/cache/``), which the answer benchmarks share."""

from __future__ import annotations

import hashlib
import json
import re
import string
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.core.containment import MISSING as MISSING
from benchmarks.core.containment import contains
from benchmarks.core.paths import RESULTS
from edge_rag import EdgeRAG, Settings
from edge_rag.config import models_home
from edge_rag.prompts import FOCUSED_PROMPT_VERSION, PROMPT_VERSION
from edge_rag.questions import comparison, first_hop
from edge_rag.retrieve import RETRIEVAL_VERSION

ANSWER_FIELDS = ("top_k", "context_token_budget", "answer_max_tokens", "slm_context_tokens")
FOCUSED_FIELDS = ("answer_stage", "focus_tokens", "focus_max_new_tokens", "abstain_threshold",
                  "no_threshold", "abstain_terms", "answer_rules_off")
GRAPH_FIELDS = ("graph_entities", "graph_relations", "lr_alpha", "tr_hops",
                "graph_support_weight", "graph_support_spread", "keyword_extractor")
CITATION = re.compile(r"\[\d+(?:,\s*\d+)*\]")


def normalise(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse spaces (the HotpotQA rules)."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def is_correct(answer: str, gold: str, kind: str) -> bool:
    """Containment at word boundaries, dates and times as values (``containment.contains``);
    Null questions need an explicit 'missing' answer."""
    return contains(answer, gold, kind)


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


def cache_path(dataset: str, slm: str, method: str, settings: Settings | None = None) -> Path:
    """Where the answers of one data set, SLM and method (``-noweights`` suffix included) live.

    The name carries a fingerprint of the settings that shape the prompt and the answer (for graph
    methods also their ranking and ``RETRIEVAL_VERSION``) and of the SLM's exported graph, so
    that another profile, a changed ranking or a re-exported model never reuses stale answers.
    """
    tag = "" if dataset == "lihua" else f"{dataset}-"
    settings = settings or Settings()
    fields = ANSWER_FIELDS[2:] if method.startswith("none") else ANSWER_FIELDS
    shape: list = [getattr(settings, f) for f in fields] + _graph_stamp(slm)
    if method.split("-")[0] in ("local", "dual", "topology", "ppr", "auto"):  # auto plans them
        shape += [RETRIEVAL_VERSION, *(getattr(settings, f) for f in GRAPH_FIELDS)]
    if settings.answer_stage != "plain":
        # The plain stage keeps the fingerprint it always had, so its old answers stay valid.
        shape += [FOCUSED_PROMPT_VERSION, *(getattr(settings, f) for f in FOCUSED_FIELDS)]
    method += "-s" + hashlib.sha256(repr(shape).encode()).hexdigest()[:6]
    return RESULTS / "cache" / f"answers-{tag}{slm}-{method}-p{PROMPT_VERSION}.jsonl"


def _graph_stamp(slm: str) -> list[str]:
    """The sha256 of the SLM folder's graph (``model.onnx``, as its manifest records it)."""
    try:
        manifest = json.loads((models_home() / "models" / slm / "manifest.json").read_text())
    except (OSError, ValueError):
        return []
    return [manifest.get("sha256", "")]


def answer_all(rag: EdgeRAG, dataset: str, queries: list[dict], method: str, slm: str) -> list[dict]:
    """Answer (or take from the cache) and judge every query; the open index's settings apply."""
    name = method + ("" if rag.settings.use_weights else "-noweights")
    path = cache_path(dataset, slm, name, rag.settings)
    cache = load_cache(path)
    return [_answer(rag, q, method, cache, path) for q in queries]


def rule_questions(question: str, rules_off: Sequence[str]) -> list[str]:
    """What ``ask``'s rules would ask first about ``question``, by their parse alone: the
    ``compare`` rule's when-questions, else the ``hops`` rule's first link, else nothing. A cached
    answer keeps it (``asks``), so that a changed parse answers the question again."""
    if "compare" not in rules_off and (compared := comparison(question)) is not None:
        return list(compared.questions)
    if "hops" not in rules_off and (hop := first_hop(question)) is not None:
        return [hop.inner]
    return []


def _stale(row: dict | None, asks: list[str]) -> bool:
    # A row kept before ``asks`` was recorded is stale when the rules would touch its question
    # and it records no question asked first.
    if row is None:
        return True
    return row["asks"] != asks if "asks" in row else bool(asks) and "hops" not in row


def _answer(rag: EdgeRAG, query: dict, method: str, cache: dict, cache_path: Path) -> dict:
    asks = rule_questions(query["question"], rag.settings.answer_rules_off)
    if _stale(cache.get(query["id"]), asks):
        answer = rag.ask(query["question"], method=method)
        retrieve = sum(answer.retrieval.timings_ms.values()) if answer.retrieval else 0.0
        cache[query["id"]] = {"id": query["id"], "answer": answer.text,
                              "retrieve_ms": round(retrieve, 1),
                              "prefill_ms": round(answer.timings.get("prefill", 0.0), 1),
                              "decode_ms": round(answer.timings.get("decode", 0.0), 1),
                              "prompt_tokens": answer.timings.get("prompt_tokens"),
                              "cached_tokens": answer.timings.get("cached_tokens"),
                              **{k: answer.details.get(k)
                                 for k in ("form", "abstain", "unsupported", "p_abstain", "p_no",
                                           "claims_unsupported", "claims_recited", "claims_cut")},
                              **({"hops": answer.hops} if answer.hops else {}), "asks": asks}
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


def load_cache(path: Path) -> dict:
    """The cached answers of one file by query id (the folder is created, a missing file is empty)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        return {}
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines()) if row}
