"""The benchmarks' library: what the scripts share (data sets, evidence matching, answer judging
and the answer cache, recall tables, results, the shared command-line options), so that no script
imports another."""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import re
import resource
import sqlite3
import statistics
import string
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from edge_rag import EdgeRAG, Settings
from edge_rag.config import models_home
from edge_rag.prompts import FOCUSED_PROMPT_VERSION, PROMPT_VERSION
from edge_rag.questions import comparison, first_hop
from edge_rag.retrieve import RETRIEVAL_VERSION
from edge_rag.store.vectors import CANDIDATES_FILE

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"
LIHUA_ZIP = SHARED / "lihua-world" / "data" / "LiHuaWorld.zip"
LIHUA_QUERIES = SHARED / "lihua-world" / "queries.dev.json"
WIKI = SHARED / "2wikimultihopqa"
TIMESTAMP = re.compile(r"(\d{8})_(\d{2}):?(\d{2})")
MISSING = re.compile(r"insufficient information|not (?:contain|mention|provide|specif|say|include)"
                     r"|no (?:information|mention)|does not (?:say|state)|cannot (?:be )?(?:determin|answer)"
                     r"|unknown|not (?:available|known)")

ANSWER_FIELDS = ("top_k", "context_token_budget", "answer_max_tokens", "slm_context_tokens")
FOCUSED_FIELDS = ("answer_stage", "focus_tokens", "focus_max_new_tokens", "abstain_threshold",
                  "no_threshold", "abstain_terms", "answer_rules_off")
GRAPH_FIELDS = ("graph_entities", "graph_relations", "lr_alpha", "tr_hops",
                "graph_support_weight", "graph_support_spread", "keyword_extractor")
CITATION = re.compile(r"\[\d+(?:,\s*\d+)*\]")


def lihua_queries(path: Path = LIHUA_QUERIES) -> list[dict[str, Any]]:
    """LiHua-World queries with normalised evidence timestamps (``YYYYMMDD_HH:MM``)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for key, item in raw.items():
        evidence = normalise_evidence(item.get("evidence", ""))
        out.append({"id": key, "question": item["question"], "answer": item["answer"],
                    "type": item["type"], "evidence": evidence})
    return out


def wiki_records() -> list[dict[str, Any]]:
    """2WikiMultihopQA passages: ``id``, ``title``, ``text``."""
    lines = (WIKI / "corpus.derived.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def wiki_queries() -> list[dict[str, Any]]:
    """2WikiMultihopQA dev questions; evidence = supporting passage titles, all typed Multi."""
    raw = json.loads((WIKI / "queries.dev.json").read_text(encoding="utf-8"))
    return [{"id": q["id"], "question": q["question"], "answer": q["answer"], "type": "Multi",
             "aliases": list(dict.fromkeys([q["answer"], *q.get("answer_aliases", [])])),
             "evidence": sorted(set(q["supporting_facts"]))} for q in raw]


def normalise_evidence(text: str) -> list[str]:
    """Timestamps of an evidence string; tolerates missing colons and 'Time: ' prefixes."""
    return sorted({f"{d}_{h}:{m}" for d, h, m in TIMESTAMP.findall(text or "")})


def document_timestamp(first_chunk_text: str) -> str | None:
    """The ``Time:`` header of a LiHua-World conversation."""
    match = TIMESTAMP.search(first_chunk_text.split("\n", 1)[0])
    return f"{match[1]}_{match[2]}:{match[3]}" if match else None


def commit_of(code: Path) -> str:
    """The commit checked out at ``code`` (a worktree a benchmark compares with)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=code, capture_output=True,
                          text=True, check=True).stdout.strip()


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    Reads VmHWM on Linux: ru_maxrss would include the peak of the parent that forked us.
    """
    found = _status_mb("VmHWM")
    if found is None:
        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20
    return found


def rss_mb() -> float:
    """Resident set size of this process now, in MiB (VmRSS; 0 where /proc is missing)."""
    return _status_mb("VmRSS") or 0.0


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next(line for line in status if line.startswith(f"{field}:"))
        return int(line.split()[1]) / 1024
    except (OSError, StopIteration):
        return None


def percentiles(values: list[float], digits: int = 1) -> dict[str, float]:
    """p50 and p95 of a list of timings (nearest rank; 0 for an empty list)."""
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0
    return {"p50": round(at(0.5), digits), "p95": round(at(0.95), digits)}


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    cells = [[_cell(v) for v in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/NAME.json`` with machine facts added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "machine": {"python": platform.python_version(), "cpu": platform.processor()
                           or platform.machine(), "system": platform.platform()}, **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


VECTOR_TABLES = {"documents", "chunks", "manifest", "vector_files", "sqlite_schema", "sqlite_sequence"}


def stored_files(folder: Path, recursive: bool = False) -> dict[str, int]:
    """Bytes per file an index keeps on disk (relative names).

    SQLite's -wal/-shm files and the write lock come and go with connections: not the index.
    """
    paths = folder.rglob("*") if recursive else folder.iterdir()
    return {str(p.relative_to(folder)): p.stat().st_size for p in paths
            if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock"))}


def method_footprint(index: Path) -> dict[str, int]:
    """Bytes on disk each retrieval method needs from an index (the paper's Figure 7 x-axis).

    ``vector`` needs the documents and chunks tables and ``chunks.usearch`` (when kept); ``local``
    the whole graph but not the relation vectors (their codes in SQLite and any relation file),
    and so does ``ppr``; ``dual``, ``topology`` and ``auto``
    everything. SQLite's
    pages are split by table with the ``dbstat`` virtual table. The entity names' candidate sets
    (``candidates.npz``) serve the next write, no retrieval.
    """
    files = {name: size for name, size in stored_files(index).items() if name != CANDIDATES_FILE}
    with closing(sqlite3.connect(f"file:{index / 'index.sqlite'}?mode=ro", uri=True)) as db:
        owner = dict(db.execute("SELECT name, tbl_name FROM sqlite_schema"))
        pages = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        relation_codes = db.execute("SELECT coalesce(sum(length(vector)), 0) FROM relations").fetchone()[0]
    vector_sql = sum(size for name, size in pages if owner.get(name, name) in VECTOR_TABLES)
    total = sum(files.values())
    no_relation_vectors = total - files.get("relations.usearch", 0) - int(relation_codes)
    return {"none": 0, "vector": vector_sql + files.get("chunks.usearch", 0),
            "local": no_relation_vectors, "dual": total, "topology": total,
            "ppr": no_relation_vectors, "auto": total}


def pyplot() -> Any | None:
    """matplotlib's pyplot on the file-only Agg backend, or None (with a hint) without the bench extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: pip install 'edge-rag[bench]'")
        return None
    return plt


def save_figure(plt: Any, figure: Any, path: Path) -> None:
    """Write a figure as a PNG and release it."""
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


def setting(item: str) -> tuple[str, object]:
    """A ``FIELD=VALUE`` settings override, the value read as JSON where it parses (numbers,
    true), else as text."""
    key, _, value = item.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


# -- answers: judging and the answer cache (answer_accuracy, suite, planner_eval, ...) ------------

def normalise(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse spaces (the HotpotQA rules)."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def is_correct(answer: str, gold: str, kind: str) -> bool:
    """Normalised containment; Null questions need an explicit 'missing' answer.

    Spaces are ignored in the containment test: LiHua-World writes names both as
    "Yuriko Yamamoto" and "YurikoYamamoto", times as "2 PM" and "2pm".
    """
    if kind == "Null":
        return MISSING.search(answer.lower()) is not None
    return _compact(gold) in _compact(answer)


def exact_match(answer: str, gold: str) -> bool:
    """Normalised equality once citations like "[1]" are dropped."""
    return normalise(CITATION.sub("", answer)) == normalise(gold)


def token_f1(answer: str, gold: str) -> float:
    """Token-overlap F1 of the normalised texts (the HotpotQA answer F1)."""
    predicted, expected = normalise(answer).split(), normalise(gold).split()
    common = sum(min(predicted.count(t), expected.count(t)) for t in set(expected))
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _compact(text: str) -> str:
    return normalise(text).replace(" ", "")


def half(query_id: str) -> str:
    """The fixed half of dev a question belongs to: A or B by the parity of its id's hash."""
    return "AB"[hashlib.sha256(query_id.encode()).digest()[0] & 1]


def stratified(queries: list[dict], limit: int | None) -> list[dict]:
    """A fixed, type-stratified subset: every k-th query of each type in id order."""
    if not limit or limit >= len(queries):
        return queries
    chosen = []
    for kind in sorted({q["type"] for q in queries}):
        # Length first: numeric ids in numeric order, hex ids in a fixed order.
        group = sorted((q for q in queries if q["type"] == kind), key=lambda q: (len(q["id"]), q["id"]))
        share = max(1, round(limit * len(group) / len(queries)))
        step = len(group) / share
        chosen += [group[int(i * step)] for i in range(share)]
    return chosen


def cache_path(dataset: str, slm: str, method: str, settings: Settings | None = None) -> Path:
    """Where the answers of one data set, SLM and method (``-noweights`` suffix included) live.

    The name carries a fingerprint of the settings that shape the prompt and the answer (for graph
    methods also their ranking and ``RETRIEVAL_VERSION``) and of the SLM's exported graph, so
    that another profile, a changed ranking or a re-exported model never reuses stale answers.
    """
    tag = "" if dataset == "lihua" else f"{dataset}-"
    settings = settings or Settings()
    fields = ANSWER_FIELDS[2:] if method.startswith("none") else ANSWER_FIELDS
    shape: list = [getattr(settings, f) for f in fields] + _graph_stamp(slm)
    if method.split("-")[0] in ("local", "dual", "topology", "ppr", "auto"):  # auto plans them
        shape += [RETRIEVAL_VERSION, *(getattr(settings, f) for f in GRAPH_FIELDS)]
    if settings.answer_stage != "plain":
        # The plain stage keeps the fingerprint it always had, so its old answers stay valid.
        shape += [FOCUSED_PROMPT_VERSION, *(getattr(settings, f) for f in FOCUSED_FIELDS)]
    method += "-s" + hashlib.sha256(repr(shape).encode()).hexdigest()[:6]
    return RESULTS / "cache" / f"answers-{tag}{slm}-{method}-p{PROMPT_VERSION}.jsonl"


def _graph_stamp(slm: str) -> list[str]:
    """The sha256 of the SLM folder's graph (``model.onnx``, as its manifest records it)."""
    try:
        manifest = json.loads((models_home() / "models" / slm / "manifest.json").read_text())
    except (OSError, ValueError):
        return []
    return [manifest.get("sha256", "")]


def answer_all(rag: EdgeRAG, dataset: str, queries: list[dict], method: str, slm: str) -> list[dict]:
    """Answer (or take from the cache) and judge every query; the open index's settings apply."""
    name = method + ("" if rag.settings.use_weights else "-noweights")
    path = cache_path(dataset, slm, name, rag.settings)
    cache = load_cache(path)
    return [_answer(rag, q, method, cache, path) for q in queries]


def rule_questions(question: str, rules_off: Sequence[str]) -> list[str]:
    """What ``ask``'s rules would ask first about ``question``, by their parse alone: the
    ``compare`` rule's when-questions, else the ``hops`` rule's first link, else nothing. A cached
    answer keeps it (``asks``), so that a changed parse answers the question again."""
    if "compare" not in rules_off and (compared := comparison(question)) is not None:
        return list(compared.questions)
    if "hops" not in rules_off and (hop := first_hop(question)) is not None:
        return [hop.inner]
    return []


def _stale(row: dict | None, asks: list[str]) -> bool:
    # A row kept before ``asks`` was recorded is stale when the rules would touch its question
    # and it records no question asked first.
    if row is None:
        return True
    return row["asks"] != asks if "asks" in row else bool(asks) and "hops" not in row


def _answer(rag: EdgeRAG, query: dict, method: str, cache: dict, cache_path: Path) -> dict:
    asks = rule_questions(query["question"], rag.settings.answer_rules_off)
    if _stale(cache.get(query["id"]), asks):
        answer = rag.ask(query["question"], method=method)
        retrieve = sum(answer.retrieval.timings_ms.values()) if answer.retrieval else 0.0
        cache[query["id"]] = {"id": query["id"], "answer": answer.text,
                              "retrieve_ms": round(retrieve, 1),
                              "prefill_ms": round(answer.timings.get("prefill", 0.0), 1),
                              "decode_ms": round(answer.timings.get("decode", 0.0), 1),
                              "prompt_tokens": answer.timings.get("prompt_tokens"),
                              "cached_tokens": answer.timings.get("cached_tokens"),
                              **{k: answer.details.get(k)
                                 for k in ("form", "abstain", "unsupported", "p_abstain", "p_no")},
                              **({"hops": answer.hops} if answer.hops else {}), "asks": asks}
        with open(cache_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(cache[query["id"]]) + "\n")
        print(f"[{time.strftime('%H:%M:%S')}] {query['id']} {query['type']}: {answer.text[:80]!r}",
              flush=True)
    row = dict(cache[query["id"]])
    row.update(type=query["type"], gold=query["answer"], **judge(query, row["answer"]))
    row["f1"] = round(row["f1"], 4)
    return row


def judge(query: dict, answer: str) -> dict:
    """``correct`` (containment), ``exact`` and ``f1`` of an answer against the gold or its aliases."""
    golds = query.get("aliases", [query["answer"]])
    return {"correct": any(is_correct(answer, g, query["type"]) for g in golds),
            "exact": any(exact_match(answer, g) for g in golds),
            "f1": max(token_f1(answer, g) for g in golds)}


def load_cache(path: Path) -> dict:
    """The cached answers of one file by query id (the folder is created, a missing file is empty)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        return {}
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines()) if row}


# -- retrieval recall (retrieval, folder_titles, graph_ablation) --------------------------------

def evaluate_recall(rag: EdgeRAG, method: str, queries: list[dict], truth: Callable,
                    ks: tuple[int, ...]) -> dict:
    """recall@k per question type (and All) of one method over the queries, with latency p50/p95."""
    hits: dict[str, dict[int, list[float]]] = {}
    latencies = []
    for query in queries:
        start = time.perf_counter()
        found = rag.retrieve(query["question"], method=method, top_k=2 * max(ks))
        latencies.append((time.perf_counter() - start) * 1000)
        for kind in (query["type"], "All"):
            for k in ks:
                hits.setdefault(kind, {}).setdefault(k, []).append(truth(found.chunks, query, k))
    out = {kind: {"queries": len(v[ks[0]]), **{f"recall@{k}": round(statistics.mean(v[k]), 3) for k in ks}}
           for kind, v in hits.items()}
    out["latency_ms"] = percentiles(latencies)
    return out


# -- the command-line options the scripts share ------------------------------------------------

_UNSET: Any = object()


def options(*, dataset: str | None = None, limit: int | None = _UNSET, limit_help: str = "how many queries",
            profile: str | None = _UNSET, as_is: bool = False, json: bool = False) -> argparse.ArgumentParser:
    """The options several scripts take, as an argparse parent (``parents=[options(...)]``), each with
    the script's default: ``--dataset`` (one of ``datasets.DATASETS``), ``--limit`` (``limit_help``
    says of what), ``--profile`` (a device profile name or TOML path), ``--as-is`` (use the benchmark
    index as it is: index nothing, embed nothing) and ``--json`` (print the result as JSON)."""
    from .datasets import DATASETS  # (datasets imports this module)

    parent = argparse.ArgumentParser(add_help=False)
    if dataset is not None:
        parent.add_argument("--dataset", default=dataset, choices=sorted(DATASETS),
                            help="data set (default: %(default)s)")
    if limit is not _UNSET:
        parent.add_argument("--limit", type=int, default=limit, help=f"{limit_help} (default: %(default)s)")
    if profile is not _UNSET:
        parent.add_argument("--profile", default=profile, help="device profile name or TOML path "
                            "(default: %(default)s)")
    if as_is:
        parent.add_argument("--as-is", action="store_true",
                            help="use the benchmark index as it is (index nothing, embed nothing)")
    if json:
        parent.add_argument("--json", action="store_true", help="print the result as JSON, not a table")
    return parent
