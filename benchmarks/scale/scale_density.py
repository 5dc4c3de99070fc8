"""Index bytes per KB by kind of text, and what each scale size's mix of kinds predicts (issue 46).

The scale sizes mix LiHua-World's chats with encyclopaedic passages (2Wiki, HotpotQA,
MultiHop-RAG) from 3× and generated chats from 10×, and each kind of text yields its own number of
chunks, names and relations per KB: a size's bytes per KB move with its mix before they say
anything about growth. Here each source family alone, its first documents in scale order up to
LiHua-World's size (all of it when smaller), is built into a fresh index in a process of its own.
Weighted by the KB of each family a size holds, those figures predict the bytes per KB the size
would have if an index cost nothing extra for being large; ``vs mix`` is the size's actual bytes
per KB (every file of its folder, as the ``scale`` benchmark counts them) over that prediction.

    python -m benchmarks scale_density                 # after: python -m benchmarks scale --build
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from itertools import chain
from typing import Any

from benchmarks.core.measure import stored_files
from benchmarks.core.paths import INDEXES, ROOT
from benchmarks.core.results import markdown_table, write_result
from benchmarks.scale.scale_build import SIZES, index_of
from benchmarks.scale.scale_corpus import describe, distractors, documents, text_bytes
from edge_rag import Settings

WORK = INDEXES / "scale-density"


def main(argv: list[str] | None = None) -> int:
    """Build each family's index, read each built size's bytes, print and write the record."""
    args = _parser().parse_args(argv)
    if args.family:
        print(json.dumps(build_family(args.family)))
        return 0
    families = {family: _family_process(family) for family in describe(documents(30))}
    sizes = [size_row(n, families) for n in SIZES if (index_of(n) / "scale_build.json").is_file()]
    result = {"command": "python -m benchmarks scale_density", "target_bytes": text_bytes(documents(1)),
              "families": families, "sizes": sizes}
    print(markdown_table(*table(families, sizes)))
    print(f"wrote {write_result(args.name, result, Settings())}")
    return 0


def family_documents(family: str) -> list[Any]:
    """A family's first documents in scale order, up to LiHua-World's bytes (every corpus
    family comes before the endless generated chats, ``scale/``)."""
    target = text_bytes(documents(1))
    out, total = [], 0
    for doc in chain(documents(1), distractors()):
        kind = doc.source.split("/", 1)[0]
        if total >= target or (kind == "scale" and family != "scale"):
            break
        if kind == family:
            out.append(doc)
            total += text_bytes([doc])
    return out


def build_family(family: str) -> dict[str, Any]:
    """Build a family's documents into a fresh index; its text bytes, files and bytes per KB."""
    from edge_rag import EdgeRAG

    docs = family_documents(family)
    index = WORK / family.replace(".", "_")
    shutil.rmtree(index, ignore_errors=True)
    try:
        with EdgeRAG.open(index, progress=False) as rag:
            rag.insert(*docs)
            stats = rag.stats()
        size = sum(stored_files(index, recursive=True).values())
    finally:
        shutil.rmtree(index, ignore_errors=True)
    kb = text_bytes(docs) / 1000
    return {"documents": len(docs), "text_bytes": round(kb * 1000), "index_bytes": size,
            "index_bytes_per_kb": round(size / kb, 1), "chunks": stats.chunks, "entities": stats.entities,
            "relations": stats.relations}


def size_row(times: int, families: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A built size's text by family, its actual bytes per KB and what its mix predicts."""
    mix = describe(documents(times))
    files = stored_files(index_of(times), recursive=True)
    files = {k: v for k, v in files.items() if not k.endswith(".json")}
    kb = sum(mix.values()) / 1000
    predicted = sum(b / 1000 * families[f]["index_bytes_per_kb"] for f, b in mix.items()) / kb
    actual = sum(files.values()) / kb
    return {"times": times, "text_bytes_by_family": mix, "index_bytes": sum(files.values()),
            "index_bytes_per_kb": round(actual, 1), "predicted_by_mix": round(predicted, 1),
            "vs_mix": round(actual / predicted, 3)}


def table(families: dict[str, dict[str, Any]],
          sizes: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """One row per family index, then one per size."""
    headers = ["index", "text KB", "bytes per KB", "predicted by its mix", "vs mix"]
    rows = [[f"{name} alone", round(f["text_bytes"] / 1000), f["index_bytes_per_kb"], "", ""]
            for name, f in families.items()]
    rows += [[f"{s['times']}×", round(sum(s["text_bytes_by_family"].values()) / 1000),
              s["index_bytes_per_kb"], s["predicted_by_mix"], s["vs_mix"]] for s in sizes]
    return headers, rows


def _family_process(family: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.scale.scale_density", "--family", family]
    out = subprocess.run(command, capture_output=True, text=True, check=True,
                         cwd=ROOT)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale_density",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--name", default="index_density", help="results file name")
    parser.add_argument("--family", default="", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
