"""LLM verdicts on answers, kept beside the results so that a judged run is reproducible.

The store is ``benchmarks/results/verdicts/DATASET.jsonl``: one line per (question id, answer
sha) with ``correct`` and ``judge`` (who judged it: an LLM following
/work/shared/eval/judge.md). ``answer_sha`` is ``sha1(answer text, utf-8)[:16]``, so a verdict
applies to exactly the answer it read. Answers without a verdict are written as judge input
files (JSON lines ``i, id, answer_sha, question, gold, type, answer``): a pending list under
``benchmarks/results/verdicts/pending/`` and, with ``--judge-dir``, a copy where judges read.
Their ``*.out.jsonl`` (``{"i", "correct"}`` lines, ``id`` and ``answer_sha`` optional) are
folded back with ``python -m benchmarks verdicts import FILE.out.jsonl ...``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from benchmarks.core.datasets import half
from benchmarks.core.paths import RESULTS

STORE = RESULTS / "verdicts"
PENDING = STORE / "pending"
KINDS = ("Single", "Multi", "Null")


def answer_sha(answer: str) -> str:
    """The key of an answer's text: the first 16 hex digits of its sha1."""
    return hashlib.sha1(answer.encode("utf-8")).hexdigest()[:16]


def store_path(dataset: str) -> Path:
    """The verdict file of a data set (``lihua``, ``2wiki``, ...)."""
    return STORE / f"{dataset}.jsonl"


def load(dataset: str) -> dict[tuple[str, str], dict]:
    """Every verdict of a data set by (question id, answer sha); the last line of a key wins."""
    path = store_path(dataset)
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {(r["id"], r["answer_sha"]): r for r in rows}


def add(dataset: str, verdicts: Iterable[dict], judge: str) -> int:
    """Append the verdicts not already stored (same key, same verdict); how many were added."""
    have = load(dataset)
    new = []
    for v in verdicts:
        key = (str(v["id"]), v["answer_sha"])
        row = {"id": key[0], "answer_sha": key[1], "correct": bool(v["correct"]),
               "judge": v.get("judge", judge)}
        if have.get(key, {}).get("correct") != row["correct"]:
            have[key] = row
            new.append(row)
    STORE.mkdir(parents=True, exist_ok=True)
    with open(store_path(dataset), "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in new)
    return len(new)


def read_judged(out_file: Path) -> list[dict]:
    """A judge's output joined with its input beside it (``X.out.jsonl`` and ``X.in.jsonl``) by
    ``i``; a line whose ``answer_sha`` disagrees with its input's is an error."""
    inputs = [json.loads(line) for line in Path(str(out_file).replace(".out.jsonl", ".in.jsonl"))
              .read_text(encoding="utf-8").splitlines() if line]
    joined = []
    for line in out_file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        out = json.loads(line)
        source = inputs[out["i"]]
        if out.get("answer_sha", source["answer_sha"]) != source["answer_sha"] or \
                source["answer_sha"] != answer_sha(source["answer"]):
            raise ValueError(f"{out_file}: line {out['i']} judged another answer than its input's")
        joined.append({"id": source["id"], "answer_sha": source["answer_sha"],
                       "correct": out["correct"], **({"judge": out["judge"]} if "judge" in out else {})})
    return joined


def judge_input(rows: list[dict], questions: dict[str, dict]) -> list[dict]:
    """Judge input lines for answer rows (``id, answer, type``); 2Wiki's aliases joined by " | "."""
    lines = []
    for i, row in enumerate(rows):
        query = questions[row["id"]]
        gold = " | ".join(query.get("aliases", [query["answer"]]))
        lines.append({"i": i, "id": row["id"], "answer_sha": answer_sha(row["answer"]),
                      "question": query["question"], "gold": gold, "type": row["type"],
                      "answer": row["answer"]})
    return lines


def write_pending(name: str, lines: list[dict], judge_dir: Path | None = None) -> list[Path]:
    """The pending list ``verdicts/pending/NAME.in.jsonl`` (and its copy in ``judge_dir``);
    an empty list removes a stale pending file."""
    targets = [PENDING / f"{name}.in.jsonl"] + ([judge_dir / f"{name}.in.jsonl"] if judge_dir else [])
    for path in targets:
        if not lines:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return targets if lines else []


def llm_summary(rows: list[dict], dataset: str) -> dict:
    """LLM-judged accuracy of judged rows (all, by type, by half), how many are unjudged and how
    often containment (``correct``) agrees; each row gets ``llm`` (True, False or None)."""
    store = load(dataset)
    for row in rows:
        found = store.get((row["id"], answer_sha(row["answer"])))
        row["llm"] = None if found is None else found["correct"]
    judged = [r for r in rows if r["llm"] is not None]

    def share(group: list[dict]) -> float | None:
        return round(sum(r["llm"] for r in group) / len(group), 4) if group else None

    return {"judged": len(judged), "unjudged": len(rows) - len(judged), "all": share(judged),
            "types": {k: share([r for r in judged if r["type"] == k]) for k in KINDS},
            "halves": {h: share([r for r in judged if half(r["id"]) == h]) for h in "AB"},
            "agreement": agreement(judged)}


def agreement(judged: list[dict], key: str = "correct") -> dict:
    """How often a string judge (``key``) agrees with the LLM verdicts (``llm``), and its two
    kinds of disagreement."""
    if not judged:
        return {"share": None, "contained_not_llm": 0, "llm_not_contained": 0}
    return {"share": round(sum(r[key] == r["llm"] for r in judged) / len(judged), 4),
            "contained_not_llm": sum(r[key] and not r["llm"] for r in judged),
            "llm_not_contained": sum(r["llm"] and not r[key] for r in judged)}
