"""Graph index build on LiHua-World: extraction throughput, aggregation figures, bytes, coverage.

    python -m benchmarks graph_build                          # fast extractor, all 442 conversations
    python -m benchmarks graph_build --extractor slm --subset 30 --slm qwen2.5-coder-0.5b-int8
    python -m benchmarks graph_build --extractor fast --subset 30   # the same subset, fast rules

``--subset N`` takes the evidence conversations of the dev queries, in query order, until N
conversations are collected, so that answer coverage can be measured on them. Coverage of a
query: its gold answer (normalised, spaces ignored) appears in the names of the entities linked
to its evidence chunks ("entity names"), or in those plus the keywords and descriptions of the
relations linked to them ("graph text"). Each run writes ``graph_build_<extractor>_<n>.json``.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import time
import zipfile
from contextlib import closing
from pathlib import Path

from benchmarks.core.answers import is_correct
from benchmarks.core.datasets import LIHUA_ZIP, lihua_queries
from benchmarks.core.measure import peak_rss_mb
from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag import Document, EdgeRAG

INDEXES = ROOT / "benchmarks" / ".indexes"
GRAPH_TABLES = ("entity_mentions", "relation_mentions", "chunk_graph", "extractions", "entity_keys",
                "entities", "relations", "chunk_entities", "relation_chunks")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    docs = _conversations(args.subset)
    name = f"{args.extractor}_{args.subset or 'all'}"
    path = INDEXES / f"graph-{name}-{args.slm or 'default'}"
    if args.rebuild:
        shutil.rmtree(path, ignore_errors=True)
    overrides = {"slm": args.slm} if args.slm else {}
    with EdgeRAG.open(path, extractor=args.extractor, progress=not args.quiet, **overrides) as rag:
        start = time.perf_counter()
        report = rag.insert(*docs)
        seconds = time.perf_counter() - start
        stats = rag.stats()
        coverage = _coverage(rag, {d.source for d in docs}) if args.subset else {}
    result = {"extractor": args.extractor, "slm": args.slm or rag.settings.slm, "conversations": len(docs),
              "chunks": stats.chunks, "seconds_total": round(seconds, 1),
              "seconds_graph": round(report.graph.seconds, 1), "graph_chunks": report.graph.chunks,
              "seconds_per_chunk": round(report.graph.seconds / max(1, report.graph.chunks), 3),
              "extraction_failures": stats.extraction_failures,
              "failure_rate": round(stats.extraction_failures / max(1, stats.chunks_in_graph), 4),
              "entity_names": stats.entity_names, "entities": stats.entities, "merges": stats.merges,
              "similar_edges": stats.similar_edges, "relations": stats.relations,
              "graph_bytes_sqlite": _graph_bytes(path), "files": stats.files,
              "peak_rss_mb": round(peak_rss_mb(), 1), "coverage": coverage}
    _print(result)
    write_result(f"graph_build_{name}", result, rag.settings)
    return 0


def _conversations(subset: int | None) -> list[Document]:
    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        members = sorted(n for n in archive.namelist() if n.endswith(".txt"))
        texts = {n: archive.read(n).decode("utf-8") for n in members}
    by_time = {_timestamp(text): name for name, text in texts.items()}
    chosen = members
    if subset:
        picked: list[str] = []
        for query in lihua_queries():
            for stamp in query["evidence"]:
                if stamp in by_time and by_time[stamp] not in picked and len(picked) < subset:
                    picked.append(by_time[stamp])
        chosen = sorted(picked)
    return [Document.from_text(texts[n], f"{LIHUA_ZIP.name}/{n}") for n in chosen]


def _timestamp(text: str) -> str:
    header = text.split("\n", 1)[0].replace("Time:", "").strip()
    return header


def _coverage(rag: EdgeRAG, sources: set[str]) -> dict[str, float | int]:
    doc_of_stamp = {_timestamp(rag.chunks(d.id)[0].text): d.id for d in rag.documents()}
    queries = [q for q in lihua_queries() if q["type"] != "Null" and q["evidence"]
               and all(s in doc_of_stamp for s in q["evidence"])]
    names_hit = text_hit = 0
    with closing(sqlite3.connect(f"file:{rag.directory / 'index.sqlite'}?mode=ro", uri=True)) as conn:
        for query in queries:  # the graph's own rows, read from the index file
            names, relations = _graph_text(conn, [doc_of_stamp[s] for s in query["evidence"]])
            names_hit += is_correct(names, query["answer"], query["type"])
            text_hit += is_correct(names + " " + relations, query["answer"], query["type"])
    n = max(1, len(queries))
    return {"queries": len(queries), "entity_names": round(names_hit / n, 3),
            "graph_text": round(text_hit / n, 3)}


def _graph_text(conn: sqlite3.Connection, doc_ids: list[str]) -> tuple[str, str]:
    marks = ",".join("?" * len(doc_ids))
    chunks = f"SELECT id FROM chunks WHERE doc_id IN ({marks})"
    names = conn.execute(f"SELECT group_concat(e.name, ' | ') FROM entities e JOIN chunk_entities ce "
                         f"ON ce.entity_id = e.id WHERE ce.chunk_id IN ({chunks})", doc_ids).fetchone()[0]
    relations = conn.execute(
        "SELECT group_concat(r.keywords || ' ' || r.description, ' | ') FROM relations r JOIN "
        f"relation_chunks rc ON rc.relation_id = r.id WHERE rc.chunk_id IN ({chunks})", doc_ids).fetchone()[0]
    return names or "", relations or ""


def _graph_bytes(path: Path) -> dict[str, int]:
    with sqlite3.connect(path / "index.sqlite") as conn:
        rows = conn.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')")
        owner = {name: table for name, table in rows}
        sizes = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
    out = {t: sum(s for n, s in sizes.items() if owner.get(n) == t) for t in GRAPH_TABLES}
    out["total"] = sum(out.values())
    return out


def _print(result: dict) -> None:
    rows = [[result["extractor"], result["conversations"], result["chunks"], result["seconds_graph"],
             result["seconds_per_chunk"], result["failure_rate"], result["entity_names"], result["entities"],
             result["merges"], result["similar_edges"], result["relations"],
             f"{result['graph_bytes_sqlite']['total'] / 2**20:.1f}"]]
    print(markdown_table(["extractor", "convs", "chunks", "graph s", "s/chunk", "fail rate", "names",
                          "entities", "merges", "similar", "relations", "graph MiB"], rows))
    if result["coverage"]:
        print(f"answer coverage on {result['coverage']['queries']} dev queries: entity names "
              f"{result['coverage']['entity_names']:.3f}, graph text {result['coverage']['graph_text']:.3f}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks graph_build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extractor", default="fast", choices=("fast", "slm"))
    parser.add_argument("--subset", type=int, default=None, metavar="N",
                        help="only the evidence conversations of the first dev queries, N of them")
    parser.add_argument("--slm", default=None, help="SLM model folder (default: the settings' slm)")
    parser.add_argument("--rebuild", action="store_true", help="delete the cached index first")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
