"""Abstention on the question's unsupported terms: every threshold, and halves cross-validated.

    python -m benchmarks abstention [--slm qwen2.5-coder-0.5b-q4] [--method vector]

Reads the cached answers of ``answer_accuracy`` (all LiHua-World dev questions, the
default profile's focused stage): each holds the question's terms no chosen evidence line matches
(``Answer.details["unsupported"]``; empty for yes/no and either-or questions) and the abstention
reason. For every ``abstain_terms`` threshold it reports recall of abstention on Null questions,
false abstention on answerable ones and precision; then each half of the questions (odd and even
position in id order) picks the threshold with the best recall at false abstention <= 0.08, and
is measured on the other half.
"""

from __future__ import annotations

import argparse

from benchmarks.core.answers import cache_path, load_cache
from benchmarks.core.datasets import DATASETS
from benchmarks.core.results import markdown_table, write_result
from edge_rag import Settings

BOUND = 0.08
OTHER_REASONS = ("date not in sources", "no evidence")


def rates(rows: list[dict], terms: int) -> dict:
    """Recall (Null), false abstention (answerable) and precision at one threshold."""
    said = [r for r in rows if abstains(r, terms)]
    nulls = [r for r in rows if r["type"] == "Null"]
    right = sum(r["type"] == "Null" for r in said)
    answerable = len(rows) - len(nulls)
    return {"abstain_terms": terms, "abstained": len(said),
            "recall": round(right / max(len(nulls), 1), 4),
            "false_abstention": round((len(said) - right) / max(answerable, 1), 4),
            "precision": round(right / len(said), 4) if said else None}


def abstains(row: dict, terms: int) -> bool:
    """Whether the question is abstained on at this threshold (other evidence rules included)."""
    return row.get("abstain") in OTHER_REASONS or len(row.get("unsupported") or []) >= terms


def pick(rows: list[dict]) -> int:
    """The threshold with the best recall whose false abstention stays within BOUND."""
    fine = [rates(rows, k) for k in range(1, 12)]
    fine = [r for r in fine if r["false_abstention"] <= BOUND]
    return max(fine, key=lambda r: (r["recall"], r["abstain_terms"]))["abstain_terms"] if fine else 99


def main(argv: list[str] | None = None) -> int:
    """Print the threshold table and the cross-validated choice, write JSON."""
    args = _parser().parse_args(argv)
    settings = Settings.load(None, slm=args.slm or Settings().slm)
    queries = sorted(DATASETS["lihua"].queries(), key=lambda q: int(q["id"]))
    cache = load_cache(cache_path("lihua", settings.slm, args.method, settings))
    missing = [q["id"] for q in queries if q["id"] not in cache]
    if missing:
        raise SystemExit(f"{len(missing)} answers not cached: run python -m benchmarks answer_accuracy first")
    rows = [{**cache[q["id"]], "type": q["type"]} for q in queries]
    table = [rates(rows, k) for k in range(1, 9)]
    halves = [rows[0::2], rows[1::2]]
    folds = []
    for train, test in ((0, 1), (1, 0)):
        k = pick(halves[train])
        folds.append({"train_half": train, "abstain_terms": k, "train": rates(halves[train], k),
                      "test": rates(halves[test], k)})
    headers = ["abstain_terms", "abstained", "recall", "false_abstention", "precision"]
    print(markdown_table(headers, [[r[h] for h in headers] for r in table]))
    for fold in folds:
        print(f"half {fold['train_half']} picks {fold['abstain_terms']}: other half {fold['test']}")
    payload = {"dataset": "lihua", "slm": settings.slm, "method": args.method,
               "setting": settings.abstain_terms, "thresholds": table, "folds": folds}
    print(f"wrote {write_result('abstention_lihua', payload, settings)}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slm", default=None, help="exported SLM folder name (default: the profile's)")
    parser.add_argument("--method", default="vector", help="retrieval method of the cached answers")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
