"""The benchmark data sets as one shape: documents, dev queries, evidence recall and a label prior.

| name     | corpus                                  | queries (dev)          | recall unit            |
|----------|-----------------------------------------|------------------------|------------------------|
| lihua    | LiHua-World, 442 chat files (complete)  | 254 (Single/Multi/Null)| evidence conversations |
| 2wiki    | 2WikiMultihopQA, 6,119 passages          | 400 (multi-hop)        | supporting passages    |
| hotpotqa | HotpotQA 100-question sample, 994 paras  | 40 (multi-hop)         | supporting passages    |
| multihop | MultiHop-RAG *derived* evidence corpus   | 200                    | evidence facts         |

MultiHop-RAG's corpus here holds only the gold evidence sentences (a stand-in, see the data
README): its numbers are pipeline checks, not comparable to the paper's. ``half`` and
``stratified`` pick fixed subsets of a data set's questions.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core.paths import INDEXES, SHARED
from edge_rag import Document, EdgeRAG, Settings
from edge_rag.engine import INDEX_KEYS, Engine

LIHUA_ZIP = SHARED / "lihua-world" / "data" / "LiHuaWorld.zip"
LIHUA_QUERIES = SHARED / "lihua-world" / "queries.dev.json"
WIKI = SHARED / "2wikimultihopqa"
TIMESTAMP = re.compile(r"(\d{8})_(\d{2}):?(\d{2})")
BUILD_RECORD = "build.json"
Recall = Callable[[list, dict, int], float]


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


@dataclass(frozen=True)
class Dataset:
    """One benchmark data set."""

    name: str
    documents: Callable[[], list[Document]]
    queries: Callable[[], list[dict[str, Any]]]
    recall: Callable[[EdgeRAG], Recall]
    ks: tuple[int, int]
    multi_hop: Callable[[dict[str, Any]], bool]
    note: str = ""

    @property
    def index(self) -> Path:
        """Where the benchmark index of this data set lives with the default index settings."""
        return self.index_for(Settings())

    def index_for(self, settings: Settings) -> Path:
        """The index for these settings: one per data set and index shape, built once, reused.

        Profiles that chunk, quantise or extract alike share an index; another shape (the Pi
        Zero's i8 vectors, say) gets its own folder, named after what differs.
        """
        default = Settings()
        changed = [str(getattr(settings, k)) for k in INDEX_KEYS
                   if getattr(settings, k) != getattr(default, k)]
        return INDEXES / "-".join([self.name, *changed])


def _lihua_documents() -> list[Document]:
    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".txt"))
        return [Document.from_text(archive.read(n).decode("utf-8"), f"{LIHUA_ZIP.name}/{n}") for n in names]


def _lihua_recall(rag: EdgeRAG) -> Recall:
    stamps = {d.id: document_timestamp(rag.chunks(d.id)[0].text) for d in rag.documents()}

    def recall(chunks: list, query: dict, k: int) -> float:
        found = {stamps[c.doc_id] for c in chunks[:k]}
        return len(found & set(query["evidence"])) / len(query["evidence"]) if query["evidence"] else 0.0

    return recall


def _passage_recall(records: Callable[[], list[dict]], prefix: str) -> Callable[[EdgeRAG], Recall]:
    # First k distinct passages of the ranked chunks: a long passage can have several chunks.
    def make(rag: EdgeRAG) -> Recall:
        title = {f"{prefix}/{r['id']}": r["title"] for r in records()}

        def recall(chunks: list, query: dict, k: int) -> float:
            passages = list(dict.fromkeys(title[c.source] for c in chunks))[:k]
            return len(set(passages) & set(query["evidence"])) / len(query["evidence"])

        return recall

    return make


def _passage_documents(records: Callable[[], list[dict]], prefix: str) -> Callable[[], list[Document]]:
    return lambda: [Document.from_text(f"{r['title']}\n{r['text']}", f"{prefix}/{r['id']}",
                                       {"title": r["title"]}) for r in records()]


HOTPOT = SHARED / "hotpotqa-train100"


def _hotpot_records() -> list[dict]:
    lines = (HOTPOT / "corpus.derived.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _hotpot_queries() -> list[dict[str, Any]]:
    raw = json.loads((HOTPOT / "queries.dev.json").read_text(encoding="utf-8"))
    return [{"id": q["_id"], "question": q["question"], "answer": q["answer"], "type": "Multi",
             "aliases": [q["answer"]], "kind": q["type"],
             "evidence": sorted({title for title, _ in q["supporting_facts"]})} for q in raw]


MULTIHOP = SHARED / "multihop-rag"


def _multihop_documents() -> list[Document]:
    raw = json.loads((MULTIHOP / "corpus.evidence_facts.derived.json").read_text(encoding="utf-8"))
    return [Document.from_text(f"{a['title']}\n{a['body']}", f"multihop/{i}", {"title": a["title"]})
            for i, a in enumerate(raw)]


def _multihop_queries() -> list[dict[str, Any]]:
    raw = json.loads((MULTIHOP / "queries.dev.json").read_text(encoding="utf-8"))
    return [{"id": q["id"], "question": q["query"], "answer": q["answer"], "aliases": [q["answer"]],
             "type": "Null" if q["question_type"] == "null_query" else "Multi", "kind": q["question_type"],
             "evidence": sorted({e["fact"] for e in q["evidence_list"]})} for q in raw]


def _multihop_recall(rag: EdgeRAG) -> Recall:
    # Upstream rule: a fact counts as found if it is a substring of a chunk, spaces and newlines removed.
    squash = lambda text: "".join(text.split())

    def recall(chunks: list, query: dict, k: int) -> float:
        if not query["evidence"]:
            return 0.0
        texts = [squash(c.text) for c in chunks[:k]]
        return sum(any(squash(f) in t for t in texts) for f in query["evidence"]) / len(query["evidence"])

    return recall


DATASETS: dict[str, Dataset] = {
    "lihua": Dataset("lihua", _lihua_documents, lihua_queries, _lihua_recall, (5, 10),
                     lambda q: q["type"] == "Multi"),
    "2wiki": Dataset("2wiki", _passage_documents(wiki_records, "2wiki"), wiki_queries,
                     _passage_recall(wiki_records, "2wiki"), (2, 5), lambda q: True),
    "hotpotqa": Dataset("hotpotqa", _passage_documents(_hotpot_records, "hotpotqa"), _hotpot_queries,
                        _passage_recall(_hotpot_records, "hotpotqa"), (2, 5), lambda q: True,
                        "40 dev questions: pipeline check only"),
    "multihop": Dataset("multihop", _multihop_documents, _multihop_queries, _multihop_recall, (4, 10),
                        lambda q: q["type"] != "Null",
                        "derived evidence-only corpus: not comparable to the paper"),
}


def open_index(dataset: Dataset, profile: str | None = None, progress: bool = True,
               **overrides: Any) -> EdgeRAG:
    """Open the data set's index for a profile, indexing whatever is missing (a no-op when complete).

    The time spent indexing is added up in ``build.json`` beside the index.
    """
    settings = Settings.load(profile, **overrides)
    rag = EdgeRAG.open(dataset.index_for(settings), profile, progress=progress, **overrides)
    report = rag.insert(*dataset.documents())
    if report.added:
        record = build_record(rag.directory)
        record = {"seconds": round(record.get("seconds", 0.0) + report.seconds, 1),
                  "documents": record.get("documents", 0) + len(report.added),
                  "chunks": record.get("chunks", 0) + report.chunks}
        (rag.directory / BUILD_RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")
    return rag


def build_record(index: Path) -> dict[str, Any]:
    """What building the index took (``seconds``, ``documents``, ``chunks``); empty if not recorded."""
    path = index / BUILD_RECORD
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def open_engine(dataset: Dataset, as_is: bool = True, **overrides: Any) -> Engine:
    """The data set's index as an ``Engine`` (its store, models and readers), for a benchmark of
    one of those parts: completed first (``open_index``) unless ``as_is``."""
    if not as_is:
        open_index(dataset, **overrides).close()
    return Engine.open(dataset.index_for(Settings.load(None, **overrides)), create=False, **overrides)


def open_benchmark_index(dataset: Dataset, as_is: bool, **overrides: Any) -> EdgeRAG:
    """The data set's index: completed first (``open_index``), or as it is (``as_is``)."""
    if as_is:
        return EdgeRAG.open(dataset.index_for(Settings.load(None, **overrides)), create=False,
                            **overrides)
    return open_index(dataset, **overrides)
