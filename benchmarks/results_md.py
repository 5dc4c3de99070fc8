"""Write ``benchmarks/RESULTS.md`` from the results JSON in ``benchmarks/results/``.

    python -m benchmarks.results_md            # rewrite benchmarks/RESULTS.md
    python -m benchmarks.results_md --check    # exit 1 when the committed file is stale

Every result file a benchmark script writes is rendered here: the shapes this module knows get
their own tables; any other JSON file (a new benchmark, or a known one whose shape changed) is
listed as stored (its scalar fields, and a table for every list or mapping of records), so a
new result shows up before anyone writes a renderer for it and nothing breaks.
The output depends only on the files, so a test can check that the committed page is current.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import RESULTS

OUTPUT = RESULTS.parent / "RESULTS.md"
DATASET_NAMES = {"lihua": "LiHua-World", "2wiki": "2WikiMultihopQA", "hotpotqa": "HotpotQA (sample)",
                 "multihop": "MultiHop-RAG (derived stand-in)"}
METHOD_ORDER = ["none", "vector", "local", "dual", "topology", "auto"]
PAPER_NAMES = {"vector": "VR", "local": "LR", "dual": "DR", "topology": "TR"}
TYPES = ("Single", "Multi", "Null", "All")
ROW_LIMIT = 40
# Shapes a section cannot read: the files are then listed as stored instead.
SHAPE_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError)


@dataclass(frozen=True)
class Result:
    """One results file: its name, parsed content and the plot stored beside it, if any."""

    name: str
    data: Any
    plot: str | None = None


Renderer = Callable[[list[Result]], str]


@dataclass(frozen=True)
class Section:
    """A part of RESULTS.md: the files it claims (glob patterns), its introduction, its tables."""

    title: str
    patterns: tuple[str, ...]
    intro: str
    render: Renderer
    reading: str = ""  # what the tables say, written by hand for the runs as of their dates


def main(argv: list[str] | None = None) -> int:
    """Write RESULTS.md, or with --check report whether the committed one is current."""
    args = _parser().parse_args(argv)
    text = render(Path(args.results))
    output = Path(args.output)
    if args.check:
        current = output.is_file() and output.read_text(encoding="utf-8") == text
        print(f"{output} is {'up to date' if current else 'stale: run python -m benchmarks.results_md'}")
        return 0 if current else 1
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output} from {len(load(Path(args.results)))} result files")
    return 0


def render(results: Path = RESULTS) -> str:
    """The whole RESULTS.md text for the files in ``results``."""
    files = load(results)
    claimed: set[str] = set()
    parts = []
    for section in SECTIONS:
        mine = [r for r in files if r.name not in claimed and _matches(r.name, section.patterns)]
        claimed.update(r.name for r in mine)
        if mine:
            reading = f"\n\n**Reading.** {section.reading}" if section.reading else ""
            parts.append((section.title, f"{section.intro}\n\n{_safely(section.render, mine)}{reading}"))
    others = [r for r in files if r.name not in claimed]
    if others:
        parts.append(("Other results", OTHER_INTRO + "\n\n" + "\n\n".join(generic(r) for r in others)))
    parts.append(("History", HISTORY))
    contents = "\n".join(f"- [{title}](#{_anchor(title)})" for title, _ in parts)
    body = "\n\n".join(f"## {title}\n\n{text}" for title, text in parts)
    return f"{HEADER}\n\n{contents}\n\n{CACHE_NOTE}\n\n{body}\n"


def load(results: Path) -> list[Result]:
    """Every ``*.json`` file of the results folder (not the answer cache), sorted by name."""
    out = []
    for path in sorted(results.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            data = {"unreadable": f"{type(exc).__name__}: {exc}"}
        plot = path.with_suffix(".png")
        out.append(Result(path.name, data, f"results/{plot.name}" if plot.is_file() else None))
    return out


# -- known shapes ----------------------------------------------------------------------------

def suite(results: list[Result]) -> str:
    """One table per data set and profile: every method's answers, recall, latency, index bytes."""
    return _each(_suite_one, sorted(results, key=_dataset_then_name))


def _suite_one(result: Result) -> str:
    data = result.data
    title = f"### {_dataset(data.get('dataset'))}, profile {data['profile']}"
    if "refused" in data:
        return (f"{title}\n\nRefused before anything loaded (exit status 3): {data['refused']}\n\n"
                f"{_when(result)}")
    methods = data["methods"]
    ks = _recall_ks(next(iter(methods.values())))
    headers = ["method", "accuracy", "F1", *(f"R@{k}" for k in ks), "plan p50", "retrieve p50 / p95",
               "prefill p50", "decode p50", "index MiB"]
    rows = [_suite_row(data, name, r, ks) for name, r in _ordered(methods)]
    memory, index = data["memory"], data["index"]
    build = index.get("build")
    built = f"built in {build['seconds'] / 60:.1f} min" if build else "build time not recorded"
    chose = {n: r["chosen"] for n, r in methods.items() if r.get("chosen")}
    foot = (f"{data['queries']} queries, SLM {data['slm']}"
            f"{', degraded ' + _plain(data['degraded']) if data.get('degraded') else ''}; index "
            f"{index['total_bytes'] / 2**20:.1f} MiB, {built}; memory estimate {memory['estimate_mb']} MiB, "
            f"peak RSS {memory['peak_rss_mb']} MiB, budget {memory['budget_mb'] or 'none'}. Latencies in "
            f"ms; {memory['answers_generated']} answers generated in this run, the rest from the answer "
            f"cache with the times of the run that made them."
            + "".join(f" {n} chose {_plain(c)}." for n, c in chose.items()))
    return "\n\n".join([title, table(headers, rows), _with_plot(foot, result), _when(result)])


def _suite_row(data: dict, name: str, r: dict, ks: list[int]) -> list[Any]:
    lat = r["latency_ms"]
    method_bytes = data["index"]["method_bytes"].get(name.split()[0])
    return [name, _f(r["accuracy"], 3), _f(r["token_f1"], 3), *(_f(r.get(f"recall@{k}"), 3) for k in ks),
            _f(lat.get("plan", {}).get("p50"), 1),
            f"{_f(lat['retrieve']['p50'], 1)} / {_f(lat['retrieve']['p95'], 1)}",
            _f(lat["prefill"]["p50"], 0), _f(lat["decode"]["p50"], 0),
            _f(method_bytes / 2**20 if method_bytes is not None else None, 1)]


def peers(results: list[Result]) -> str:
    """One table per data set: every system and mode on the same subset, SLM and embedder."""
    return _each(_peers_one, sorted(results, key=_dataset_then_name))


def _peers_one(result: Result) -> str:
    data = result.data
    at = data.get("recall_at", 5)
    headers = ["system", "mode", "accuracy", "F1", f"R@{at}", "latency p50 / p95 s", "index build s",
               "index MiB", "peak RSS MiB"]
    rows, notes = [], []
    for system, r in data["systems"].items():
        if "skipped" in r:
            notes.append(f"{system} skipped: {r['skipped']}")
            continue
        notes.append(f"{system}: {r.get('settings', '')}"
                     + (f"; SLM calls {_plain(r['llm_calls'])}" if r.get("llm_calls") else ""))
        rows += [[system, mode, _f(m["accuracy"], 3), _f(m["token_f1"], 3), _f(m.get("recall"), 3),
                  f"{_f(m['latency_s']['p50'], 2)} / {_f(m['latency_s']['p95'], 2)}",
                  _f(r["build_seconds"], 1), _f(r["index_bytes"] / 2**20, 2), _f(r["peak_rss_mb"], 0)]
                 for mode, m in r["modes"].items()]
    title = (f"### {_dataset(data['dataset'])}: {data['queries']} questions over {data['documents']} "
             f"documents, SLM {data['slm']}")
    foot = "\n".join(f"- {n}" for n in notes)
    return "\n\n".join([title, table(headers, rows), _with_plot(foot, result), _when(result)])


def retrieval(results: list[Result]) -> str:
    """Evidence recall and latency of every retrieval method, per data set."""
    return _each(_retrieval_one, sorted(results, key=_dataset_then_name))


def _retrieval_one(result: Result) -> str:
    data = result.data
    methods = data["methods"]
    first = next(iter(methods.values()))
    everyone = first["All"]["queries"]
    kinds = [k for k in TYPES if k in first and (k == "All" or first[k]["queries"] != everyone)]
    ks = _recall_ks(first["All"])
    headers = ["method"] + [f"{k} R@{n}" if len(kinds) > 1 else f"R@{n}" for k in kinds for n in ks]
    rows = [[_method_label(name)] + [_f(r[k].get(f"recall@{n}"), 3) for k in kinds for n in ks]
            + [_f(r["latency_ms"]["p50"], 1), _f(r["latency_ms"]["p95"], 1)] for name, r in _ordered(methods)]
    build = data.get("build", {})
    facts = ", ".join(f"{_f(build[k], 0)} {k.replace('_', ' ')}" for k in
                      ("documents", "chunks", "entities", "relations", "similar_edges") if k in build)
    size = f", {build['total_bytes'] / 2**20:.1f} MiB" if "total_bytes" in build else ""
    foot = (f"{data['queries']} queries with evidence; index: {facts}{size}; peak RSS "
            f"{_f(data.get('peak_rss_mb'), 0)} MiB. {data.get('note') or ''}").strip()
    title = f"### {_dataset(data.get('dataset'))}"
    return "\n\n".join([title, table(headers + ["p50 ms", "p95 ms"], rows), foot, _when(result)])


def answer_accuracy(results: list[Result]) -> str:
    """Accuracy per data set and method, then every run's summary, then per-type tables of full runs."""
    runs = sorted(results, key=lambda r: (_dataset_key(r.data.get("dataset", "lihua")),
                                          r.data.get("limit") or 10**9, _method_key(_staged(r.data))))
    methods = sorted({_staged(r.data) for r in runs}, key=_method_key)
    groups: dict[tuple, dict[str, Any]] = {}
    for r in runs:
        key = (_dataset(r.data.get("dataset", "lihua")), r.data.get("limit"), r.data["slm"])
        groups.setdefault(key, {})[_staged(r.data)] = r.data["summary"]["All"]["accuracy"]
    matrix = table(["data set", "questions", "SLM", *methods],
                   [[d, limit or "all", slm, *(_f(accs.get(m), 3) for m in methods)]
                    for (d, limit, slm), accs in groups.items()])
    detail = table(["data set", "questions", "method", "accuracy", "exact", "F1", "retrieve ms",
                    "prefill ms", "decode ms", "from cache", "file"],
                   [_accuracy_row(r) for r in runs])
    full = [_accuracy_types(r) for r in runs if not r.data.get("limit")]
    return "\n\n".join(["Accuracy (All) by method:", matrix, "Every run (All):", detail, *full])


def answer_rules(results: list[Result]) -> str:
    """Accuracy by model, method and question type (each run's base stage), then each run's rules
    switched off one by one with the halves' figures and the cross-validated choice."""
    runs = sorted(results, key=lambda r: (_dataset_key(r.data["dataset"]), r.data["slm"],
                                          _method_key(r.data["method"]), r.name))
    kinds = ["Single", "Multi", "Null"]
    matrix = table(["data set", "SLM", "method", "questions", "rules off", "half A", "half B", "all", *kinds,
                    "false abstention", "answer p50 ms", "retrieve p50 ms", "file"],
                   [[_dataset(r.data["dataset"]), r.data["slm"], r.data["method"], len(r.data["answers"]),
                     ", ".join(r.data["base_off"]) or "none", *(_f(base[k], 3) for k in ("A", "B", "dev")),
                     *(_f(base.get(k), 3) for k in kinds), _f(base["false_abstention"], 3),
                     _f(base["answer_ms"]["p50"], 0), _f(base["retrieve_ms"]["p50"], 1), f"`{r.name}`"]
                    for r in runs for base in [r.data["rules"][0]]])
    parts = ["Accuracy by model × method × question type (the base stage of each run):", matrix,
             "The same questions side by side (runs of one data set that differ in model or method, "
             "on the questions both answered):", _paired(runs)]
    for r in runs:
        if len(r.data["rules"]) < 2:
            continue
        halves = r.data["halves"]
        parts.append(f"Rules of `{r.name}` ({_dataset(r.data['dataset'])}, {r.data['slm']}, "
                     f"{r.data['method']}; halves A {halves['A']} and B {halves['B']} questions):")
        parts.append(table(["rule", "state", "half A", "half B", "dev", "Single", "Multi", "Null",
                            "false abst.", "chosen on A", "→ on B", "chosen on B", "→ on A"],
                           [[row["rule"], row["state"], *(_f(row.get(k), 3) for k in ("A", "B", "dev")),
                             *(_f(row.get(k), 3) for k in kinds), _f(row.get("false_abstention"), 3),
                             row.get("chosen_on_A", ""), _f(row.get("on_B"), 3),
                             row.get("chosen_on_B", ""), _f(row.get("on_A"), 3)]
                            for row in r.data["rules"]]))
    return "\n\n".join(parts)


def _paired(runs: list[Result]) -> str:
    rows: dict[tuple[str, str, str], list[Any]] = {}  # per pair of runs, the most questions in common
    for i, one in enumerate(runs):
        for other in runs[i + 1:]:
            a, b = one.data, other.data
            if a["dataset"] != b["dataset"] or (a["slm"] != b["slm"]) == (a["method"] != b["method"]) \
                    or a["base_off"] != b["base_off"]:
                continue
            mine = {r["id"]: r for r in a["answers"]}
            theirs = {r["id"]: r for r in b["answers"]}
            common = [i for i in mine if i in theirs]
            if not common:
                continue
            first, second = _right(mine, common), _right(theirs, common)
            key = (_dataset(a["dataset"]), f"{a['slm']} {a['method']}", f"{b['slm']} {b['method']}")
            if len(common) > rows.get(key, [None, 0])[1]:
                rows[key] = [key[0], len(common), key[1], _f(first, 3), key[2], _f(second, 3),
                             _f(first - second, 3)]
    return table(["data set", "questions", "run 1", "accuracy", "run 2", "accuracy", "1 − 2"], rows.values())


def _right(answers: dict[str, dict], ids: list[str]) -> float:
    return sum(answers[i]["correct"] for i in ids) / len(ids)


def _staged(data: dict[str, Any]) -> str:
    """The method, with ``-focused`` when the focused answer stage wrote the answers and the
    answer rules switched off (``--rules-off``) after ``off``."""
    focused = data.get("answer_stage") == "focused" and not data["method"].endswith("-focused")
    off = data.get("settings", {}).get("answer_rules_off") or ()
    return data["method"] + ("-focused" if focused else "") + (f" off {'+'.join(off)}" if off else "")


def _accuracy_row(result: Result) -> list[Any]:
    data, s = result.data, result.data["summary"]["All"]
    return [_dataset(data.get("dataset", "lihua")), s["queries"], _staged(data), _f(s["accuracy"], 3),
            _f(s.get("exact_match"), 3), _f(s["token_f1"], 3), _f(s["retrieve_ms"], 1),
            _f(s["prefill_ms"], 0), _f(s["decode_ms"], 0), data.get("answers_from_cache", ""),
            f"`{result.name}`"]


def _accuracy_types(result: Result) -> str:
    data = result.data
    rows = [[t, s["queries"], _f(s["accuracy"], 3), _f(s["token_f1"], 3), _f(s["retrieve_ms"], 1),
             _f(s["prefill_ms"], 0), _f(s["decode_ms"], 0)] for t, s in data["summary"].items()]
    title = (f"Every dev query of {_dataset(data.get('dataset', 'lihua'))}, method {data['method']}, "
             f"SLM {data['slm']} (`{result.name}`):")
    return "\n\n".join([title, table(["type", "queries", "accuracy", "token F1", "retrieve ms",
                                      "prefill ms", "decode ms"], rows)])


def planner(results: list[Result]) -> str:
    """The planner's labels, its cross-validated accuracy and the Table 3 comparison."""
    return _each(_planner_one, results)


def _planner_one(result: Result) -> str:
    data = result.data
    if "repeats" in data:
        return _auto_latency(result)
    if "grid" in data:
        return _planner_margin(result)
    if "planner_accuracy" not in data:
        return _labels(result)
    acc = table(["data set", "queries", "head = label (5-fold CV)", "head picks a working method",
                 "rules = label", "rules pick a working method"],
                [[_dataset(k), v["queries"], _f(v["head_cv"], 3), _f(v["head_cv_works"], 3),
                  _f(v["rules"], 3), _f(v["rules_works"], 3)] for k, v in data["planner_accuracy"].items()])
    labels = list(data["confusion"])
    confusion = table(["label \\ head (CV)", *labels],
                      [[t, *(row.get(k, 0) for k in labels)] for t, row in data["confusion"].items()])
    names = list(next(iter(data["recall"].values())))
    recall = table(["data set", *names], [[_dataset(k), *(_f(v.get(n), 3) for n in names)]
                                          for k, v in data["recall"].items()])
    latency = ", ".join(f"{k.removeprefix('head_').removesuffix('_ms')} {v} ms"
                        for k, v in data["planner_ms"].items())
    return "\n\n".join(["### Planner accuracy (`planner_eval.json`)", acc,
                        "Confusion, rows the label, columns the cross-validated head's choice:", confusion,
                        "### Answers: auto against every fixed method (accuracy / mean latency)",
                        _table3(data["table3"]),
                        "### Evidence recall of the chosen context, every labelled dev query", recall,
                        f"Planner head alone: {latency}.", _when(result)])


def _auto_latency(result: Result) -> str:
    first = next(iter(result.data["datasets"].values()))
    methods = [m for m in first["wall_ms"] if not m.startswith("auto_minus")]
    rows = [[_dataset(name), r["queries"], _plain(r["auto_routes"]), clock,
             *(_f(r[f"{clock}_ms"][m], 2) for m in methods),
             f"{_f(r[f'{clock}_ms']['auto_minus_ppr'], 2)} ± {_f(r[f'{clock}_ms']['auto_minus_ppr_se'], 2)}"]
            for name, r in result.data["datasets"].items() for clock in ("wall", "cpu")]
    planner = result.data.get("planner", "names")
    return "\n\n".join([f"### Retrieval latency of auto (`{result.name}`, ms)",
                         table(["data set", "queries", "auto chose", "clock", *methods, "auto − ppr ± s.e."],
                               rows),
                         f"Mean over questions of each question's median of {result.data['repeats']} "
                         f"rounds in random order, auto's planner `{planner}` "
                         "(`python -m benchmarks.auto_latency`).", _when(result)])


def _planner_margin(result: Result) -> str:
    parts = [f"### Vector's margin as the planner (`{result.name}`)"]
    for name, d in result.data["datasets"].items():
        ks = list(d["cv"]["ppr"])
        grid = table(["threshold", "routed", *(f"loss@{k}" for k in ks), "worst"],
                     [[g["threshold"], g["routed"], *(_f(v, 2) for v in g["loss"].values()), g["worst"]]
                      for g in d["grid"] if g["routed"]])
        cv = table(["", "routed", *(f"recall@{k}" for k in ks)],
                   [[f"CV seed {r['seed']} (t {', '.join(map(str, r['thresholds']))})", r["routed"],
                     *(_f(v, 3) for v in r["recall"].values())] for r in d["cv"]["runs"]]
                   + [["ppr", 0, *(_f(v, 3) for v in d["cv"]["ppr"].values())],
                      ["titles", d["queries"], *(_f(v, 3) for v in d["cv"]["cheap"].values())],
                      ["vector", "", *(_f(v, 3) for v in d["cv"]["vector"].values())],
                      [f"auto, margin planner ({_plain(d['margin']['routes'])})", "",
                       *(_f(v, 3) for v in d["margin"]["recall"].values())]])
        routed = any(g["routed"] for g in d["grid"])
        walks = "" if routed else " Every question walks (it names a title or two events)."
        parts += [f"{_dataset(name)}, {d['queries']} questions; loss = ppr − titles recall summed over the "
                  f"questions routed to `titles`.{walks}", grid, cv]
    return "\n\n".join([*parts, _when(result)])


def _table3(data: dict) -> str:
    methods = [m for m in METHOD_ORDER if any(m in t for t in data.values())]
    rows = [[_dataset(name), *(f"{_f(t[m]['accuracy'], 3)} / {t[m]['latency_ms'] / 1000:.1f} s"
                               if m in t else "" for m in methods)] for name, t in data.items()]
    notes = [f"- {_dataset(name)}: auto chose {_plain(t.get('auto_methods', {}))}"
             + (f"; judges {_plain(t['judges'])}" if "judges" in t else "") for name, t in data.items()]
    return table(["data set", *methods], rows) + "\n\n" + "\n".join(notes)


def _labels(result: Result) -> str:
    data = result.data
    labels = sorted({k for counts in data["labels"].values() for k in counts})
    rows = [[_dataset(name), sum(c.values()), *(c.get(k, 0) for k in labels)]
            for name, c in data["labels"].items()]
    return "\n\n".join([f"### Labels (`{result.name}`)", table(["data set", "queries", *labels], rows),
                        f"Judges: {_plain(data['judges'])}; SLM {data.get('slm')}; feature version "
                        f"{data.get('feature_version')}.", _when(result)])


def vector_recall(results: list[Result]) -> str:
    """VR recall@k per query type, then the chunk-size sweep."""
    main_run = [r for r in results if not r.name.startswith("sweep_")]
    sweep = sorted((r for r in results if r.name.startswith("sweep_")),
                   key=lambda r: (r.data["settings"]["chunk_tokens"], r.data["settings"]["chunk_overlap"]))
    parts = [_recall_one(r) for r in main_run]
    if sweep:
        rows = [_sweep_row(r) for r in sweep]
        parts += ["### Chunk size sweep (`sweep_*.json`, All queries)",
                  table(["chunk / overlap tokens", "chunks", "build s", "R@1", "R@3", "R@5", "R@10",
                         "Multi R@10", "index MiB", "peak RSS MiB", "file"], rows)]
    return "\n\n".join(parts)


def _recall_one(result: Result) -> str:
    data = result.data
    recall, build, settings = data["recall"], data["build"], data["settings"]
    ks = _recall_ks(recall["All"])
    rows = [[t, recall[t]["queries"], *(_f(recall[t].get(f"recall@{k}"), 3) for k in ks)]
            for t in TYPES if t in recall]
    foot = (f"{settings['embedder']}, {settings['chunk_tokens']}/{settings['chunk_overlap']}-token chunks, "
            f"{settings['vector_dtype']} vectors: {_f(build['documents'], 0)} documents, "
            f"{_f(build['chunks'], 0)} chunks in {build['seconds']} s ({build['chunks_per_second']} "
            f"chunks/s); {data['index_total_bytes'] / 2**20:.1f} MiB on disk; peak RSS "
            f"{_f(data['peak_rss_mb'], 0)} MiB; retrieval p50 {recall['latency_ms']['p50']} ms, p95 "
            f"{recall['latency_ms']['p95']} ms.")
    return "\n\n".join([f"### VR recall (`{result.name}`)",
                        table(["type", "queries", *(f"R@{k}" for k in ks)], rows), foot, _when(result)])


def _sweep_row(result: Result) -> list[Any]:
    data = result.data
    settings, recall = data["settings"], data["recall"]
    return [f"{settings['chunk_tokens']} / {settings['chunk_overlap']}", _f(data["build"]["chunks"], 0),
            _f(data["build"]["seconds"], 1),
            *(_f(recall["All"].get(f"recall@{k}"), 3) for k in (1, 3, 5, 10)),
            _f(recall.get("Multi", {}).get("recall@10"), 3), _f(data["index_total_bytes"] / 2**20, 1),
            _f(data["peak_rss_mb"], 0), f"`{result.name}`"]


def graph_build(results: list[Result]) -> str:
    """One row per graph build: time, failures, entities, merges, relations, coverage."""
    rows = [_graph_row(r) for r in results]
    return "\n\n".join([table(["extractor", "conversations", "chunks", "graph s", "s per chunk", "failures",
                               "names → entities", "merges", "similar", "relations", "graph MiB",
                               "coverage names / text", "peak RSS MiB", "file"], rows),
                        "; ".join(_when(r) for r in results)])


def _graph_row(result: Result) -> list[Any]:
    data = result.data
    coverage = data.get("coverage") or {}
    covered = (f"{_f(coverage.get('entity_names'), 3)} / {_f(coverage.get('graph_text'), 3)}"
               if coverage else "")
    names = f"{_f(data['entity_names'], 0)} → {_f(data['entities'], 0)}"
    extractor = data["extractor"] + (f" ({data['slm']})" if data["extractor"] == "slm" else "")
    return [extractor, data["conversations"], _f(data["chunks"], 0), _f(data["seconds_graph"], 1),
            _f(data["seconds_per_chunk"], 3), f"{data['failure_rate']:.0%}",
            names, data["merges"], data["similar_edges"], _f(data["relations"], 0),
            _f(data["graph_bytes_sqlite"]["total"] / 2**20, 1), covered,
            _f(data.get("peak_rss_mb"), 0), f"`{result.name}`"]


def slm_speed(results: list[Result]) -> str:
    """One table per results file, newest first: each model, variant and prompt length."""
    return _each(_speed_one, sorted(results, key=lambda r: str(_get(r, "when", "")), reverse=True))


def _speed_one(result: Result) -> str:
    data = result.data
    lengths = data["prompt_tokens"] if isinstance(data["prompt_tokens"], list) else [data["prompt_tokens"]]
    rows = [[r["model"], r["variant"], r.get("prompt_tokens", ""), _f(r.get("file_mb"), 0),
             _f(r.get("prefill_tps"), 0), _f(r.get("decode_tps"), 1), _f(r.get("decode_vs_llama"), 2),
             _f(r.get("prefill_vs_llama"), 2), _f(r.get("decode_tps_lookup"), 1), _f(r.get("read_mb"), 0),
             _f(r.get("read_gbs"), 1), _f(r.get("ceiling_tps"), 1), _f(r.get("ttft_ms"), 0),
             _f(r.get("peak_rss_mb"), 0), r.get("runtime", "")] for r in data["rows"]]
    title = (f"### {' and '.join(map(str, lengths))}-token prompts, {data['new_tokens']} new tokens "
             f"(`{result.name}`)")
    bus = (f"Memory bus: {data['bus_gbs']} GB/s read with {data['bus_threads']} threads; a decode step "
           "reads `read MB`, so no runtime decodes faster than `ceiling`.") if "bus_gbs" in data else ""
    return "\n\n".join(filter(None, [title, table(
        ["model", "variant", "prompt tokens", "file MB", "prefill tok/s", "decode tok/s",
         "decode × llama.cpp", "prefill × llama.cpp", "decode with lookup", "read MB", "read GB/s",
         "ceiling tok/s", "TTFT ms", "peak RSS MB", "runtime"], rows), bus, _when(result)]))


def answer_decode(results: list[Result]) -> str:
    """One row per file: model, drafted tokens, decode speed both ways, answers alike."""
    rows = []
    for result in sorted(results, key=lambda r: (str(_get(r, "slm", "")), str(_get(r, "when", "")))):
        data, summary = result.data, result.data["summary"]
        step, look = summary["stepwise"], summary["lookup"]
        rows.append([data["slm"], data["draft_tokens"], step["answers"], _f(step["decode_tps"], 1),
                     _f(look["decode_tps"], 1), _f(summary["decode_ratio"], 2), summary["identical_answers"],
                     f"{step['right']} / {look['right']}", str(data["when"])[:10], f"`{result.name}`"])
    return table(["SLM", "drafted tokens", "answers", "stepwise tok/s", "lookup tok/s", "decode time ×",
                  "identical answers", "right (stepwise / lookup)", "date", "file"], rows)


def export_memory(results: list[Result]) -> str:
    """Peak RSS of each export run under the watchdog (benchmarks.export_memory)."""
    return _each(_export_memory_one, results)


def _export_memory_one(result: Result) -> str:
    runs = result.data["runs"]
    rows = [[label, _f(r["peak_rss_gib"], 2), _f(r["seconds"], 0), r["exit_status"],
             "killed" if r["killed"] else "", f"`{r['command']}`"] for label, r in runs.items()]
    notes = [f"{key.replace('_', ' ')}: {value}" for key, value in result.data.items()
             if key not in ("benchmark", "when", "machine", "runs")]
    return "\n\n".join([f"### `{result.name}`", table(["run", "peak RSS GiB", "s", "exit", "watchdog",
                                                       "command"], rows), *notes, _when(result)])


def board_slm(results: list[Result]) -> str:
    """Each board SLM's folder, answer prefill, peak RSS and the budget's estimate."""
    return _each(_board_slm_one, results)


def _board_slm_one(result: Result) -> str:
    data = result.data
    rows = [[r["slm"], _f(r["folder_mb"], 0), r["questions"], _f(r["prompt_tokens"], 0),
             _f(r["prefill_s_median"], 2), _f(r["prefill_s_p90"], 2), _f(r["decode_s_median"], 2),
             _f(r["ask_s_median"], 2), _f(r["peak_rss_mb"], 0), _f(r["estimate_mb"], 0),
             _f(r["estimate_vs_peak"], 2)] for r in data["rows"]]
    load = data.get("load_average")
    return "\n\n".join([f"### profile {data['profile']}, `{data['method']}` (`{result.name}`)",
                        table(["SLM", "folder MB", "questions", "prompt tokens", "prefill s (median)",
                               "prefill s (p90)", "decode s", "answer s", "peak RSS MiB", "estimate MiB",
                               "estimate / peak"], rows),
                        f"load average during the run: {load}" if load else "",
                        f"note: {data['note']}" if data.get("note") else "", _when(result)])


def memory(results: list[Result]) -> str:
    """Estimate against measured peak RSS, per profile and method."""
    return _each(_memory_one, results)


def _memory_one(result: Result) -> str:
    data = result.data
    rows = [[r["profile"], r["method"], r["SLM"], r["window"], r["budget MiB"], _f(r["estimate MiB"], 0),
             _f(r["peak RSS MiB"], 0), _f(r["estimate / measured"], 2), r["fits"],
             ", ".join(f"{k} {v:.0f}" for k, v in r.get("parts_mb", {}).items())] for r in data["rows"]]
    return "\n\n".join([f"### {_dataset(data.get('dataset'))} (`{result.name}`)",
                        table(["profile", "method", "SLM", "window", "budget MiB", "estimate MiB",
                               "peak RSS MiB", "estimate / measured", "fits", "estimate parts MiB"], rows),
                        _when(result)])


def formats(results: list[Result]) -> str:
    """The format benchmark (per format, planted facts, mbox memory, sync) and 2Wiki as a folder."""
    return _each(lambda r: _titles_one(r) if r.name.startswith("folder_titles") else _formats_one(r), results)


def _formats_one(result: Result) -> str:
    data = result.data
    rows = [[r["format"], r["files"], r["documents"], r["chunks"], _f(r["seconds"], 2),
             "; ".join(r["refused"]) or "-"] for r in data["formats"]["rows"]]
    facts = [[f["format"], f["question"], f["vector"], f["ppr"]] for f in data["formats"]["facts"]]
    memory = [[m["messages"], m["mbox_mb"], m["documents"], _f(m["peak_rss_mb"], 1)]
              for m in data["mbox_memory"]]
    sync = data["sync"]
    foot = (f"`sync` of {sync['files']:,} small files (extractor {sync['extractor']}): first "
            f"{_f(sync['first_sync_s'], 1)} s; unchanged second sync {_f(sync['second_sync_s'], 3)} s in "
            f"process, {_f(sync['second_command_s'], 2)} s as the whole `edge-rag sync` command (start-up "
            f"included; bar {sync['bar_s']} s); after touching every file (hashed, not read) "
            f"{_f(sync['touched_sync_s'], 3)} s.")
    return "\n\n".join([f"### Mixed folder, mbox of {data['messages']:,} messages (`{result.name}`)",
                        table(["format", "files", "documents", "chunks", "seconds", "refused"], rows),
                        table(["format", "planted fact", "vector top-1", "ppr top-1"], facts),
                        table(["mbox messages", "MB", "documents read", "peak RSS MiB (reading only)"],
                              memory),
                        foot, _when(result)])


def _titles_one(result: Result) -> str:
    data = result.data
    rows = [[method, build, _f(r["recall@2"], 3), _f(r["recall@5"], 3)]
            for method, builds in data["methods"].items() for build, r in builds.items()]
    builds = "; ".join(f"{name}: {b['documents']:,} documents, {b['titled']:,} titled, {b['seconds']:.0f} s"
                       for name, b in data["builds"].items())
    return "\n\n".join([f"### 2WikiMultihopQA as a folder of `.txt` files (`{result.name}`)",
                        table(["method", "build", "R@2", "R@5"], rows),
                        f"{data['queries']} dev queries; {builds}.", _when(result)])


def serve(results: list[Result]) -> str:
    """Requests, errors, 503s and latency per endpoint; memory, retrieve overhead, shutdown."""
    return _each(_serve_one, results)


def _serve_one(result: Result) -> str:
    data = result.data
    rows = [[name, e["requests"], e["answered"], e["errors"], e["rejected_503"], _f(e["ms"]["p50"], 1),
             _f(e["ms"]["p95"], 1)] for name, e in data["endpoints"].items()]
    over, down = data["retrieve_overhead"], data["shutdown"]
    summary = [[data["server_peak_rss_mb"], data["ask_peak_rss_mb"], data["rss_limit_mb"],
                _f(over["library_ms"]["p50"], 2), _f(over["server_ms"]["p50"], 2),
                _f(over["overhead_p50_ms"], 2),
                down["exit_code"], down["seconds"], down["index_clean"], data["acceptance"]["met"]]]
    return "\n\n".join([
        f"### profile {data['profile']}: {data['chat_clients']} chat + {data['retrieve_clients']} retrieve "
        f"clients, {data['seconds']:.0f} s, queue {data['queue']}, load average "
        f"{data.get('load_average_1min', '?')} at the end (`{result.name}`)",
        table(["endpoint", "requests", "answered", "errors", "503s", "p50 ms", "p95 ms"], rows),
        table(["server peak RSS MiB", "ask peak RSS MiB", "limit MiB", "retrieve p50 library ms",
               "retrieve p50 server ms", "overhead ms", "SIGTERM exit", "exit s", "index clean",
               "acceptance met"], summary), _when(result)])


def hostile_server(results: list[Result]) -> str:
    """Each attack on the server: what came back and whether it held."""
    return _each(_hostile_one, results)


def _hostile_one(result: Result) -> str:
    data = result.data
    rows = [[r["attack"], r["result"], "yes" if r["held"] else "**no**"] for r in data["rows"].values()]
    return "\n\n".join([f"### profile {data['profile']}, all held: {data['held']} (`{result.name}`)",
                         table(["attack", "observed", "held"], rows), _when(result)])


def encryption(results: list[Result]) -> str:
    """Plain against encrypted index: build, bytes, phrases found, refusals, retrieval."""
    return _each(_encryption_one, results)


def _encryption_one(result: Result) -> str:
    data = result.data
    found = {name: sum(files.values()) for name, files in data["phrases_found"].items()}
    builds = table(["index", "build s", "bytes", f"corpus phrases found (of {data['phrases']})"],
                   [[n, ", ".join(_f(b, 1) for b in data["build_s"][n]), _f(data["bytes"][n], 0), found[n]]
                    for n in ("plain", "encrypted")])
    reads = table(["method", "same chunks", "recall@5 plain", "recall@5 encrypted", "p50 ms plain",
                   "p50 ms encrypted", "p50 ratio"],
                  [[m, f"{r['same_chunks']}/{r['questions']}", r["recall@5"]["plain"],
                    r["recall@5"]["encrypted"], r["p50_ms"]["plain"], r["p50_ms"]["encrypted"],
                    r["p50_ratio"]] for m, r in data["retrieval"].items()])
    refused = "; ".join(f"{k.replace('_', ' ')}: exit {data[k]['exit']}, {data[k]['stderr'].strip()!r}, "
                        f"files unchanged {data[k]['files_unchanged']}" for k in ("wrong_key", "missing_key"))
    return "\n\n".join([f"### {data['documents']} conversations, build ratio {data['build_ratio']} "
                         f"(`{result.name}`)", builds, reads, refused, _when(result)])


def injection(results: list[Result]) -> str:
    """Answers following a planted instruction, per variant."""
    return _each(_injection_one, results)


def _injection_one(result: Result) -> str:
    data = result.data
    rows = [[v, f"{s['followed']}/{s['planted']}", s["followed_share"], s["right_share"],
             s["retrieved_share"], s["withheld_cases"], _plain(s["followed_by_style"])]
            for v, s in data["summary"].items()]
    note = [f"_{data['note']}._"] if data.get("note") else []
    return "\n\n".join([f"### {data['cases']} cases, {data['method']} retrieval (`{result.name}`)", *note,
                         table(["variant", "followed", "followed share", "right share",
                                "planted doc retrieved", "cases with withheld lines",
                                "followed by style"], rows), _when(result)])


def scale(results: list[Result]) -> str:
    """LiHua-World among distractors, per size: build, bytes, latency, memory, recall."""
    return _each(_scale_one, results)


def _scale_one(result: Result) -> str:
    data = result.data
    rows = [[f"{r['times']}×", _f(r["text_mb"], 2), r["documents"], r["chunks"],
             f"{_f(r['build']['kb_per_s'], 2)} ({_f(r['build']['kb_per_cpu_s'], 2)})",
             _f(r["build"]["peak_rss_mb"], 0), _f(r["index_bytes_per_kb"], 0),
             "/".join(_f(r["latency_ms"][m]["p50"], 0) for m in ("vector", "ppr", "auto")),
             _f(r["latency_ms"]["ppr"]["p95"], 0), _f(r["cold_first_s"], 2),
             _f(r["retrieve_cli"]["peak_rss_mb"], 0), _f(r["ask_cli"].get("peak_rss_mb", "-"), 0),
             "/".join(_f(r["recall_at_5"][m], 3) for m in ("vector", "ppr", "auto"))] for r in data["sizes"]]
    headers = ["size", "text MB", "docs", "chunks", "build KB/s wall (per CPU s)", "build peak MiB",
               "index bytes/KB", "p50 ms vector/ppr/auto", "ppr p95 ms", "cold first s",
               "retrieve peak MiB", "ask peak MiB", "recall@5 vector/ppr/auto"]
    note = [f"_{data['note']}._"] if data.get("note") else []
    compared = [r for r in data["sizes"] if "before" in r]
    pairs = table(["size", "ppr p50 ms before / after", "cold first s before / after",
                   "retrieve peak MiB before / after", "recall@5 ppr before / after"],
                  [[f"{r['times']}×", f"{_f(r['before']['latency_ms']['ppr']['p50'], 0)} / "
                    f"{_f(r['latency_ms']['ppr']['p50'], 0)}",
                    f"{_f(r['before']['cold_first_s'], 2)} / {_f(r['cold_first_s'], 2)}",
                    f"{_f(r['before']['retrieve_cli']['peak_rss_mb'], 0)} / "
                    f"{_f(r['retrieve_cli']['peak_rss_mb'], 0)}",
                    f"{_f(r['before']['recall_at_5']['ppr'], 3)} / {_f(r['recall_at_5']['ppr'], 3)}"]
                   for r in compared]) if compared else ""
    parts = [f"### {data['queries']} questions (`{result.name}`)", *note, table(headers, rows)]
    return _with_plot("\n\n".join([*parts, *([pairs] if pairs else []), _when(result)]), result)


def marginal(results: list[Result]) -> str:
    """One table per run: the same batch's KB per CPU second at each size, for each code."""
    return _each(_marginal_one, results)


def _marginal_one(result: Result) -> str:
    data = result.data
    codes = [c for c in ("now", "before") if c in data["sizes"][0]]
    names = {"now": "this commit", "before": f"before ({data.get('compared_with', '?')})"}
    headers = ["size", "code", "one conversation: CPU s", "vs smallest", "batch: KB per CPU s",
               "vs smallest", "batch: CPU s", "batch: peak MiB", "batch: index bytes added per KB"]
    rows = [[f"{r['times']}×", names[c], _f(r[c]["one"]["cpu_seconds"], 1), _f(r[c]["one"]["vs_smallest"], 3),
             _f(r[c]["batch"]["kb_per_cpu_s"], 2), _f(r[c]["batch"]["vs_smallest"], 3),
             _f(r[c]["batch"]["cpu_seconds"], 1), _f(r[c]["batch"]["peak_rss_mb"], 0),
             _f(r[c]["batch"].get("index_bytes_per_kb", "-"), 0)]
            for r in data["sizes"] for c in codes]
    batch = data["batch"]
    head = (f"### One conversation ({batch['one_bytes'] / 1000:.1f} KB), then {batch['conversations']} "
            f"({batch['bytes'] / 1000:.0f} KB), into each size (`{result.name}`)")
    return "\n\n".join([head, table(headers, rows), _when(result)])


def density(results: list[Result]) -> str:
    """One table per run: bytes per KB of each family alone, then each size against its mix."""
    return _each(_density_one, results)


def _density_one(result: Result) -> str:
    data = result.data
    headers = ["index", "text KB", "index bytes per KB", "predicted by the size's mix", "actual / predicted"]
    rows = [[f"{name} alone", _f(f["text_bytes"] / 1000, 0), _f(f["index_bytes_per_kb"], 0), "", ""]
            for name, f in data["families"].items()]
    rows += [[f"{s['times']}×", _f(sum(s["text_bytes_by_family"].values()) / 1000, 0),
              _f(s["index_bytes_per_kb"], 0), _f(s["predicted_by_mix"], 0), _f(s["vs_mix"], 3)]
             for s in data["sizes"]]
    return "\n\n".join([table(headers, rows), _when(result)])


# -- any other shape -----------------------------------------------------------------------

def generic(result: Result) -> str:
    """A result file listed as stored: scalar fields in one line, records as tables."""
    data = result.data if isinstance(result.data, dict) else {"rows": result.data}
    scalars = {k: v for k, v in data.items() if _scalar(v) and k != "benchmark"}
    lines = [f"### `{result.name}`"]
    if scalars:
        lines.append("; ".join(f"{k}: {_cell(v)}" for k, v in scalars.items()))
    for key, value in data.items():
        if _scalar(value) or key == "machine":
            continue
        records = _records(value)
        if records:
            lines += [f"`{key}`:", records]
        else:
            lines.append(f"`{key}`: {_plain(value)[:300]}")
    if result.plot:
        lines.append(f"[plot]({result.plot})")
    return "\n\n".join(lines)


def _records(value: Any) -> str | None:
    """A table for a list of records or a mapping of records (one nesting level flattened)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        keyed = [("", v) for v in value]
    elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        keyed = list(value.items())
    else:
        return None
    flat = [(key, _flatten(record)) for key, record in keyed]
    headers = list(dict.fromkeys(h for _, record in flat for h in record))
    rows = [([key] if keyed[0][0] else []) + [_cell(record.get(h, "")) for h in headers]
            for key, record in flat[:ROW_LIMIT]]
    text = table((["key"] if keyed[0][0] else []) + headers, rows)
    more = f"\n\n(first {ROW_LIMIT} of {len(flat)} rows)" if len(flat) > ROW_LIMIT else ""
    return text + more


def _flatten(record: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict) and all(_scalar(v) for v in value.values()):
            out.update({f"{key} {k}": v for k, v in value.items()})
        else:
            out[key] = value if _scalar(value) else _plain(value)[:80]
    return out


# -- formatting ----------------------------------------------------------------------------

def table(headers: list[str], rows: Iterable[list[Any]]) -> str:
    """A GitHub-flavoured Markdown table of already formatted cells (pipes escaped)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _f(value: Any, digits: int) -> str:
    """A number with fixed decimals and thousands separators; empty for None."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    return f"{value:,.{digits}f}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return "" if value is None else str(value).replace("\n", " ")


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    return _cell(value)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _when(result: Result) -> str:
    data = result.data
    return f"_`{result.name}`, {data.get('when', 'undated')}._" if isinstance(data, dict) else ""


def _with_plot(text: str, result: Result) -> str:
    return f"{text}\n\n[plot]({result.plot})" if result.plot else text


def _recall_ks(record: dict) -> list[int]:
    return sorted(int(k.split("@")[1]) for k in record if k.startswith("recall@"))


def _ordered(methods: dict[str, Any]) -> list[tuple[str, Any]]:
    return sorted(methods.items(), key=lambda item: _method_key(item[0]))


def _method_key(name: str) -> tuple[int, int, str]:
    base, _, variant = name.replace("-noweights", " -weights").partition(" ")
    rank = METHOD_ORDER.index(base) if base in METHOD_ORDER else len(METHOD_ORDER)
    return (1 if variant else 0, rank, name)


def _method_label(name: str) -> str:
    return f"{name} ({PAPER_NAMES[name]})" if name in PAPER_NAMES else name


def _dataset(name: Any) -> str:
    return DATASET_NAMES.get(name, str(name))


def _dataset_key(name: Any) -> tuple[int, str]:
    order = list(DATASET_NAMES)
    return (order.index(name) if name in order else len(order), str(name))


def _dataset_then_name(result: Result) -> tuple:
    return (_dataset_key(_get(result, "dataset")), result.name)


def _get(result: Result, key: str, default: Any = None) -> Any:
    """A top-level field of a result, whatever the file holds."""
    return result.data.get(key, default) if isinstance(result.data, dict) else default


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _anchor(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _each(render_one: Callable[[Result], str], results: list[Result]) -> str:
    """Render file by file, so that one file of an unknown shape leaves the others' tables."""
    return "\n\n".join(_safely(lambda rs: render_one(rs[0]), [r]) for r in results)


def _safely(render_section: Renderer, results: list[Result]) -> str:
    try:
        return render_section(results)
    except SHAPE_ERRORS as exc:
        note = (f"_results_md cannot read this shape ({type(exc).__name__}: {exc}); the files are "
                "listed as stored. Update benchmarks/results_md.py._")
        return "\n\n".join([note, *(generic(r) for r in results)])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the output file is not current")
    parser.add_argument("--results", default=str(RESULTS), help="results folder (default: %(default)s)")
    parser.add_argument("--output", default=str(OUTPUT), help="file to write (default: %(default)s)")
    return parser


# -- the page ------------------------------------------------------------------------------

HEADER = """# Benchmark results

Generated by `python -m benchmarks.results_md` from the JSON files in
[`benchmarks/results/`](results/); do not edit by hand (a test checks this page is current).
Every number comes from a benchmark script run on the development machine: 2 x86-64 cores
without VNNI, shared with other jobs, 24 GiB, no GPU. Timings on shared cores are noisy: compare
ratios within one table, not absolute times across tables. Each table ends with its file and when
it was written."""

CACHE_NOTE = """**The answer cache.** Generated answers are cached in `benchmarks/results/cache/` (not in
git): `answers-*.jsonl` per data set, SLM, method and a fingerprint of the settings that shape
the prompt (`benchmarks/answer_accuracy.py`, shared by `suite` and `planner_eval`), `peers-*.jsonl`
per system (`benchmarks/peers.py`) and `planner-labels-*.jsonl` per data set
(`benchmarks/planner_labels.py`; a data set without one keeps its rows of the committed
`export/planner_labels.jsonl`). The scripts create the folder and fill it as they run, so on a
fresh clone they regenerate every answer (hours on 2 cores for the Qwen runs) and a rerun only
generates what is missing. `planner_eval` only reads the cache: it names the `answer_accuracy`
commands to run first. A cached answer keeps the prefill/decode times of the run that made it."""

SUITE_READING = """\
Recall separates the methods, answers do not: one answer is 1.7 points on 60 LiHua-World
questions and 2.5 on 40 2Wiki ones, and the 0.5B model's accuracy differences between methods are
within that noise. On the Pi 4 profile (1,536-token window, 768-token context) peak RSS stays
well within its 2,048 MiB budget."""

PEERS_READING = """\
edge-rag builds its index with rules in seconds where LightRAG spends an hour of SLM extraction
calls on 2 cores, and the 0.5B model mostly breaks LightRAG's extraction format ("LLM output
format error" in its log), so LightRAG's graph stays sparse: its graph modes (local, hybrid) find
little of the evidence, while naive and mix fall back on chunk vectors and match edge-rag's recall.
edge-rag answers faster (LightRAG spends an extra SLM call on keywords and a longer prompt) and
peaks lower (LightRAG needs the 4,096-token window). Where edge-rag loses: its index is
the larger on these small subsets (SQLite pages and three USearch files against sparse JSON
stores; the paper's 15 % saving is not reproduced at this size), and LightRAG's mix mode answers
as many questions or more. LightRAG's LiHua-World build overlapped other jobs for about 20 of its
68 minutes and its first queries for 5: those figures are inflated, though not by a factor that
changes the picture."""

RETRIEVAL_READING = """\
ppr (and auto, which mostly routes to it) has the best recall on every set; of the paper's methods
DR is best, and TR beats VR on LiHua-World's multi-hop questions at R@10. On LiHua-World the
-weights rows of LR, DR and TR are as good as or better than the weighted ones: ω_r from
co-occurrence counts favours the busiest pairs (Li Hua and her landlord), not the relevant ones;
on 2Wiki their R@5 is within 0.005 of them, and ppr is better with its weights. Measured alone on the
machine (name matching by one rapidfuzz `cdist` call), mean retrieval time per question was DR
27 ms / TR 67 ms on LiHua-World and DR 45 ms / TR 75 ms on 2Wiki."""

PLANNER_READING = """\
The head picks a method that works for most queries, but its context recall is about ppr's (the
best fixed method), not better, so the default planner is `names`, not the head. How the judges agree: on
LiHua-World the label from the answers matches the retrieval judge's on about a third of the
queries, and answers are right far more often when the context holds the evidence, so the
retrieval judge tracks what the SLM can use; on 2Wiki the 0.5B model's right answers are mostly
guesses between two names in the question, right more often when the context lacks the
evidence. Both `names` (the default) and the opt-in `margin` send the 94 2WikiMultihopQA
comparisons of titled documents to `titles` (auto 0.871 R@5 against ppr's 0.869, 11 % less mean
latency). `margin` also reads vector's search: on LiHua-World it sends the 63 of 228 questions
whose nearest chunk stands out to `titles`, with ppr's recall@5 (cross-validated threshold:
0.907 against 0.907) and 8 % less mean latency. On HotpotQA and MultiHop-RAG, where every
question needs two passages, the same threshold loses recall and cross-validation picks
"never": the default planner stays `names`."""

ANSWER_READING = """\
The focused stage with the 4-bit Qwen: Multi and Null questions score far above Single ones (a
yes/no or either-or answer, and abstention on evidence); exact match stays low because the model
answers with a phrase around the gold. Per-method comparisons with the int8 model are in the
history below.

2WikiMultihopQA's questions chain relations ("Where was the director of film X born?") or
compare two dates ("Which film came out first, A or B?"). Answered as a whole, the 1.5B was right
on 0.390 of 200 dev questions (halves 0.374 / 0.406) and the 0.5B on 0.320: either-or picks near
a coin toss (38 and 30 of 66), bridge questions 18 and 12 of 105. With the `hops` rule (ask the
inner link, then the rest about the name it gives), the `compare` rule (one when-answer per
option, the dates compared in code) and birth or death questions starting with a birth or death
date, the 1.5B answers 0.660 (halves 0.687 / 0.634; compared 57 of 71, bridge phrases 37 of 62)
and the 0.5B 0.515 (0.576 / 0.455), with `answer_rules_off = ["hops", "compare"]` as the "off"
runs. A bridge question costs two answers (about 6 s instead of 3 s for the 1.5B here), a
comparison two to four (about 11 s). No LiHua-World dev question is a bridge, a comparison or a
birth/death question: its figures are unchanged by construction. The rules were written looking
at the 200-question subset's answers only; on the other 200 dev questions (the `_limit400` runs
less that subset) the 1.5B goes from 0.340 to 0.635 (halves 0.358 / 0.324 to 0.684 / 0.590), as
much as on the subset, and from 0.365 to 0.648 on all 400. On 7 December "earned" and "got" joined
the verbs that end a bridge ("Which award the director of film X earned?"): 4 of the 400 questions
are split now (2 right more, 1 fewer): 0.650 on all 400, the subset unchanged at 0.660. The
1.5B's LiHua-World dev answers with `vector` are 0.429 (halves 0.411 / 0.448) against 0.449
with `auto`, and the 0.5B's 0.417: the bigger model is +0.012 over the smaller with `vector`,
+0.043 with `auto`."""

ANSWER_RULES_READING = """\
Runs of 6 December 2026 on a machine shared with three other jobs (load 15-25 on 2 cores): the
latencies are not comparable with other tables. 0.5B, vector, all 254 dev questions, each rule
switched off alone against the stage as it was (echo on, rest-of-copy on): every rule kept was
chosen on both halves (switched off, none answered more right on either half). Abstaining on
unsupported terms is worth 14 answers (false abstention 0.044 without it, 0.066 with), the forced
Yes/No start 11, the who-start 9, the quoted source words 7 (quote) and 5 (sentence), the
when-start 2; time, date, choice and bare change no answer here (LiHua has no either-or
questions; 2Wiki has 66). The echo rule (new: an answer that only repeats the question abstains)
turns 3 Null questions right and raises false abstention from 0.022 to 0.066 (8 echoing answers
to answerable questions, all wrong before). The rest-of-copy quote was dropped: off, it answered
one more on half B and none fewer on A; the `_final` run is the stage without it (dev 0.421,
halves 0.388 and 0.456). Not measured before the session ended: dated, names, span, open and
replies. The 0.5B's auto run (110 of 254, a fixed hash order) is a sample: compare it only on
the same questions (the side-by-side table).

The 1.5B (issue 44: does the bigger model need less help?), auto, all 254 dev questions, its base
answers those of `answer_accuracy` (seeded, dev 0.453 either way), on one core beside the 30x
scale build: no forced start and not the open mask was chosen off on both halves. Free answers
(who off) tie on dev (+1 on A, -1 on B); without the Yes/No start Multi drops 0.692 -> 0.615;
without the open mask dev drops 0.453 -> 0.441 and false abstention doubles (0.048 -> 0.097).
The 1.5B takes the same stage as the 0.5B (`answer_rules_off` stays empty in its profiles).
Not measured for the 1.5B: names, dated, span, replies, terms, date and the finish rules. The
evidence vectors of these runs were kept across questions, so a few prompts differ from `ask`'s
by the per-batch int8 activations of the embedder (now each question's evidence is embedded in
one call as the stage does)."""

GRAPH_READING = """\
The SLM extractor's run (30 conversations, int8 Qwen) is in the history below: the fast rules
give the denser and more useful graph at about 1/200 of the time."""

SLM_READING = """\
Against the native bar, side by side in one run on an AMD EPYC (AVX-512 VNNI, 1 thread,
`slm_speed_head_level.json`): with exporter version 5 (`q4h4` there: the LM head at accuracy
level 4) Qwen2.5-0.5B q4 decodes at 37–40 tok/s against llama.cpp's 27–30 (1.33–1.35×) and
prefills 1.5× as fast; Qwen2.5-1.5B q4 decodes at 14–17 tok/s against 15–18 (0.92–0.93×) and
prefills at parity, in 1.2 GB against 2.0. Exporter version 4's fp32-compute head (`q4`) took
40 % of a 1.5B decode step there (0.69–0.77×). With both cores (`slm_speed_amd_2threads.json`,
both runtimes at 2 threads) the 1.5B decodes 1.17–1.21× and prefills 1.18–1.28× as fast as
llama.cpp, the 0.5B 1.32–1.67× and 1.8–2.3×. On the Intel VM of the earlier files
llama-cpp-python's default native build dies of SIGILL in llama.cpp's AMX kernels: build it
without AMX (`benchmarks/slm_speed.py`'s docstring) before `--variants llama.cpp`.

The memory bus (`slm_speed_roofline.json`, 7 December 2026, the same AMD machine, 2 threads, 3
interleaved repeats): a decode step of the 1.5B reads 833 MB of weights here (the 4-bit layers and
LM head; the embedding rows are gathered) and 935 MB in llama.cpp (its Q6_K output layer). Two
threads stream 34.5 GB/s, so no runtime that reads those bytes once a token decodes the 1.5B faster
than 39.5 tok/s (35.2 for llama.cpp's file). Both runtimes read 18–23 GB/s while decoding (53–68 %
of the bus). Issue 44's bar, 1.5× llama.cpp, is 34–36 tok/s: 87–91 % of the bus for this
runtime's bytes. In this run the 1.5B decodes 1.06× llama.cpp at 315 prompt tokens and 0.94× at
1,014; the run of 02:30 gave 1.17× and 1.21×. The single repeats vary by up to 20 % (1.5B q4 at
1,014 tokens: 19.4 to 23.4 tok/s), so ratios below about 1.2 do not separate the two runtimes
on this shared VM. The 0.5B decodes 1.33–1.46× llama.cpp and prefills 1.8–1.9× as fast."""

MEMORY_READING = """\
The estimate is on the safe side for Qwen2.5-0.5B (its weight file is counted whole, but the
embedding rows a prompt never touches stay on disk) and close to or below the measured peak for
SmolLM2-135M on the Pi Zero profile (the graph retrievers' transient peak is not modelled
separately). The Pi Zero profile fits with `vector`: it answers within its 512 MiB (the table)."""

HISTORY = """\
Earlier runs, kept as text: their files came from graphs, schemas or options the current code no
longer has, or were renamed by hand, so `benchmarks/results/` keeps only the newest file each
script writes per data set (issue 47).

- **Scale, 1×–5×, memory-mapped walk against the code before it (2026-12-06, load 20–30).**
  `python -m benchmarks.scale --sizes 1,3,5 --compare <checkout of 9c04822>`: cold first `ppr`
  query before / after 3.18 / 1.93 s (1×), 3.85 / 1.04 s (3×), 10.29 / 1.17 s (5×); `retrieve`
  peak 147 / 147, 240 / 187, 324 / 221 MiB; ppr warm p50 100 / 91, 51 / 54, 78 / 60 ms; ppr
  recall@5 identical before and after (0.907, 0.890, 0.869); build KB per CPU-second 4.37, 4.89,
  4.72.
- **Answer accuracy, int8 optimum Qwen (2026-11-30).** LiHua-World, 60 type-stratified questions,
  plain stage: vector 0.183, dual 0.183 (Single 0.229), Multi and Null 0 for every method;
  2Wiki, 40 questions: none 0.200, vector 0.175, local 0.125, dual 0.125, topology 0.125, the
  -weights rows 0.125–0.175. Focused stage, 4-bit Qwen: LiHua-World all 248 questions 0.402
  (Single 0.332, Multi 0.692, Null 0.654; 2026-12-02), Multi only vector 0.692 / ppr 0.731; the
  100-question runs before and after issue 45 both 0.42; 2Wiki 200 questions 0.325 before the
  last focused-stage change.
- **Retrieval recall@5 by schema (2026-12-01).** LiHua-World vector 0.797, local 0.72–0.78, dual
  0.817–0.832, topology 0.80, ppr 0.845 (schema 2–3) → 0.883 (schema 5) → 0.907 with BM25 words;
  2Wiki vector 0.624–0.650, dual 0.657–0.663, ppr 0.678 → 0.867 with title links; migrated and
  fresh builds agreed within 0.005. HotpotQA sample vector 0.825, ppr 0.887. ppr's BM25 words:
  LiHua-World 0.874 → 0.907, 2Wiki unchanged (0.869); the `titles` shortcut on 94 2Wiki
  comparisons: R@5 0.869 → 0.871, mean latency 27.3 → 23.6 ms; ppr's one-pass vector decode left
  recall unchanged.
- **Index builds.** 2Wiki (6,119 passages, 9,976 chunks): 936 s at schema 4, 665 s before the
  worker split, 569 s before incremental relation vectors; LiHua-World (442 conversations) 209 s
  at schema 4, 222 s before incremental vectors; peak RSS 249–381 MiB.
- **SLM extraction (2026-11-30).** 30 conversations, 213 chunks, int8 Qwen 0.5B: 24.8 s a chunk
  on shared cores, 0 parse failures, 208 names → 207 entities, 43 relations.
- **SLM speed.** int8 optimum graph (prompt 300): SmolLM2 25.7 tok/s decode, Qwen 17.9; 4-bit
  Qwen before the GQA graph 28–38 tok/s decode; KV int8 and 64-blocks changed decode by under
  10 %; the stop-string runs 34–38 went from 35 to 85 tok/s for Qwen as the GQA graph landed.
- **Suite (2026-11-30, int8 Qwen, dev profile).** recall@5 LiHua-World vector 0.877, dual 0.857,
  auto 0.914; 2Wiki vector 0.613, dual 0.650, auto 0.669; the Pi Zero 2 W profile was refused up
  front (626 MiB estimated against its 512 MiB budget).
- **Others.** Encryption on 100 LiHua-World documents: build 1.15× plain, 0 of 50 phrases in the
  encrypted files. Prompt injection with the sources-are-data sentence always on: 15 of 64
  LiHua-World answers changed, followed share unchanged (3 of 30). The aarch64 (qemu) probe of the
  `[encrypt]` extra: encrypted retrieval equal to plain, a wrong key refused with one line.
  `auto_latency` with the margin planner, `answer_stage` on 12 questions (prefill ratio 0.45),
  `slm_options` and `slm_quality` variants of SmolLM2 and Qwen: superseded by the kept runs."""

OTHER_INTRO = """Result files whose shape `benchmarks/results_md.py` does not know yet, listed as stored."""

SECTIONS = [
    Section("The benchmark suite", ("suite_*.json",), """\
`python -m benchmarks.suite --profile P --dataset D --limit N`: for one device profile and one data
set, the profile's memory policy first (a profile that cannot fit is refused before anything
loads), the index built once per data set and index shape (`benchmarks/.indexes/`), then every
method and the -weights ablation on a type-stratified subset of the dev queries. Accuracy is
normalised containment of the gold answer (or an alias); R@k the share of a question's evidence
found in the top-k chunks (LiHua-World: conversations; 2Wiki: distinct supporting passages);
index MiB the bytes each method reads (vector: the chunk tables and `chunks.usearch`; graph
methods: the graph too). `auto` plans with the shipped head, which was trained on these dev
queries, so its row is optimistic (the cross-validated figures are in the planner section).""",
            suite, SUITE_READING),
    Section("Side by side with LightRAG", ("peers_*.json",), """\
`pip install -e '.[peers]'` then `python -m benchmarks.peers --dataset lihua` and
`python -m benchmarks.peers --dataset 2wiki --queries 4 --documents 10`: every system gets the same
subset (the questions' evidence documents plus their neighbours in corpus order), the same int8
MiniLM embedder and the same Qwen2.5-Coder-0.5B int8 SLM, each system in its own process.
LightRAG runs fully offline: edge-rag's SLM and embedder sit in its `llm_model_func` /
`embedding_func` hooks, the SLM's tokenizer replaces tiktoken, reranking is off, and a socket
guard turns any network access into an error. Its prompts need a 4,096-token window; its query
context is capped at 2,048 tokens (edge-rag's whole window in the dev profile). With a handful of
questions one answer moves accuracy by 10-25 points: the accuracy columns rank nothing.""",
            peers, PEERS_READING),
    Section("Retrieval methods", ("retrieval_*.json",), """\
`python -m benchmarks.retrieval [--dataset lihua|2wiki]`: evidence recall of every method on every
dev query with evidence, fast-extractor graph, no generation. LiHua-World: recall of the evidence
conversations among the documents of the top-k chunks; 2WikiMultihopQA: supporting-passage recall
among the first k distinct passages. Latencies were taken while other jobs shared the 2 cores:
compare them within one table only.""", retrieval, RETRIEVAL_READING),
    Section("Answer accuracy", ("answer_accuracy_*.json",), """\
`python -m benchmarks.answer_accuracy --dataset D --method M --limit N [--no-weights]`: the SLM's
answers with each retrieval method; correct = the normalised gold answer (or an alias) is
contained in the answer, spaces ignored; Null questions are correct when the answer says the
information is missing. Subsets are type-stratified (LiHua-World 60: 48 Single, 6 Multi,
6 Null). Containment is stricter than the LLM judge of the paper's tables: a paraphrased right
answer counts as wrong.""", answer_accuracy, ANSWER_READING),
    Section("Answer rules", ("answer_rules_*.json",), """\
`python -m benchmarks.answer_rules --dataset D --slm S --method M [--base-off RULES]`: the focused
answer stage with each of its rules (`edge_rag.answer.RULES`) switched off alone, on the dev
questions split into two fixed halves by a hash of their id. A rule is chosen on one half (kept
unless switching it off answers more right there) and its figure reported on the other, both
ways. Retrievals are cached per question and method, generations per prompt and constraint, so
every run of a model and data set answers the same questions from the same retrievals. The judge
is the accuracy benchmark's (normalised containment, Null questions need an abstention).""",
            answer_rules, ANSWER_RULES_READING),
    Section("Adaptive planner", ("planner_eval*.json", "planner_labels*.json", "planner_margin*.json",
                                 "auto_latency*.json"), """\
`python -m benchmarks.planner_labels` labels every dev query with the simplest method that works
(writes `export/planner_labels.jsonl`), `edge-rag export planner` trains the head on it, and
`python -m benchmarks.planner_eval` compares the plans with the labels and with every fixed
method. Every plan below is 5-fold cross-validated (made by a head that never saw the query);
the answer comparison reuses the cached answers of the fixed methods, plus the planner's own
time. `python -m benchmarks.planner_margin` measures the opt-in `margin` planner: where vector's
nearest chunk stands out, and the threshold cross-validated, on four corpora.""", planner, PLANNER_READING),
    Section("Vector retrieval and chunk size", ("vector_recall*.json", "sweep_*.json"), """\
`python -m benchmarks.vector_recall [--chunk-tokens N --chunk-overlap M]`: VR (eq. 7) on the
LiHua-World dev queries with evidence (Null excluded), int8 all-MiniLM-L6-v2. Recall@k is the
share of a query's evidence conversations among the documents of the top-k chunks. The chunk
size was tuned on these queries; the sweep runs used embedding batches of 32, the default run
batches of 8, which moves dynamic-int8 activations slightly.""", vector_recall),
    Section("Graph index build", ("graph_build_*.json",), """\
`python -m benchmarks.graph_build [--extractor fast|slm] [--subset 30] [--slm NAME]` on
LiHua-World. The 30-conversation subset is the evidence conversations of the first dev queries;
answer coverage is the share of its answerable dev queries whose gold answer appears in the
entity names (or anywhere in the graph text) linked to their evidence chunks. graph MiB counts
the graph tables of `index.sqlite`. The whole corpus (442 conversations) with the fast extractor
took 159 s (graph 99 s) alone on the machine: 3,452 entity names, 3,434 entities, 10,080
relations (measured once, not kept in a results file).""", graph_build, GRAPH_READING),
    Section("Small language models", ("slm_speed_*.json",), """\
`pip install 'edge-rag[llama]'` (llama-cpp-python, llama.cpp compiled for this CPU, about 9
minutes), then `python -m benchmarks.slm_speed --models qwen2.5-coder-0.5b qwen2.5-coder-1.5b
--variants q4 llama.cpp --prompt-tokens 300 1000`: each model and variant in its own process, the
same GGUF and prompt text, greedy decoding; prefill and decode in tokens per second, TTFT the time
to the first token; "× llama.cpp" divides by llama.cpp's speed at the same prompt length in the
same run. Files before issue 44 (runtime "node-llama-cpp ... prebuilt", or rows "llama.cpp
(MODELS.md)": figures copied from elsewhere) measured llama.cpp through prebuilt binaries that run
it about 1.7× slower than the native build on this CPU: their comparisons (2.2× on decode)
overstate edge-rag's lead. Timings vary by about 15 % between runs on this machine.""",
            slm_speed, SLM_READING),
    Section("Prompt lookup on answers", ("answer_decode_*.json",), """\
`python -m benchmarks.answer_decode --slm S --draft-tokens N [--output NAME]`: the focused answer
stage answers 60 type-stratified LiHua-World dev questions (`vector`) twice each, one token a call
and with N tokens drafted by prompt lookup (`edge_rag/models/lookup.py`), in alternating order
from an empty KV cache; abstentions are left out. "decode time ×" is stepwise over lookup decoding
time; answers can differ where a several-token call rounds a near tie the other way. Files
before 7 December 2026 were measured with exporter version 4's graphs.""", answer_decode),
    Section("Board SLMs", ("board_slm_*.json",), """\
`python -m benchmarks.board_slm --limit N`: each SLM with the profile's settings (budget lifted) in
its own process on the LiHua index, one warm-up answer, then N type-stratified dev questions
through `ask`; prefill is the answer prompt's, peak RSS the process's VmHWM, the estimate
`budget.py`'s for the same settings. Times depend on the machine's load (shared, 2 cores). A
profile's `threads` are capped at the cores the process may use: the rpi5 profile's 4 threads on
these 2 cores made the 1.5B's prefill 1.4x and its decode 2.2x as slow (`..._uncapped`).""",
            board_slm),
    Section("Export memory", ("export_memory_*.json",), """\
`python -m benchmarks.export_memory --name MODEL --label RUN -- edge-rag export slm ...`: the
export in its own process group under a watchdog that kills it above `--limit-gib` (8 here: the
machine is shared); peak RSS is the largest process's (`ru_maxrss`, or the largest sample when
killed). Since issue 44 the export checks the quantized model against fp32 one layer at a time
(`export/reference.py`) instead of holding the whole fp32 graph.""", export_memory),
    Section("Document formats and folder sync", ("formats.json", "folder_titles.json"), """\
`python -m benchmarks.formats`: a mixed folder written by the benchmark with the real libraries
(`benchmarks/sample_files.py`: fpdf2, pypdf, python-docx, `email`/`mailbox`), indexed format by
format into one index, each planted fact looked up top-1; an mbox read (not indexed) at N and 10 N
messages; a 10,000-file folder synced twice. `python -m benchmarks.folder_titles`: the 2Wiki
passages as one `.txt` each (title on the first line) against the JSONL records, both built fresh
in one run (before plain files got titles: ppr R@5 0.70 against 0.876).""", formats),
    Section("Memory budget", ("memory_*.json",), """\
`python -m benchmarks.memory`: each profile and method in a fresh process answering two
LiHua-World questions; the estimate of `edge_rag/budget.py` against the measured peak RSS
(VmHWM). The Pi Zero 2 W profile is measured with its budget lifted; `fits` says what the
budget check decides.""", memory, MEMORY_READING),
    Section("Serving", ("serve.json",), """\
`python -m benchmarks.serve`: `edge-rag serve` on loopback over a copy of the LiHua-World index,
chat clients (every other answer streamed) and retrieve clients at once; a 503 carries
`Retry-After`. The retrieve overhead pairs each question's library call with its HTTP call; the
`ask` peak is `benchmarks.memory`'s child in the same run; last, SIGTERM during a streamed answer.
The chat page in headless Chromium: [serve_chat_page.png](results/serve_chat_page.png).""", serve),


    Section("Hostile server", ("hostile_server.json",), """\
`python -m benchmarks.hostile_server`: issue 61's attacks on `edge-rag serve` over a fresh index of the
demo's conversations on 127.0.0.1, real HTTP: cross-origin and rebound requests, bombs (refused in at most
10 s with the server's RSS growing at most 300 MiB), an upload past its time limit, floods of `/health`
and of slow connections (the server started with a soft limit of 1,024 open files), a word of 2 MB, a
delete then `kill -9`, key files.""",
            hostile_server),
    Section("Encryption at rest", ("encryption_*.json",), """\
`python -m benchmarks.encryption [--docs N]`: LiHua-World conversations built into a plain and a
SQLCipher-encrypted index in one run (alternating: plain, encrypted, encrypted, plain); every file
of both searched for 50 distinctive corpus phrases; the CLI given a wrong and no key; every dev
question with evidence retrieved from both, alternating per question.""", encryption),
    Section("Scale: LiHua-World among distractors", ("scale*.json",), """\
`python -m benchmarks.scale [--build]`: LiHua-World's conversations, then 2Wiki, HotpotQA and
MultiHop-RAG texts, then generated chats, to 1×, 3×, 10× and 30× LiHua's size; each size built
from the one before (the stage's own KB/s and peak RSS), then measured in fresh processes: warm
p50 of `vector`, `ppr` and `auto` over the LiHua dev questions, the first `ppr` question of a new
process, the peak RSS of the `edge-rag retrieve` and `ask` commands, and recall@5 of the LiHua
evidence among the distractors. Timings are from a shared machine: compare sizes within a run.""", scale,
            """Rebuilt from empty on 7 December 2026 with `f631533` (AMD EPYC, 2 vCPUs; each stage
`python -m benchmarks.scale_build N PREVIOUS`, as `--build` runs them) and measured on the quiet
machine (`python -m benchmarks.scale --sizes 1,3,10,30`). Build text per CPU second is flat: 7.17,
7.40, 7.48 and 7.39 KB for the 1×, 3×, 10× and 30× stages (1.03× at 30×; wall 12.85 → 12.03 KB/s,
0.94×). The chain of 6 December (4.34 → 2.52 KB, an Intel VM) was built before that evening's
refresh changes (busy names' running summaries, a changed pair's mentions read by its keys):
it measured the old refresh. At 30× the stage's time goes to embedding chunks, names and
relations on the worker (57 % of samples), writing chunk vectors (19 %), waiting for relation
vectors (7 %) and reading changed pairs' mentions (3 %); at 1× 64 %, 12 %, 17 % and under 1 %. The
stage's peak RSS rises 271 → 754 MiB (the 30× stage is one `insert` of 13,615 documents), within
the rpi4 budget (2,048). Warm `ppr` p50 7.8 → 17.6 ms, the cold first query 0.12 → 0.37 s,
`retrieve` 139 → 217 MiB, `ask` 535 → 597 MiB, the rpi4 estimate 854 MB of 2,048. Recall@5 of the
LiHua evidence: `ppr` and `auto` 0.909 → 0.880 (−0.029), `vector` 0.795 → 0.772; 2Wiki dev
recall@5 among the same distractors stays 0.871-0.881 (`ppr`) and 0.641-0.650 (`vector`). At 30× the
chunk vectors stay below `vector_file_min` (262,144): earlier an HNSW file there found 45 % of the
exact top 10 (vector R@5 0.383). Index bytes per KB are higher above 1× because of what the text
is, not how large the index is: see the section after next."""),
    Section("Marginal build cost: the same text into every size", ("marginal_build*.json",), """\
`python -m benchmarks.scale_marginal [--compare PATH]`: generated chats that no size holds,
inserted into a copy of each scale index, each insert in a process of its own (the whole `insert`:
chunks, vectors, graph, walk files): 110 conversations of another world untimed (the index as
writes of this code leave it: candidate sets, busy names' running summaries and reusable walk
files in place), then one conversation (a synced file) and a batch of 110, timed. Unlike the scale
build's stages, every size gets the same text, so the ratio to the smallest size is the slow-down
due to the index's size alone. `--compare` runs the same with another checkout, side by side.""", marginal,
            """Measured on 7 December 2026 on the sizes rebuilt that day, quiet machine, beside `d7cff25`
(the code of `f631533`; `python -m benchmarks.scale_marginal --sizes 1,10,30 --repeat 3 --compare <worktree of
d7cff25>`). The batch of 110 conversations runs at 0.811× of 1× at 30× (0.771× with `d7cff25` in
the same run); one conversation into the 30× index takes 3.7 CPU s (3.9), 0.6 s at 1×. The change:
an insert keeps every chunk, so the walk's BM25 counts are the stored term-major postings with the
new chunks' merged in, not every posting sorted chunk-major and back (`lexical.py`; the same
arrays, checked on the 30× index against `d7cff25` and against a fresh derivation). Timed alone
on copies of the 30× index, five alternating runs, the walk's part of inserting one short
conversation fell from 1.96 to 1.42 CPU s (medians) and the whole insert from 2.58 to 2.05. What
still grows with the index: the rest of the walk files (the graph arrays read from SQLite and
the edges sorted, about 1.1 of those 1.42 s) and the graph's refresh. The index grows by 15,071
bytes per KB of the batch at 1× and 19,146 at 30× with either code: B-tree pages split where the
build left them packed. On 6 December (an Intel VM, `a26694a` against the commit before) the same
benchmark had given 0.807× and 0.788×."""),
    Section("Index bytes by kind of text", ("index_density*.json",), """\
`python -m benchmarks.scale_density`: each source family of the scale corpora alone, its first
documents up to LiHua-World's size, built into a fresh index; each built scale size's bytes per
KB (every file of its folder) against what its mix of families predicts from those figures. The
scale sizes' own bytes per KB move with their mix: encyclopaedic passages and generated chats
make more names and relations per KB than LiHua-World's chats.""", density,
            """Measured on 7 December 2026 (`python -m benchmarks.scale_density`) on the sizes rebuilt
that day. Alone, a KB of LiHua-World's chats makes 10,312 index bytes, a KB of the generated chats
13,345 (they name a person, a place or a time in nearly every line: 33 name mentions per KB
against LiHua-World's 17) and a KB of encyclopaedic passages 23,500-26,000. Every built size
holds 0.94-1.00 of the bytes per KB its mix predicts: 30× holds 13,812 bytes per KB where its mix
predicts 14,650. The encyclopaedic passages the 30× mix holds (3,387 KB of 2Wiki, HotpotQA and
MultiHop-RAG) make 86 MB alone: with every other KB at LiHua-World's 10,312 bytes, 30× would
hold 12,069 bytes per KB, 1.17× the 1× figure, so no index in which a KB of encyclopaedic text
costs more than a KB of chat can hold 30× at 1×'s bytes per KB. The scale sizes' bytes per KB
rise above 1× with what the text is, not with how large the index is."""),
    Section("Prompt injection", ("injection*.json",), """\
`python -m benchmarks.injection`: 30 documents with an instruction planted among ordinary facts
and 4 clean ones (`benchmarks/data/injection.json`), indexed with the 35 demo conversations; each
question asks for a fact of its document. *Followed*: the answer holds the string only obeying the
instruction produces. Variants: the commit before issue 45; today's stage without the guard
(`source_guard=false`: nothing withheld, so the prompt is the old one; chat-template tokens are
written out); today's stage. The guard's rules were written with this set at hand: the
`source_guard=false` row is the defence a new phrasing meets (the answer forms).""", injection),
]


if __name__ == "__main__":
    raise SystemExit(main())
