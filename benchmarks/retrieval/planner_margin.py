"""Vector's margin as ``auto``'s planner: where the nearest documents alone find what ``ppr`` finds.

    python -m benchmarks planner_margin [--datasets lihua,2wiki] [--folds 5] [--seeds 5]

For every dev question with evidence: the evidence recall at each k of the data set of ``ppr``,
of the margin planner's cheap route ``titles`` (the nearest chunks, one per document first;
documents named by title first) and of vector, the margin cos(top 1) − cos(top 5) of its
nearest chunks, and whether the ``margin`` planner walks regardless (the question names a
document title or orders two events). A threshold t sends to ``titles`` every other question
whose margin is at least t. The grid table gives, per t, how many questions are routed and what
they lose (ppr − titles recall, summed over the routed questions; negative where titles found
more). Cross-validation: the questions are split into ``--folds`` folds (``--seeds`` shuffles);
on the other folds the lowest grid threshold from which on no training question loses recall
at any k is picked and applied to the held-out fold. Reported: auto's cross-validated recall
and routes against ppr's, the thresholds picked, and ``auto`` as the index runs it with
``planner = "margin"`` at the default ``planner_margin``. Writes ``planner_margin.json``.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.core.datasets import DATASETS
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.engine import Engine
from edge_rag.plan import vector_margin
from edge_rag.questions import clauses, names_a_title

CHEAP = "titles"  # the margin planner's route G
GRID = tuple(round(0.02 * i, 2) for i in range(2, 16)) + (1.0,)


def main(argv: list[str] | None = None) -> int:
    """Measure every data set, print the tables and write the JSON."""
    args = _parser().parse_args(argv)
    result = {"grid": list(GRID), "folds": args.folds, "seeds": args.seeds, "datasets": {}}
    for name in args.datasets.split(","):
        rows = questions(name)
        result["datasets"][name] = {"queries": len(rows), "grid": grid_table(rows),
                                    "cv": cross_validate(rows, args.folds, args.seeds),
                                    "margin": margin_auto(rows)}
    _print(result)
    write_result("planner_margin", result, Settings.load(None, planner="margin"))
    return 0


def questions(name: str) -> list[dict]:
    """Per dev question: recall of vector, titles, ppr and auto (margin planner) by k, margin,
    must-walk, auto's method."""
    dataset = DATASETS[name]
    rows = []
    with Engine.open(dataset.index, create=False, progress=False, planner="margin") as engine:
        rag = EdgeRAG(engine)
        truth = dataset.recall(rag)
        for query in (q for q in dataset.queries() if q["evidence"]):
            found = {m: rag.retrieve(query["question"], m, top_k=2 * max(dataset.ks))
                     for m in ("vector", CHEAP, "ppr", "auto")}
            cosines = np.asarray([c.score for c in found["vector"].chunks], dtype=np.float32)
            walks = (names_a_title(query["question"], engine.titles)
                     or bool(clauses(query["question"])))
            rows.append({"recall": {m: {k: truth(r.chunks, query, k) for k in dataset.ks}
                                    for m, r in found.items()},
                         "margin": vector_margin(cosines), "walks": walks,
                         "auto": found["auto"].method})
    return rows


def _routed(rows: list[dict], threshold: float) -> list[dict]:
    return [r for r in rows if not r["walks"] and r["margin"] >= threshold]


def _loss(rows: list[dict], ks: list[int]) -> dict[int, float]:
    return {k: float(sum(r["recall"]["ppr"][k] - r["recall"][CHEAP][k] for r in rows)) for k in ks}


def grid_table(rows: list[dict]) -> list[dict]:
    """Per threshold: questions routed to ``titles``, recall they lose by k, the worst single loss."""
    out, ks = [], list(rows[0]["recall"]["ppr"])
    for t in GRID:
        routed = _routed(rows, t)
        worst = max((max(r["recall"]["ppr"][k] - r["recall"][CHEAP][k] for k in r["recall"]["ppr"])
                     for r in routed), default=0.0)
        out.append({"threshold": t, "routed": len(routed),
                    "loss": {k: round(v, 3) for k, v in _loss(routed, ks).items()}, "worst": round(worst, 3)})
    return out


def pick(rows: list[dict]) -> float:
    """The lowest grid threshold from which on no question of ``rows`` loses at any k."""
    ks = list(rows[0]["recall"]["ppr"])
    safe = [all(v <= 1e-9 for v in _loss(_routed(rows, t), ks).values()) for t in GRID]
    return next(t for i, t in enumerate(GRID) if all(safe[i:]))


def cross_validate(rows: list[dict], folds: int, seeds: int) -> dict:
    """Auto's held-out-fold recall by k and routes, per shuffle, and the thresholds picked."""
    ks = list(rows[0]["recall"]["ppr"])
    runs = []
    for seed in range(seeds):
        order = np.random.default_rng(seed).permutation(len(rows))
        recall = {k: 0.0 for k in ks}
        routed, picked = 0, []
        for fold in np.array_split(order, folds):
            held = set(fold.tolist())
            t = pick([rows[i] for i in order if i not in held])
            picked.append(t)
            for i in held:
                cheap = not rows[i]["walks"] and rows[i]["margin"] >= t
                routed += cheap
                for k in ks:
                    recall[k] += rows[i]["recall"][CHEAP if cheap else "ppr"][k]
        runs.append({"seed": seed, "thresholds": picked, "routed": routed,
                     "recall": {k: round(v / len(rows), 4) for k, v in recall.items()}})
    return {"runs": runs, "ppr": _mean_recall(rows, "ppr"), "cheap": _mean_recall(rows, CHEAP),
            "vector": _mean_recall(rows, "vector")}


def margin_auto(rows: list[dict]) -> dict:
    """``auto`` as the index runs it with the margin planner: routes and recall by k."""
    methods = [r["auto"] for r in rows]
    routes = {m: methods.count(m) for m in sorted(set(methods))}
    return {"routes": routes, "recall": _mean_recall(rows, "auto")}


def _mean_recall(rows: list[dict], method: str) -> dict:
    ks = rows[0]["recall"][method]
    return {k: round(float(np.mean([r["recall"][method][k] for r in rows])), 4) for k in ks}


def _print(result: dict) -> None:
    for name, data in result["datasets"].items():
        ks = list(data["cv"]["ppr"])
        print(f"\n{name}: {data['queries']} questions")
        print(markdown_table(["threshold", "routed", *(f"loss@{k}" for k in ks), "worst"],
                             [[g["threshold"], g["routed"], *g["loss"].values(), g["worst"]]
                              for g in data["grid"]]))
        runs = data["cv"]["runs"]
        print(markdown_table(["", "routed", *(f"recall@{k}" for k in ks)],
                             [[f"CV seed {r['seed']} (t {', '.join(map(str, r['thresholds']))})",
                               r["routed"], *r["recall"].values()] for r in runs]
                             + [["ppr", 0, *data["cv"]["ppr"].values()],
                                [CHEAP, data["queries"], *data["cv"]["cheap"].values()],
                                ["vector", "", *data["cv"]["vector"].values()],
                                [f"auto, margin {Settings().planner_margin} ({data['margin']['routes']})", "",
                                 *data["margin"]["recall"].values()]]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks planner_margin", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="lihua,2wiki", help="comma-separated data sets")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds")
    parser.add_argument("--seeds", type=int, default=5, help="shuffles of the folds")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
