"""The adaptive planner on dev data (paper Table 3 shape): auto against every fixed method.

    python -m benchmarks planner_eval [--limits lihua=60,2wiki=40] [--slm NAME]

Needs ``export/planner_labels.jsonl`` (``python -m benchmarks planner_labels``) and the answers of
every fixed method on the type-stratified subsets (``python -m benchmarks answer_accuracy
--dataset D --method M --limit N``; cached, so this script only reads them).

- **Planner accuracy**: 5-fold cross-validated labels of the head (each query planned by a head
  that never saw it), per data set, with the confusion matrix; the rule planner beside it.
- **Table 3 shape**: on the LiHua-World and 2WikiMultihopQA subsets, answer accuracy and mean
  latency (retrieval + prefill + decode) of none/vector/local/dual/topology and of auto, where
  auto takes the cross-validated plan (below ``planner_threshold`` → ``planner_fallback``) and
  the cached answer of the method it chose — the pipeline after planning is the same — plus the
  planner's own time (question embedding, cheap features, head) measured on the open index.
- **auto** is what ``--method auto`` does with the default settings: the ``names`` planner (ppr
  when the question names something, else titles where its nearest chunk stands out by
  ``planner_margin``, else ppr; that threshold is cross-validated by ``planner_margin``,
  which also measures the opt-in ``margin`` planner), its recall from the same labelled rows;
  the head's cross-validated choice is the ``head`` column.
- **Measured latency**: read from ``auto_latency.json`` (``python -m benchmarks auto_latency``):
  vector, ppr and auto on every question in rounds of random order, per-question
  medians, their mean, and auto − ppr paired with its standard error.
- **Evidence recall** of auto vs fixed methods on *all* labelled dev queries (retrieval judge),
  and their **mean retrieval latency**: each method costs its p50 in the data set's
  ``retrieval_<dataset>.json`` (a method missing there comes from a ``retrieval_<dataset>_*.json``
  run, scaled by the two runs' vector p50s: the machine's load differs between runs); auto costs
  the chosen method plus what planning adds to it on the data set's own index (cheap features
  and head; the question's embedding is computed once and reused by the chosen method).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np
from edge_rag_export.planner import cross_validate, feature_matrix, read_labels, targets

from benchmarks.core.answers import cache_path, judge, load_cache
from benchmarks.core.datasets import DATASETS, stratified
from benchmarks.core.measure import percentiles
from benchmarks.core.paths import RESULTS
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.models import Embedder, ModelFolder
from edge_rag.plan import LABELS, METHOD_OF_LABEL, NamesPlanner, QuestionProbes, head_label
from edge_rag.plan.rules import rule_label
from edge_rag.questions import query_terms


def main(argv: list[str] | None = None) -> int:
    """Cross-validate the planner, compare auto with fixed methods, print and write results."""
    args = _parser().parse_args(argv)
    settings = Settings()
    rows = read_labels()
    embedder = Embedder(ModelFolder.open(settings.home / "models" / settings.embedder))
    features = feature_matrix(rows, embedder)
    truth, soft = np.asarray([LABELS.index(r["label"]) for r in rows]), targets(rows)
    probs = cross_validate(features, soft)
    plans = [_choose(p, settings) for p in probs]
    auto = _default_plans(rows) if settings.planner in ("margin", "names") else plans
    picked = np.asarray([LABELS.index(label) for label, _ in plans])
    names = list(dict.fromkeys(r["dataset"] for r in rows))
    rules = [rule_label(np.asarray(r["cheap"], dtype=np.float32)) for r in rows]
    result = {"queries": len(rows), "labels": dict(Counter(r["label"] for r in rows)),
              "planner_accuracy": _accuracy(rows, truth, picked, rules, soft),
              "confusion": _confusion(truth, picked),
              "recall": _recall_table(rows, auto, plans),
              "auto_methods": {name: dict(Counter(a[1] for a, r in zip(auto, rows) if r["dataset"] == name))
                               for name in names},
              "measured_latency_ms": _measured_latency(),
              "retrieval_latency_ms": _latency_table(rows, auto),
              "table3": {name: _table3(name, rows, auto, limit, args.slm)
                         for name, limit in _limits(args.limits).items()},
              "planner_ms": _planner_latency(embedder, rows[:50])}
    _print(result)
    write_result("planner_eval", result, Settings())
    return 0


def _choose(probabilities: np.ndarray, settings: Settings) -> tuple[str, str]:
    label = head_label(dict(zip(LABELS, (float(p) for p in probabilities))))
    if probabilities[LABELS.index(label)] < settings.planner_threshold:
        return label, settings.planner_fallback
    return label, METHOD_OF_LABEL[label]


def _accuracy(rows: list[dict], truth: np.ndarray, cv: np.ndarray, rules: list[str],
              soft: np.ndarray) -> dict:
    out = {}
    works = soft > 0
    for name in [*dict.fromkeys(r["dataset"] for r in rows), "all"]:
        pick = [i for i, r in enumerate(rows) if name in ("all", r["dataset"])]
        out[name] = {"queries": len(pick), "head_cv": round(float((cv[pick] == truth[pick]).mean()), 3),
                     "head_cv_works": round(float(np.mean([works[i, cv[i]] for i in pick])), 3),
                     "rules": round(float(np.mean([rules[i] == rows[i]["label"] for i in pick])), 3),
                     "rules_works": round(float(np.mean([works[i, LABELS.index(rules[i])]
                                                         for i in pick])), 3)}
    return out


def _confusion(truth: np.ndarray, predicted: np.ndarray) -> dict:
    return {LABELS[t]: {LABELS[p]: int(((truth == t) & (predicted == p)).sum()) for p in range(len(LABELS))}
            for t in range(len(LABELS))}


def _default_plans(rows: list[dict]) -> list[tuple[str, str]]:
    """``auto``'s choice per row with the default planner, on the row's index where it is built
    here (else the ``names`` planner by terms only)."""
    planners, opened = {}, []
    for name in dict.fromkeys(r["dataset"] for r in rows):
        index = DATASETS[name].index
        if index.is_dir():
            opened.append(EdgeRAG.open(index, create=False, progress=False))
            planners[name] = lambda q, rag=opened[-1]: rag.plan(q).label
        else:
            by_terms = NamesPlanner(QuestionProbes(named=lambda t: bool(query_terms(t)[0])),
                                    Settings().planner_margin)
            planners[name] = lambda q, planner=by_terms: planner.choose(q)[0]
    try:
        labels = [planners[r["dataset"]](r["question"]) for r in rows]
    finally:
        for rag in opened:
            rag.close()
    # G (``titles``) has no labelled recall: counted as F's (``ppr``), one question apart on
    # 2WikiMultihopQA dev (``plan`` docstring).
    return [("F", "ppr") if label == "G" else (label, METHOD_OF_LABEL[label]) for label in labels]


def _recall_table(rows: list[dict], auto: list[tuple[str, str]], head: list[tuple[str, str]]) -> dict:
    out = {}
    label_of = {m: k for k, m in METHOD_OF_LABEL.items()}
    for name in dict.fromkeys(r["dataset"] for r in rows):
        pick = [i for i, r in enumerate(rows) if r["dataset"] == name]
        fixed = {m: float(np.mean([rows[i]["recall"][k] for i in pick]))
                 for k, m in METHOD_OF_LABEL.items() if k in rows[pick[0]]["recall"]}
        chosen = {col: float(np.mean([rows[i]["recall"].get(label_of[plans[i][1]], 0.0) for i in pick]))
                  for col, plans in (("head", head), ("auto", auto))}
        out[name] = {m: round(v, 3) for m, v in {**fixed, **chosen}.items()}
    return out


def _measured_latency() -> dict:
    """Mean retrieval latency of vector, ppr and auto as the ``auto_latency`` benchmark measured it
    (per question, interleaved rounds, under ``heavy --timing``); empty until that has run."""
    path = RESULTS / "auto_latency.json"
    return json.loads(path.read_text())["datasets"] if path.is_file() else {}


def _latency_table(rows: list[dict], plans: list[tuple[str, str]]) -> dict:
    out: dict = {"plan": {}}
    for name in dict.fromkeys(r["dataset"] for r in rows):
        cost = method_costs(name)
        pick = [i for i, r in enumerate(rows) if r["dataset"] == name]
        if not cost or any(plans[i][1] not in cost for i in pick) or not DATASETS[name].index.is_dir():
            continue
        plan_ms = _plan_ms(name, [rows[i] for i in pick][:50])
        auto = float(np.mean([cost[plans[i][1]] for i in pick])) + plan_ms
        out["plan"][name] = round(plan_ms, 1)
        out[name] = {**{m: round(v, 1) for m, v in cost.items()}, "auto": round(auto, 1)}
    return out


def method_costs(dataset: str) -> dict[str, float]:
    """p50 retrieval latency per method from the retrieval benchmark's results (see module)."""
    main = RESULTS / f"retrieval_{dataset}.json"
    if not main.is_file():
        return {}
    methods = json.loads(main.read_text())["methods"]
    cost = {m: r["latency_ms"]["p50"] for m, r in methods.items() if " " not in m}
    for extra in sorted(RESULTS.glob(f"retrieval_{dataset}_*.json")):
        other = json.loads(extra.read_text())["methods"]
        scale = cost.get("vector", 0.0) / other.get("vector", {}).get("latency_ms", {}).get("p50", 0.0) \
            if "vector" in other else 0.0
        cost.update({m: r["latency_ms"]["p50"] * scale for m, r in other.items()
                     if " " not in m and m not in cost and scale})
    return {"none": 0.0, **cost}


def _limits(text: str) -> dict[str, int]:
    return {name: int(n) for name, n in (part.split("=") for part in text.split(","))}


def _table3(name: str, rows: list[dict], plans: list[tuple[str, str]], limit: int, slm: str) -> dict:
    subset = stratified(DATASETS[name].queries(), limit)
    answers = {m: load_cache(cache_path(name, slm, m)) for m in METHOD_OF_LABEL.values()}
    plan_of = {r["id"]: plans[i] for i, r in enumerate(rows) if r["dataset"] == name}
    judged = {m: [_judge(q, answers[m].get(q["id"])) for q in subset] for m in answers}
    _warn_missing(name, limit, judged)
    table = {m: _summarise(v) for m, v in judged.items() if all(x is not None for x in v)}
    auto = [_judge(q, answers[plan_of[q["id"]][1]].get(q["id"])) for q in subset if q["id"] in plan_of]
    if auto and all(x is not None for x in auto):
        plan_ms = _plan_ms(name, subset)
        table["auto"] = _summarise([(ok, ms + plan_ms) for ok, ms in auto])
        table["auto"]["plan_ms"] = round(plan_ms, 1)
    table["auto_methods"] = dict(Counter(plan_of[q["id"]][1] for q in subset if q["id"] in plan_of))
    if len(table) > len(METHOD_OF_LABEL):
        table["judges"] = _judges(name, rows, subset, judged)
    return table


def _warn_missing(name: str, limit: int, judged: dict) -> None:
    """Name the answer runs whose cache (``benchmarks/results/cache/``, not in git) is incomplete."""
    for method, rows in judged.items():
        missing = sum(row is None for row in rows)
        if missing:
            print(f"{name}/{method}: {missing} of {len(rows)} answers not cached; the Table 3 row is "
                  f"left out (run python -m benchmarks answer_accuracy --dataset {name} "
                  f"--method {method} --limit {limit})", file=sys.stderr)


def _judges(name: str, rows: list[dict], subset: list[dict], judged: dict) -> dict:
    """How the retrieval judge's labels agree with labels from the answers of every method."""
    row_of = {r["id"]: r for r in rows if r["dataset"] == name}
    same, pairs = [], []
    for i, query in enumerate(subset):
        row = row_of[query["id"]]
        correct = {label: judged[method][i][0] for label, method in METHOD_OF_LABEL.items()}
        prior = "E" if DATASETS[name].multi_hop(query) else "C"
        same.append(next((k for k in LABELS if correct[k]), prior) == row["label"])
        best = max(row["recall"].values())
        pairs += [(best > 0 and row["recall"][k] >= best - 1e-9, correct[k]) for k in LABELS[1:]]
    works = [ok for w, ok in pairs if w]
    fails = [ok for w, ok in pairs if not w]
    return {"queries": len(subset), "same_label": round(float(np.mean(same)), 3),
            "answer_right_when_context_works": round(float(np.mean(works)), 3) if works else None,
            "answer_right_when_context_fails": round(float(np.mean(fails)), 3) if fails else None}


def _plan_ms(name: str, subset: list[dict]) -> float:
    # What planning adds to the chosen method on the data set's own index: the cheap features
    # and the head. The question's embedding is not counted: the planner's is remembered
    # (Embedder.embed_one) and every method reuses it, and each method's cost includes one.
    times = []
    with EdgeRAG.open(DATASETS[name].index, create=False, progress=False) as rag:
        for query in subset:
            rag.plan(query["question"])  # embeds the question (and loads the head once)
            start = time.perf_counter()
            rag.plan(query["question"])
            times.append((time.perf_counter() - start) * 1000)
    return float(np.mean(times))


def _judge(query: dict, row: dict | None) -> tuple[bool, float] | None:
    if row is None:
        return None
    latency = row["retrieve_ms"] + row["prefill_ms"] + row["decode_ms"]
    return judge(query, row["answer"])["correct"], latency


def _summarise(judged: list[tuple[bool, float]]) -> dict:
    return {"queries": len(judged), "accuracy": round(float(np.mean([c for c, _ in judged])), 3),
            "latency_ms": round(float(np.mean([t for _, t in judged])), 1)}


def _planner_latency(embedder: Embedder, rows: list[dict]) -> dict:
    # The head's own cost on top of the query embedding that retrieval computes anyway.
    from edge_rag.plan import PlannerHead

    settings = Settings()
    folder = ModelFolder.open(settings.home / "models" / settings.planner_model)
    head = PlannerHead(folder, embedder.folder.sha256)
    features = feature_matrix(rows, embedder)
    times = []
    for row in features:
        start = time.perf_counter()
        head.probabilities(row)
        times.append((time.perf_counter() - start) * 1000)
    return {f"head_{k}_ms": v for k, v in percentiles(times, digits=3).items()}


def _print(result: dict) -> None:
    acc = result["planner_accuracy"]
    print(markdown_table(["data set", "queries", "head = label (5-fold CV)", "head picks a working method",
                          "rules = label", "rules pick a working method"],
                         [[k, v["queries"], v["head_cv"], v["head_cv_works"], v["rules"], v["rules_works"]]
                          for k, v in acc.items()]))
    print("\nconfusion (rows: label, columns: head CV prediction)")
    print(markdown_table(["label", *LABELS], [[t, *row.values()] for t, row in result["confusion"].items()]))
    for name, table in result["table3"].items():
        methods = [m for m in (*METHOD_OF_LABEL.values(), "auto") if m in table]
        print(f"\n{name}: accuracy / mean latency ms (auto chose {table['auto_methods']})"
              f"\njudges: {table.get('judges')}")
        print(markdown_table(methods, [[f"{table[m]['accuracy']:.3f} / {table[m]['latency_ms']:.0f}"
                                        for m in methods]]))
    print(f"\nauto's methods: {result['auto_methods']}")
    for name, measured in result["measured_latency_ms"].items():
        print(f"measured mean retrieval latency ms ({name}, auto_latency.json): wall {measured['wall_ms']}, "
              f"CPU {measured['cpu_ms']}")
    print("\nevidence recall of the chosen context, all labelled dev queries")
    names = list(next(iter(result["recall"].values())))
    print(markdown_table(["data set", *names], [[k, *v.values()] for k, v in result["recall"].items()]))
    latency = {k: v for k, v in result["retrieval_latency_ms"].items() if k != "plan"}
    if latency:
        plan_ms = result["retrieval_latency_ms"]["plan"]
        print(f"\nmean retrieval latency ms (auto includes planning beyond the embedding, ms: {plan_ms})")
        names = list(next(iter(latency.values())))
        print(markdown_table(["data set", *names], [[k, *v.values()] for k, v in latency.items()]))
    print(f"\nplanner head latency: {result['planner_ms']}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks planner_eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limits", default="lihua=60,2wiki=40",
                        help="data sets and their stratified answer subsets (default: %(default)s)")
    parser.add_argument("--slm", default=Settings().slm,
                        help="SLM whose cached answers to use (default: the default profile's, %(default)s)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
