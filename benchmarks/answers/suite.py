"""The on-device benchmark suite: one profile, one data set, every method, one table.

    python -m benchmarks suite [--profile dev] [--dataset lihua|2wiki|hotpotqa|multihop]
                               [--limit 60] [--queries FILE] [--methods none,vector,...] [--no-ablation]

For each method (none, vector, local, dual, topology, ppr, auto, and the -weights rows of the graph
methods): answer accuracy (normalised containment) and token F1 on a type-stratified subset
(``--limit``), evidence recall@k on the same queries, latency p50/p95 per stage (plan, retrieve,
prefill, decode) and the index bytes the method needs; for the run: the index's bytes per file and
build time, and the process's peak RSS against the profile's memory estimate and budget.

The profile's memory policy is applied first: a profile that does not fit refuses before anything
loads (exit status 3, the refusal written to the results), one that may degrade runs degraded.
Answers are cached per data set, SLM, method and prompt-shaping settings
(``benchmarks/results/cache``), so a rerun only generates what is new; when nothing is new, one
fresh answer is generated anyway so the peak RSS includes a loaded SLM. Indexes are built once per
data set and index shape (``benchmarks/.indexes``). The expected duration is printed before the
run. Writes ``suite_<dataset>_<profile>.json`` and ``.md``, and with the ``bench`` extra a PNG:
accuracy against latency and against index size (the paper's Figure 7).

``auto`` plans with the exported head, which was trained on these dev queries: its row here is
optimistic; ``python -m benchmarks planner_eval`` gives the cross-validated figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.core.answers import answer_all, cache_path, load_cache
from benchmarks.core.datasets import DATASETS, Dataset, build_record, open_index, stratified
from benchmarks.core.measure import method_footprint, peak_rss_mb, percentiles
from benchmarks.core.options import options
from benchmarks.core.paths import RESULTS
from benchmarks.core.results import markdown_table, pyplot, save_figure, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.budget import estimate_memory, fit_to_budget
from edge_rag.errors import MemoryBudgetExceeded
from edge_rag.retrieve import GRAPH_METHODS

METHODS = ("none", "vector", "local", "dual", "topology", "ppr", "auto")
SECONDS_PER_ANSWER = 8.0  # Qwen 0.5B int8 on 2 cores, 1,024-token context (answer_accuracy runs)


def main(argv: list[str] | None = None) -> int:
    """Run the suite for one profile and data set; print and write the results."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    profile = Settings.load(args.profile)
    name = f"suite_{args.dataset}_{Path(args.profile).stem}"
    try:
        overrides = _fit(profile, dataset.index_for(profile))
    except MemoryBudgetExceeded as refused:
        _write(name, {"profile": args.profile, "dataset": args.dataset, "refused": str(refused),
                      "memory": _memory(profile, dataset.index_for(profile))},
               f"profile {args.profile} refused up front: {refused}", profile)
        return 3
    settings = profile.replace(**overrides)
    queries, runs = _queries(args, dataset), _runs(args)
    new = _announce(args, settings, queries, runs)
    with open_index(dataset, args.profile, **overrides) as rag:
        recall, index = dataset.recall(rag), _index_facts(rag)
        probe = None if new else _probe(rag, queries[0])
    rows = {}
    for method, weights in runs:
        label = method if weights else f"{method} -weights"
        print(f"[{time.strftime('%H:%M:%S')}] {label}", flush=True)
        with EdgeRAG.open(dataset.index_for(settings), args.profile, create=False, use_weights=weights,
                          **overrides) as rag:
            rows[label] = _run(rag, args.dataset, method, queries, recall, dataset.ks)
    memory = {**_memory(settings, dataset.index_for(settings)), "peak_rss_mb": round(peak_rss_mb(), 1),
              "answers_generated": new, "probe": probe}
    result = {"profile": args.profile, "dataset": args.dataset, "note": dataset.note, "slm": settings.slm,
              "queries": len(queries), "degraded": overrides, "methods": rows, "index": index,
              "memory": memory}
    _write(name, result, _table(result, dataset.ks), settings)
    _plot(result, RESULTS / f"{name}.png")
    return 0


def _runs(args: argparse.Namespace) -> list[tuple[str, bool]]:
    """(method, use_weights) pairs: every method, then the graph methods without weights."""
    methods = args.methods.split(",")
    ablation = [] if args.no_ablation else [(m, False) for m in methods if m in GRAPH_METHODS]
    return [(m, True) for m in methods] + ablation


def _index_facts(rag: EdgeRAG) -> dict:
    stats = rag.stats()
    return {"files": stats.files, "total_bytes": stats.total_bytes,
            "method_bytes": method_footprint(rag.directory), "build": build_record(rag.directory)}


def _fit(settings: Settings, index: Path) -> dict:
    """The overrides the profile's memory policy applies before anything loads (may refuse)."""
    fitted = fit_to_budget(settings, index if index.is_dir() else None, with_slm=True)
    shaped = ("slm_context_tokens", "context_token_budget", "answer_max_tokens")
    changed = {k: getattr(fitted, k) for k in shaped if getattr(fitted, k) != getattr(settings, k)}
    if changed:
        print(f"degraded to fit {settings.memory_budget_mb} MiB: {changed}", flush=True)
    return changed


def _memory(settings: Settings, index: Path) -> dict:
    estimate = estimate_memory(settings, index if index.is_dir() else None, with_slm=True)
    return {"estimate_mb": round(estimate.total_mb, 1), "parts_mb": estimate.parts,
            "budget_mb": settings.memory_budget_mb}


def _probe(rag: EdgeRAG, query: dict) -> dict:
    """One fresh answer so the peak RSS includes a loaded SLM when every answer came from the cache."""
    answer = rag.ask(query["question"], method="dual")
    return {"query": query["id"], "method": "dual", "sources": len(answer.sources),
            "prefill_ms": round(answer.timings.get("prefill", 0.0), 1)}


def _write(name: str, result: dict, table: str, settings: Settings) -> None:
    print(table)
    (RESULTS / f"{name}.md").write_text(table + "\n", encoding="utf-8")
    print(f"wrote {write_result(name, result, settings)}")


def _queries(args: argparse.Namespace, dataset: Dataset) -> list[dict]:
    if args.queries:
        raw = json.loads(Path(args.queries).read_text(encoding="utf-8"))
        items = raw.items() if isinstance(raw, dict) else enumerate(raw)
        queries = [{"id": str(q.get("id", key)), "question": q["question"], "answer": q["answer"],
                    "type": q.get("type", "Single"), "evidence": q.get("evidence") or []} for key, q in items]
    else:
        queries = dataset.queries()
    return stratified(queries, args.limit)


def _announce(args: argparse.Namespace, settings: Settings, queries: list[dict], runs: list) -> int:
    new = 0
    for method, weights in runs:
        if method == "auto":
            continue
        name = method + ("" if weights else "-noweights")
        cached = load_cache(cache_path(args.dataset, settings.slm, name, settings))
        new += sum(q["id"] not in cached for q in queries)
    per_answer = SECONDS_PER_ANSWER * (0.25 + 0.75 * settings.context_token_budget / 1024)
    minutes = (new * per_answer + len(queries) * len(runs) * 0.5 + (0 if new else 20)) / 60
    print(f"{len(queries)} queries x {len(runs)} runs; {new} answers to generate; "
          f"expected about {minutes:.0f} min on 2 cores", flush=True)
    return new


def _run(rag: EdgeRAG, dataset: str, method: str, queries: list[dict], recall: Callable,
         ks: tuple[int, int]) -> dict:
    stages: dict[str, list[float]] = {}
    recalls: dict[int, list[float]] = {k: [] for k in ks}
    chosen: dict[str, list[dict]] = {}
    for query in queries:
        found = rag.retrieve(query["question"], method=method, top_k=2 * max(ks))
        for k in ks:
            if query["evidence"]:
                recalls[k].append(recall(found.chunks, query, k))
        stages.setdefault("plan", []).append(found.timings_ms.get("plan", 0.0))
        stages.setdefault("retrieve", []).append(sum(v for s, v in found.timings_ms.items() if s != "plan"))
        chosen.setdefault(found.method, []).append(query)
    # auto's answer is the chosen method's answer: the pipeline after planning is the same.
    answers = [row for name, group in chosen.items()
               for row in answer_all(rag, dataset, group, name, rag.settings.slm)]
    for key in ("prefill_ms", "decode_ms"):
        stages[key[:-3]] = [row[key] for row in answers]
    out = {"accuracy": round(statistics.mean(r["correct"] for r in answers), 4),
           "token_f1": round(statistics.mean(r["f1"] for r in answers), 4),
           **{f"recall@{k}": round(statistics.mean(v), 4) for k, v in recalls.items() if v},
           "latency_ms": {s: percentiles(v) for s, v in stages.items()}}
    if method == "auto":
        out["chosen"] = {name: len(group) for name, group in chosen.items()}
    return out


def _table(result: dict, ks: tuple[int, int]) -> str:
    headers = ["method", "accuracy", "F1", *(f"R@{k}" for k in ks), "plan p50", "retrieve p50/p95",
               "prefill p50", "decode p50", "index MiB"]
    rows = []
    for name, r in result["methods"].items():
        lat = r["latency_ms"]
        rows.append([name, r["accuracy"], r["token_f1"], *(r.get(f"recall@{k}", "") for k in ks),
                     lat["plan"]["p50"], f"{lat['retrieve']['p50']} / {lat['retrieve']['p95']}",
                     lat["prefill"]["p50"], lat["decode"]["p50"], round(_method_mib(result, name), 1)])
    memory, index = result["memory"], result["index"]
    build = index["build"]
    built = f"built in {build['seconds'] / 60:.1f} min" if build else "build time not recorded"
    foot = (f"\n{result['queries']} queries, profile {result['profile']}, SLM {result['slm']}"
            f"{', degraded ' + str(result['degraded']) if result['degraded'] else ''}; index "
            f"{index['total_bytes'] / 2**20:.1f} MiB, {built}; memory estimate {memory['estimate_mb']} MiB, "
            f"peak RSS {memory['peak_rss_mb']} MiB, budget {memory['budget_mb'] or 'none'}. "
            f"Latencies in ms; {memory['answers_generated']} answers generated in this run, the rest from "
            "the cache with the prefill/decode times of the run that made them.")
    return markdown_table(headers, rows) + foot


def _method_mib(result: dict, name: str) -> float:
    return result["index"]["method_bytes"][name.split()[0]] / 2**20


def _plot(result: dict, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    figure, (by_time, by_size) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for name, r in result["methods"].items():
        lat = r["latency_ms"]
        total = sum(lat[s]["p50"] for s in ("plan", "retrieve", "prefill", "decode")) / 1000
        for axes, x in ((by_time, total), (by_size, _method_mib(result, name))):
            axes.scatter(x, r["accuracy"])
            axes.annotate(name, (x, r["accuracy"]), fontsize=8)
    by_time.set_xlabel("median latency per query (s)")
    by_size.set_xlabel("index size the method needs (MiB)")
    by_time.set_ylabel("answer accuracy")
    figure.suptitle(f"{result['dataset']} · {result['profile']} · {result['slm']} · "
                    f"{result['queries']} queries")
    save_figure(plt, figure, path)


def _parser() -> argparse.ArgumentParser:
    shared = options(profile="dev", dataset="lihua", limit=60, limit_help="type-stratified query subset")
    parser = argparse.ArgumentParser(parents=[shared], prog="python -m benchmarks suite",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", help="a query file of the LiHua-World format instead of the data set's")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: all)")
    parser.add_argument("--no-ablation", action="store_true", help="skip the -weights rows")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
