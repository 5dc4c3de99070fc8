"""Planner training labels (§3.3): every method on every dev query, label = the simplest that works.

    python -m benchmarks planner_labels [--datasets lihua,2wiki,hotpotqa,multihop] [--no-slm]

Judges, in the order A < B < C < D < E < F (none, vector, local, dual, topology, and ``ppr``,
beyond the paper, last so that ties still go to the paper's methods):

- **A** by the answer judge: the SLM alone (method ``none``) gives the gold answer (normalised
  containment), on the data sets whose facts a model can know (Wikipedia: 2wiki, hotpotqa; the
  LiHua chats are private and MultiHop-RAG's news postdate the model, so no query there earns A).
  A guess is not knowledge: yes/no golds and golds that appear in the question ("X or Y?")
  never earn A; nor does an abstention.
- **B–E** by the retrieval judge (no generation): the method's context (``top_k`` chunks) holds
  the most gold evidence any of the four methods reaches; ties go to the simplest.
- No method reaches any evidence (and A failed): the data set's prior, single-hop → C,
  multi-hop → E, as the paper does.

Writes ``export/planner_labels.jsonl`` (question, data set, label, judge, the cheap planner
features against that data set's index, every method's evidence recall and retrieval latency;
one part per data set is kept in ``benchmarks/results/cache/``, which is not in git: a data set
without a part keeps its rows of the existing labels file) and
``benchmarks/results/planner_labels.json`` (label distribution per data set). SLM answers are
cached (see answer_accuracy), retrieval is rerun (it is cheap).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from benchmarks.core.answers import answer_all, normalise
from benchmarks.core.datasets import DATASETS, Dataset, open_engine
from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.engine import Engine
from edge_rag.plan import LABELS, METHOD_OF_LABEL
from edge_rag.plan.features import FEATURE_VERSION, cheap_features
from edge_rag.retrieve import Retrieval

LABELS_FILE = ROOT / "export" / "planner_labels.jsonl"
RETRIEVAL_LABELS = LABELS[1:]
WORLD_KNOWLEDGE = ("2wiki", "hotpotqa")
PARTS = ROOT / "benchmarks" / "results" / "cache"


def label_queries(dataset: Dataset, slm: str | None) -> list[dict]:
    """One labelled row per dev query of the data set."""
    rows = []
    with open_engine(dataset, as_is=False, **({"slm": slm} if slm else {})) as engine:
        rag = EdgeRAG(engine)
        recall = dataset.recall(rag)
        queries = dataset.queries()
        knowable = [q for q in queries if _knowable(q)] if slm and dataset.name in WORLD_KNOWLEDGE else []
        alone = {r["id"]: r["correct"] for r in answer_all(rag, dataset.name, knowable, "none", slm)}
        for query in queries:
            found, latency = retrieve_all(rag, query["question"])
            recalls = {label: recall(r.chunks, query, rag.settings.top_k) for label, r in found.items()}
            label, judge = choose_label(alone.get(query["id"], False), recalls, dataset.multi_hop(query))
            rows.append({"dataset": dataset.name, "id": query["id"], "question": query["question"],
                         "type": query["type"], "label": label, "judge": judge,
                         "recall": {k: round(v, 4) for k, v in recalls.items()},
                         "latency_ms": {k: round(v, 1) for k, v in latency.items()},
                         "feature_version": FEATURE_VERSION,
                         "cheap": [round(v, 4) for v in cheap_features(query["question"],
                                                                       engine.names.get()).tolist()]})
    return rows


def retrieve_all(rag: EdgeRAG, question: str) -> tuple[dict[str, Retrieval], dict[str, float]]:
    """Every retrieval label's result for a question, and its wall time in milliseconds."""
    found, latency = {}, {}
    for label in RETRIEVAL_LABELS:
        start = time.perf_counter()
        found[label] = rag.retrieve(question, METHOD_OF_LABEL[label])
        latency[label] = (time.perf_counter() - start) * 1000
    return found, latency


def add_labels(dataset: Dataset, labels: list[str]) -> list[dict]:
    """The data set's labelled rows with some methods (re)measured and the label chosen again.

    The index is used as it is (nothing indexed), the other methods' recalls and the answer
    judge's verdict (an "A" label) are kept; the cheap features are computed again (this
    runtime's ``FEATURE_VERSION``).
    """
    rows = _labelled(dataset.name, LABELS_FILE)
    queries = {q["id"]: q for q in dataset.queries()}
    with Engine.open(dataset.index, create=False, progress=False) as engine:
        rag = EdgeRAG(engine)
        recall = dataset.recall(rag)
        for row in rows:
            query = queries[row["id"]]
            row["feature_version"] = FEATURE_VERSION
            features = cheap_features(query["question"], engine.names.get())
            row["cheap"] = [round(v, 4) for v in features.tolist()]
            for label in labels:
                start = time.perf_counter()
                found = rag.retrieve(query["question"], METHOD_OF_LABEL[label])
                row.setdefault("latency_ms", {})[label] = round((time.perf_counter() - start) * 1000, 1)
                row["recall"][label] = round(recall(found.chunks, query, rag.settings.top_k), 4)
            row["label"], row["judge"] = choose_label(row["judge"] == "answer", row["recall"],
                                                      dataset.multi_hop(query))
    return rows


def _knowable(query: dict) -> bool:
    gold = normalise(query["answer"])
    return gold not in {"yes", "no"} and gold not in normalise(query["question"])


def choose_label(alone_correct: bool, recalls: dict[str, float], multi_hop: bool) -> tuple[str, str]:
    """The simplest label that works, and which judge decided it (see module docstring)."""
    if alone_correct:
        return "A", "answer"
    best = max(recalls.values())
    if best > 0:
        return next(k for k in RETRIEVAL_LABELS if recalls.get(k, 0.0) >= best - 1e-9), "retrieval"
    return ("E" if multi_hop else "C"), "prior"


def main(argv: list[str] | None = None) -> int:
    """Label the dev queries of the chosen data sets and write the labels file."""
    args = _parser().parse_args(argv)
    PARTS.mkdir(parents=True, exist_ok=True)
    for name in args.datasets.split(","):
        if args.add:
            part = add_labels(DATASETS[name], args.add.split(","))
        else:
            part = label_queries(DATASETS[name], None if args.no_slm else args.slm)
        (PARTS / f"planner-labels-{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
    rows = [row for name in DATASETS for row in _labelled(name, Path(args.output))]
    Path(args.output).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    summary = {name: dict(Counter(r["label"] for r in rows if r["dataset"] == name))
               for name in dict.fromkeys(r["dataset"] for r in rows)}
    judges = dict(Counter(r["judge"] for r in rows))
    print(markdown_table(["dataset", "queries", *LABELS],
                         [[n, sum(c.values()), *(c.get(k, 0) for k in LABELS)] for n, c in summary.items()]))
    print(f"judges: {judges}; wrote {args.output}")
    write_result("planner_labels", {"labels": summary, "judges": judges, "slm": args.slm,
                                    "feature_version": FEATURE_VERSION},
                 Settings.load(None, **({} if args.no_slm or not args.slm else {"slm": args.slm})))
    return 0


def _labelled(name: str, output: Path) -> list[dict]:
    """A data set's rows: its part in the cache, or (the cache is not in git) the labels file's."""
    part = PARTS / f"planner-labels-{name}.jsonl"
    if part.is_file():
        return [json.loads(line) for line in part.read_text().splitlines()]
    kept = output.read_text(encoding="utf-8").splitlines() if output.is_file() else []
    return [row for row in map(json.loads, kept) if row["dataset"] == name]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks planner_labels", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="lihua,2wiki,hotpotqa,multihop",
                        help="comma-separated data sets to (re)label; the labels file joins every "
                        "data set labelled so far (default: %(default)s)")
    parser.add_argument("--slm", default="qwen2.5-coder-0.5b-int8", help="SLM for the A judge")
    parser.add_argument("--no-slm", action="store_true", help="skip the A judge (no generation)")
    parser.add_argument("--add", default=None, metavar="LABELS",
                        help="only (re)measure these labels' methods (e.g. F) on the rows labelled "
                        "so far, using each index as it is, refresh their cheap features and choose "
                        "the labels again")
    parser.add_argument("--output", default=str(LABELS_FILE), help="labels file (default: %(default)s)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
