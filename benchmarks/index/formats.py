"""Document formats and folder sync: a mixed folder per format, an mbox's memory, a 10,000-file no-op sync.

    python -m benchmarks formats [--messages 1000] [--files 10000] [--work DIR]

1. The mixed folder of ``benchmarks/index/sample_files.py`` (PDF with text, a scan, an encrypted PDF,
   HTML, EML, an MBOX of ``--messages`` messages, DOCX, Markdown, TXT, CSV), written with the
   real libraries, indexed format by format into one index: documents, chunks, seconds and refusals
   per format, then whether each planted fact is found top-1 by ``vector`` and ``ppr``.
2. Reading an mbox streams: peak RSS (VmHWM) of a process that only reads an mbox of N and of
   10 N messages (no embedding), side by side.
3. ``sync`` of ``--files`` small text files (extractor ``none``: the graph does not change what a
   no-op costs): the first sync, then an unchanged second sync (the issue's bar: <= 2 s) timed in
   process (``EdgeRAG.sync``) and as the whole ``edge-rag sync`` command, and a sync after
   touching every file (mtime moved, bytes the same: each file is hashed, none is read).
Writes ``formats.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from benchmarks.index import sample_files as files
from edge_rag import EdgeRAG, Settings

GROUPS = {"pdf": ("report.pdf", "scan.pdf", "locked.pdf"), "html": ("ferry.html",), "eml": ("order.eml",),
          "mbox": ("letters.mbox",), "docx": ("harvest.docx",), "md": ("kites.md",),
          "txt": ("violin.txt",), "csv": ("players.csv",)}
READER = textwrap.dedent("""
    import sys
    from edge_rag.index import Document, read_sources
    n = sum(isinstance(d, Document) and bool(d.fingerprint()) for d in read_sources([sys.argv[1]], 2**26))
    with open("/proc/self/status") as status:
        peak = int(next(l for l in status if l.startswith("VmHWM:")).split()[1]) / 1024
    print(n, peak)
""")
SYNC_BAR_S = 2.0


def main(argv: list[str] | None = None) -> int:
    """Run the three parts, print their tables and write the results."""
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        work = Path(scratch)
        formats = _formats(work, args.messages)
        memory = _mbox_memory(work, args.messages)
        sync = _sync(work, args.files)
    result = {"messages": args.messages, "formats": formats, "mbox_memory": memory, "sync": sync}
    _print(result)
    print(f"wrote {write_result('formats', result, Settings())}")
    found = all(f["vector"] and f["ppr"] for f in formats["facts"])
    return 0 if found and sync["second_sync_s"] <= SYNC_BAR_S else 1


def _formats(work: Path, messages: int) -> dict[str, Any]:
    folder = work / "mixed"
    files.write_all(folder, messages, scratch=work)
    rows = []
    with EdgeRAG.open(work / "mixed-index", progress=False) as rag:
        for name, members in GROUPS.items():
            start = time.perf_counter()
            report = rag.insert(*(folder / m for m in members))
            rows.append({"format": name, "files": len(members), "documents": len(report.added),
                         "chunks": report.chunks, "seconds": round(time.perf_counter() - start, 2),
                         "refused": [e.split(": ", 1)[1] for _, e in report.failed]})
        facts = [_fact(rag, fact, messages) for fact in files.FACTS]
    return {"rows": rows, "facts": facts}


def _fact(rag: EdgeRAG, fact: files.Fact, messages: int) -> dict[str, Any]:
    expected = fact.source.format(planted=files.planted_message(messages))
    found = {m: rag.retrieve(fact.question, method=m, top_k=1).chunks[0].source.endswith(expected)
             for m in ("vector", "ppr")}
    return {"format": fact.format, "question": fact.question, "source": expected, **found}


def _mbox_memory(work: Path, messages: int) -> list[dict[str, Any]]:
    rows = []
    for count in (messages, 10 * messages):
        path = work / f"box-{count}.mbox"
        files.write_mbox(path, count)
        out = subprocess.run([sys.executable, "-c", READER, str(path)], capture_output=True, text=True,
                             check=True, cwd=ROOT).stdout.split()
        rows.append({"messages": count, "mbox_mb": round(path.stat().st_size / 2**20, 1),
                     "documents": int(out[0]), "peak_rss_mb": round(float(out[1]), 1)})
        path.unlink()
    return rows


def _sync(work: Path, count: int) -> dict[str, Any]:
    folder, index = work / "notes", work / "notes-index"
    for n in range(count):
        sub = folder / f"part{n // 1000:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note{n:05d}.txt").write_text(f"Note {n}\nItem {n} of the inventory is stored on shelf "
                                              f"{n % 97} in room {n % 13}.\n", encoding="utf-8")
    first = _timed_sync(index, folder)
    second = _timed_sync(index, folder)
    command = _timed_command(index, folder)
    for path in folder.rglob("*.txt"):
        path.touch()
    touched = _timed_sync(index, folder)
    return {"files": count, "extractor": "none", "first_sync_s": first[0], "first_added": first[1]["added"],
            "second_sync_s": second[0], "second_unchanged": second[1]["unchanged"],
            "second_command_s": command, "touched_sync_s": touched[0],
            "touched_unchanged": touched[1]["unchanged"], "bar_s": SYNC_BAR_S}


def _timed_sync(index: Path, folder: Path) -> tuple[float, dict[str, Any]]:
    with EdgeRAG.open(index, progress=False, extractor="none") as rag:
        start = time.perf_counter()
        report = rag.sync(folder)
        seconds = time.perf_counter() - start
    return round(seconds, 3), {"added": len(report.added), "unchanged": report.unchanged}


def _timed_command(index: Path, folder: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "sync", str(folder), "--index", str(index),
                           "--json"], capture_output=True, text=True, check=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    assert json.loads(done.stdout)["unchanged"] > 0
    return round(seconds, 3)


def _print(result: dict[str, Any]) -> None:
    rows = result["formats"]["rows"]
    print(markdown_table(["format", "files", "documents", "chunks", "seconds", "refused"],
                         [[r["format"], r["files"], r["documents"], r["chunks"], r["seconds"],
                           "; ".join(r["refused"]) or "-"] for r in rows]))
    facts = result["formats"]["facts"]
    print("\n" + markdown_table(["format", "question", "vector top-1", "ppr top-1"],
                                [[f["format"], f["question"], f["vector"], f["ppr"]] for f in facts]))
    memory = result["mbox_memory"]
    rows = [[m["messages"], m["mbox_mb"], m["documents"], m["peak_rss_mb"]] for m in memory]
    print("\n" + markdown_table(["mbox messages", "MB", "documents read", "peak RSS MiB"], rows))
    sync = result["sync"]
    print(f"\nsync of {sync['files']:,} files: first {sync['first_sync_s']} s, unchanged second "
          f"{sync['second_sync_s']} s (command {sync['second_command_s']} s; bar {SYNC_BAR_S} s), after "
          f"touching all {sync['touched_sync_s']} s")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks formats", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1000, help="messages in the mixed folder's mbox")
    parser.add_argument("--files", type=int, default=10000, help="files in the sync folder")
    parser.add_argument("--work", default=None, help="scratch folder (default: the system's)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
