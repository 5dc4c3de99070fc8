"""Write ``benchmarks/RESULTS.md`` from the results JSON in ``benchmarks/results/``.

    python -m benchmarks.results_md            # rewrite benchmarks/RESULTS.md
    python -m benchmarks.results_md --check    # exit 1 when the committed file is stale

Every result file a benchmark writes is rendered here: the shapes this module knows get
their own tables; any other JSON file (a new benchmark, or a known one whose shape changed) is
listed as stored (its scalar fields, and a table for every list or mapping of records), so a
new result shows up before anyone writes a renderer for it and nothing breaks.
The prose is Markdown in ``benchmarks/notes/``: a section's note (named after its renderer) holds
its introduction, then ``<!-- tables -->`` where the tables go, then its dated reading; links in
a note are relative to ``benchmarks/``, where RESULTS.md is. The output depends only on the files,
so a test can check that the committed page is current.
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

from benchmarks.core.paths import RESULTS
from benchmarks.core.results import STAMP_KEYS

OUTPUT = RESULTS.parent / "RESULTS.md"
NOTES = RESULTS.parent / "notes"
TABLES = "<!-- tables -->"
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
    """A part of RESULTS.md: the files it claims (glob patterns) and the renderer of their tables;
    its prose is the note ``benchmarks/notes/<renderer>.md``."""

    title: str
    patterns: tuple[str, ...]
    render: Renderer

    def text(self, results: list[Result]) -> str:
        """The note with the tables where it says ``<!-- tables -->``: the introduction above (the
        command and what is measured), the reading below (what the tables say, as of their dates)."""
        intro, _, reading = note(self.render.__name__).partition(f"\n\n{TABLES}")
        return f"{intro}\n\n{_safely(self.render, results)}{reading}"


def note(name: str) -> str:
    """The Markdown of ``benchmarks/notes/NAME.md``, without its final newline."""
    return (NOTES / f"{name}.md").read_text(encoding="utf-8").rstrip("\n")


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
            parts.append((section.title, section.text(mine)))
    others = [r for r in files if r.name not in claimed]
    if others:
        parts.append(("Other results", note("other") + "\n\n" + "\n\n".join(generic(r) for r in others)))
    parts.append(("History", note("history")))
    contents = "\n".join(f"- [{title}](#{_anchor(title)})" for title, _ in parts)
    body = "\n\n".join(f"## {title}\n\n{text}" for title, text in parts)
    return f"{note('header')}\n\n{contents}\n\n{note('cache')}\n\n{body}\n"


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
    detail = table(["data set", "questions", "method", "accuracy", "LLM-judged (judged)", "exact", "F1",
                    "retrieve ms", "prefill ms", "decode ms", "from cache", "file"],
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
    llm = data.get("llm_judged") or {}
    judged = f"{_f(llm.get('all'), 3)} ({llm['judged']})" if llm.get("judged") else ""
    return [_dataset(data.get("dataset", "lihua")), s["queries"], _staged(data), _f(s["accuracy"], 3), judged,
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
                         "(`python -m benchmarks auto_latency`).", _when(result)])


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
    """Peak RSS of each export run under the watchdog (the export_memory benchmark)."""
    return _each(_export_memory_one, results)


def _export_memory_one(result: Result) -> str:
    runs = result.data["runs"]
    rows = [[label, _f(r["peak_rss_gib"], 2), _f(r["seconds"], 0), r["exit_status"],
             "killed" if r["killed"] else "", f"`{r['command']}`"] for label, r in runs.items()]
    notes = [f"{key.replace('_', ' ')}: {value}" for key, value in result.data.items()
             if key not in (*STAMP_KEYS, "runs")]
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
    """The format benchmark: per format, planted facts, mbox memory, sync."""
    return _each(_formats_one, results)


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


def dialogue(results: list[Result]) -> str:
    """Two-turn dialogues: follow-ups and topic switches against the same questions asked alone."""
    return _each(_dialogue_one, results)


def _dialogue_one(result: Result) -> str:
    data = result.data
    keys = ("turn1_accuracy", "turn2_accuracy", "full_accuracy", "ratio", "turn2_recall@5", "full_recall@5",
            "resolved_share")
    rows = [[name, s["dialogues"], *(_f(s[k], 3) for k in keys), _f(s["added_ms"]["p50"], 0),
             _f(s["added_retrieval_ms"]["p50"], 1)] for name, s in data["summary"].items()]
    kinds = [[name, kind, k["dialogues"], _f(k["turn2"], 3), _f(k["full"], 3)]
             for name, s in data["summary"].items() for kind, k in s["by_kind"].items()]
    head = (f"### {data['slm']}, {data['method']}, through {data['via']}"
            f"{' (turn 1 and full answers reused)' if data.get('reused') else ''} (`{result.name}`)")
    return "\n\n".join([head, table(["set", "dialogues", "turn 1", "turn 2", "alone", "turn 2 / alone",
                                      "R@5 turn 2", "R@5 alone", "resolved", "added p50 ms",
                                      "added retrieval p50 ms"], rows),
                         table(["set", "kind", "dialogues", "turn 2", "alone"], kinds), *_dialogue_llm(data),
                         _when(result)])


def _dialogue_llm(data: dict) -> list[str]:
    """The LLM judge's figures of a dialogue run, when its answers were judged."""
    llm = data.get("llm_judged")
    if not llm:
        return []
    rows = [[name, s["judged"], s["unjudged"], _f(s["turn2"], 3), _f(s["full"], 3), _f(s["ratio"], 3)]
            for name, s in llm.items()]
    return ["LLM-judged (`benchmarks/results/verdicts/dialogue_lihua.jsonl`):",
            table(["set", "judged", "unjudged", "turn 2", "alone", "turn 2 / alone"], rows)]


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


def retired(results: list[Result]) -> str:
    """The files of retired benchmarks: 2Wiki as a folder in its table, the others as stored."""
    return _each(lambda r: _titles_one(r) if r.name.startswith("folder_titles") else generic(r), results)


# -- any other shape -----------------------------------------------------------------------

def generic(result: Result) -> str:
    """A result file listed as stored: scalar fields in one line, records as tables."""
    data = result.data if isinstance(result.data, dict) else {"rows": result.data}
    scalars = {k: v for k, v in data.items() if _scalar(v) and k not in STAMP_KEYS}
    lines = [f"### `{result.name}`"]
    if scalars:
        lines.append("; ".join(f"{k}: {_cell(v)}" for k, v in scalars.items()))
    for key, value in data.items():
        if _scalar(value) or key in STAMP_KEYS:
            continue
        records = _records(value)
        if records:
            lines += [f"`{key}`:", records]
        else:
            lines.append(f"`{key}`: {_plain(value)[:300]}")
    if result.plot:
        lines.append(f"[plot]({result.plot})")
    return "\n\n".join([*lines, _when(result)])


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
    """The file's name, date and commit: ``(git log)`` marks a commit recorded after the run (the
    commit that last changed the file), ``+ changes`` a run on a tree with uncommitted changes."""
    data = result.data
    if not isinstance(data, dict):
        return ""
    commit = data.get("commit")
    marks = " (git log)" if data.get("commit_source") else " + changes" if data.get("commit_dirty") else ""
    at = f", commit `{commit[:7]}`{marks}" if isinstance(commit, str) else ""
    return f"_`{result.name}`, {data.get('when', 'undated')}{at}._"


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


# -- the page: titles and the files each part claims; the prose is in benchmarks/notes/ --------

SECTIONS = [
    Section("The benchmark suite", ("suite_*.json",), suite),
    Section("Side by side with LightRAG", ("peers_*.json",), peers),
    Section("Retrieval methods", ("retrieval_*.json",), retrieval),
    Section("Answer accuracy", ("answer_accuracy_*.json",), answer_accuracy),
    Section("Answer rules", ("answer_rules_*.json",), answer_rules),
    Section("Adaptive planner", ("planner_eval*.json", "planner_labels*.json", "planner_margin*.json",
                                 "auto_latency*.json"), planner),
    Section("Vector retrieval and chunk size", ("vector_recall*.json", "sweep_*.json"), vector_recall),
    Section("Graph index build", ("graph_build_*.json",), graph_build),
    Section("Small language models", ("slm_speed_*.json",), slm_speed),
    Section("Prompt lookup on answers", ("answer_decode_*.json",), answer_decode),
    Section("Board SLMs", ("board_slm_*.json",), board_slm),
    Section("Export memory", ("export_memory_*.json",), export_memory),
    Section("Document formats and folder sync", ("formats.json",), formats),
    Section("Memory budget", ("memory_*.json",), memory),
    Section("Serving", ("serve.json",), serve),
    Section("Hostile server", ("hostile_server.json",), hostile_server),
    Section("Encryption at rest", ("encryption_*.json",), encryption),
    Section("Scale: LiHua-World among distractors", ("scale*.json",), scale),
    Section("Marginal build cost: the same text into every size", ("marginal_build*.json",), marginal),
    Section("Index bytes by kind of text", ("index_density*.json",), density),
    Section("Prompt injection", ("injection*.json",), injection),
    Section("Dialogue: follow-up questions", ("dialogue_*.json",), dialogue),
    Section("Retired one-offs", ("answer_stage_*.json", "storage_*.json", "gqa_node_*.json",
                                 "slm_profile*.json", "slm_options_*.json", "decode_context*.json",
                                 "folder_titles*.json", "long_line*.json"), retired),
]


if __name__ == "__main__":
    raise SystemExit(main())
