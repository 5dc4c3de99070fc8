"""Behaviour unchanged: one fixed sample's retrieval entries, answers and graph tables, as a digest.

    python -m benchmarks.behaviour dump OUT.json [--answers 20] [--work DIR]
    python -m benchmarks.behaviour compare OLD.json NEW.json [--name behaviour_issue47]

``dump`` builds the demo corpus (``export/demo/LiHua-World``, fast extractor) into a fresh index,
then writes every graph table's rows (timestamps left out), the graph export, the retrieval entries
(chunk ids, documents, scores to 6 digits, entities, relations, plan) of every method and planner on
a fixed question sample (the demo's questions and the first LiHua dev queries), and the default
SLM's greedy answers (text, sources, details) on the first ``--answers`` of them with each answer
stage. It imports ``edge_rag``'s public names only, so the same file runs against an older
checkout (``PYTHONPATH=OLD python benchmarks/behaviour.py dump old.json``). ``compare`` puts two
dumps side by side, part by part, and writes ``NAME.json`` into ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "export" / "demo"
DEV_QUERIES = ROOT.parent / "shared" / "datasets" / "lihua-world" / "queries.dev.json"
METHODS = ("none", "vector", "local", "dual", "topology", "ppr", "titles")
PLANNERS = ("names", "margin", "rules", "head")
SKIPPED_COLUMNS = {"added_at"}


def main(argv: list[str] | None = None) -> int:
    """Dump a digest, or compare two."""
    args = _parser().parse_args(argv)
    if args.command == "dump":
        return dump(Path(args.out), args.answers, args.questions, args.work)
    return compare(Path(args.old), Path(args.new), args.name, args.labels.split(","))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    out = commands.add_parser("dump", help="write the digest of this checkout's behaviour")
    out.add_argument("out")
    out.add_argument("--answers", type=int, default=20, help="questions answered by the SLM")
    out.add_argument("--questions", type=int, default=40, help="questions retrieved by every method")
    out.add_argument("--work", default=None, help="folder for the temporary index")
    both = commands.add_parser("compare", help="side by side: are two digests identical?")
    both.add_argument("old")
    both.add_argument("new")
    both.add_argument("--name", default="behaviour_issue47")
    both.add_argument("--labels", default="old,new", help="what OLD and NEW are (e.g. two commits)")
    return parser


def questions(count: int) -> list[str]:
    """The demo's questions, then LiHua dev queries, ``count`` in all."""
    found = [q["question"] for q in json.loads((DEMO / "questions.json").read_text(encoding="utf-8"))]
    if DEV_QUERIES.is_file():
        dev = json.loads(DEV_QUERIES.read_text(encoding="utf-8"))
        found += [item["question"] for item in dev.values()]
    return found[:count]


def dump(out: Path, answers: int, count: int, work: str | None) -> int:
    """Build, retrieve, answer, and write the digest."""
    from edge_rag import EdgeRAG

    asked = questions(count)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        index = Path(scratch) / "index"
        with EdgeRAG.open(index, progress=False) as rag:
            rag.insert(DEMO / "LiHua-World")
            result: dict[str, Any] = {"tables": tables(index / "index.sqlite"), "graph": rag.graph(),
                                      "stats": _counts(rag)}
            result["retrieval"] = {m: [entry(rag.retrieve(q, method=m)) for q in asked] for m in METHODS}
        for planner in PLANNERS:  # each setting on an index opened with it, as a user would
            with EdgeRAG.open(index, create=False, planner=planner) as rag:
                planned = [entry(rag.retrieve(q, method="auto")) for q in asked]
                result["retrieval"][f"auto-{planner}"] = planned
        result["answers"] = {}
        for stage in ("focused", "plain"):
            with EdgeRAG.open(index, create=False, answer_stage=stage, planner="names") as rag:
                result["answers"][stage] = [spoken(rag.ask(q, method="vector")) for q in asked[:answers]]
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


def tables(path: Path) -> dict[str, dict[str, Any]]:
    """Every table's rows (BLOBs as sha256, timestamp columns left out): count and digest."""
    found = {}
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        for name in names:
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({name})")]
            kept = [c for c in columns if c not in SKIPPED_COLUMNS]
            rows = db.execute(f"SELECT {', '.join(kept)} FROM {name} ORDER BY {', '.join(kept)}")
            text = [json.dumps([_plain(v) for v in row]) for row in rows]
            if name == "manifest":
                text = [t for t in text if "_at\"" not in t and "created" not in t]
            found[name] = {"columns": kept, "rows": len(text),
                           "sha256": hashlib.sha256("\n".join(text).encode()).hexdigest()}
    return found


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return hashlib.sha256(value).hexdigest()[:16]
    return round(value, 9) if isinstance(value, float) else value


def _counts(rag: Any) -> dict[str, Any]:
    stats = rag.stats()
    return {k: getattr(stats, k) for k in ("documents", "chunks", "entities", "relations",
                                          "similar_edges", "entity_names", "merges", "chunks_in_graph")}


def entry(retrieval: Any) -> dict[str, Any]:
    """One retrieval's entries, without timings."""
    plan = retrieval.plan
    return {"method": retrieval.method,
            "chunks": [[c.chunk_id, c.doc_id, c.source, round(c.score, 6)] for c in retrieval.chunks],
            "entities": [_jsonable(e) for e in retrieval.entities],
            "relations": [_jsonable(r) for r in retrieval.relations],
            "plan": None if plan is None else [plan.method, plan.label, plan.planner,
                                               _jsonable(plan.probabilities), plan.fallback]}


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        value = {k: getattr(value, k) for k in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return round(value, 6) if isinstance(value, float) else value


def spoken(answer: Any) -> dict[str, Any]:
    """One answer without timings."""
    return {"text": answer.text, "sources": [[c.chunk_id, c.source] for c in answer.sources],
            "withheld": answer.withheld, "details": _jsonable(answer.details)}


def compare(old: Path, new: Path, name: str, labels: list[str]) -> int:
    """Side by side per part: rows, digests, identical or not; exit 1 on any difference."""
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (old, new))
    parts = []
    for part in sorted(set(before) | set(after)):
        for key in sorted(set(before.get(part, {})) | set(after.get(part, {}))) \
                if isinstance(before.get(part), dict) else [""]:
            a, b = (_part(d, part, key) for d in (before, after))
            parts.append({"part": f"{part}/{key}".rstrip("/"), "old": _digest(a), "new": _digest(b),
                          "items": _items(a), "identical": a == b})
    for row in parts:
        print(f"{row['part']:<28} {row['items']:>5}  {row['old']}  {row['new']}  "
              f"{'identical' if row['identical'] else 'DIFFERENT'}")
    same = all(row["identical"] for row in parts)
    sys.path.insert(0, str(ROOT))
    from benchmarks.common import write_result

    payload = {"old": labels[0], "new": labels[-1], "identical": same, "parts": parts,
               "command": "python benchmarks/behaviour.py dump OUT.json (each checkout on PYTHONPATH), "
                          "then python -m benchmarks.behaviour compare OLD.json NEW.json"}
    print(f"wrote {write_result(name, payload)}")
    return 0 if same else 1


def _part(dump: dict[str, Any], part: str, key: str) -> Any:
    value = dump.get(part)
    return value.get(key) if key and isinstance(value, dict) else value


def _items(value: Any) -> int:
    """Questions of a retrieval or answer part, rows of a table, 1 for a figure."""
    if isinstance(value, dict) and "rows" in value:
        return int(value["rows"])
    return len(value) if isinstance(value, list) else 1


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


if __name__ == "__main__":
    sys.exit(main())
