"""LLM verdicts: fold judged files into the store, and how often containment agrees with them.

    python -m benchmarks verdicts import FILE.out.jsonl [...] [--dataset lihua|2wiki] [--judge llm]
    python -m benchmarks verdicts agree [RESULTS.json ...]

``import`` reads each judge output with its input beside it (``X.in.jsonl``) and appends the
verdicts to ``benchmarks/results/verdicts/DATASET.jsonl`` (the data set is taken from the file
name, ``2wiki``/``wiki`` prefixes for 2Wiki, unless given); a pending list judged in full is
removed. ``agree`` re-judges the answers of answer_accuracy results files by containment as it
was before issue 60 (``before``) and as it is now (``after``) and prints, per file, both
containment accuracies, the LLM-judged one and each judge's agreement with the LLM verdicts;
the table goes to ``benchmarks/results/containment_agreement.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import string
from pathlib import Path

from benchmarks.core.answers import MISSING, judge
from benchmarks.core.datasets import DATASETS
from benchmarks.core.paths import RESULTS
from benchmarks.core.results import markdown_table, write_result
from benchmarks.core.verdicts import PENDING, add, agreement, llm_summary, read_judged

DEFAULT_RESULTS = ("answer_accuracy_qwen2.5-coder-0.5b-q4_auto-focused.json",
                   "answer_accuracy_qwen2.5-coder-1.5b-q4_auto-focused.json",
                   "answer_accuracy_2wiki-qwen2.5-coder-0.5b-q4_auto-focused_limit200.json")


def main(argv: list[str] | None = None) -> int:
    """Import verdicts or report containment's agreement with them."""
    args = _parser().parse_args(argv)
    if args.command == "import":
        for path in map(Path, args.files):
            dataset = args.dataset or ("2wiki" if re.match(r"(2wiki|wiki)", path.name) else "lihua")
            added = add(dataset, read_judged(path), args.judge)
            print(f"{path}: {added} verdicts added to {dataset}")
            pending = PENDING / path.name.replace(".out.jsonl", ".in.jsonl")
            if pending.is_file() and len(pending.read_text().splitlines()) == len(
                    path.read_text().splitlines()):
                pending.unlink()
        return 0
    rows = [_agree(RESULTS / name if not Path(name).is_file() else Path(name)) for name in args.files]
    headers = ["file", "judged", "llm", "contained_before", "contained_after", "agree_before",
               "agree_after"]
    print(markdown_table(headers, [[r[h] for h in headers] for r in rows]))
    print(f"wrote {write_result('containment_agreement', {'files': rows})}")
    return 0


def _agree(path: Path) -> dict:
    result = json.loads(path.read_text(encoding="utf-8"))
    questions = {q["id"]: q for q in DATASETS[result["dataset"]].queries()}
    rows = [dict(r) for r in result["answers"]]
    for row in rows:
        query = questions[row["id"]]
        row["after"] = judge(query, row["answer"])["correct"]
        row["before"] = any(contained_before(row["answer"], g, row["type"])
                            for g in query.get("aliases", [query["answer"]]))
    llm = llm_summary(rows, result["dataset"])
    judged = [r for r in rows if r["llm"] is not None]
    before, after = agreement(judged, "before"), agreement(judged, "after")
    return {"file": path.name, "judged": llm["judged"], "llm": llm["all"],
            "contained_before": _share(judged, "before"), "contained_after": _share(judged, "after"),
            "agree_before": before["share"], "agree_after": after["share"],
            "disagree_before": before, "disagree_after": after,
            "flips": [{"id": r["id"], "llm": r["llm"], "before": r["before"], "after": r["after"],
                       "answer": r["answer"][:160], "gold": r["gold"]}
                      for r in judged if r["before"] != r["after"]]}


def _share(rows: list[dict], key: str) -> float | None:
    return round(sum(r[key] for r in rows) / len(rows), 4) if rows else None


def contained_before(answer: str, gold: str, kind: str) -> bool:
    """Containment as answer_accuracy judged before issue 60: punctuation and every space
    dropped, so "no" is found in "nutrition" and a chat stamp never in words."""
    if kind == "Null":
        return MISSING.search(answer.lower()) is not None

    def compact(text: str) -> str:
        text = "".join(c for c in text.lower() if c not in set(string.punctuation))
        return "".join(w for w in text.split() if w not in {"a", "an", "the"})

    return compact(gold) in compact(answer)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    importing = sub.add_parser("import", help="fold judge outputs (*.out.jsonl) into the store")
    importing.add_argument("files", nargs="+", help="judge outputs, each beside its X.in.jsonl")
    importing.add_argument("--dataset", default=None, help="lihua or 2wiki (default: from the name)")
    importing.add_argument("--judge", default="llm", help="who judged (default: llm)")
    agree = sub.add_parser("agree", help="containment before/after against the LLM verdicts")
    agree.add_argument("files", nargs="*", default=list(DEFAULT_RESULTS),
                       help="answer_accuracy results (default: the committed 0.5B/1.5B baselines)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
