"""A single line of many MB: time and peak memory to index it, against the same bytes in lines.

    python -m benchmarks.long_line [--mb 30] [--extractor none] [--work DIR]

A hostile folder may hold one text file that is a single multi-MB line (a minified dump, a log
without newlines). The reader streams it and the chunker cuts the overlong line at spaces into
pieces of 16 Ki characters, so memory stays bounded; the cost is the embedding of every chunk
(minutes for tens of MB). Each variant indexes in a fresh process: ``one line`` (no newline at
all) and ``lines`` (the same words with a newline every 12 words, like ordinary text). Reports
chunks, seconds, chunks/s and the peak RSS (VmHWM) of each, and their ratio in one run.
Writes ``long_line.json`` and ``long_line.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from .common import RESULTS, ROOT, markdown_table, write_result

WORDS = ["alpha", "beta", "gamma", "delta", "harbour", "garden", "lantern", "meadow", "river", "candle",
         "orchard", "copper", "Ada", "Bob", "Cy", "quince", "ferry", "salt", "kite", "violin"]
CHILD = textwrap.dedent("""
    import json, sys, time
    from edge_rag import EdgeRAG
    def peak_rss_mb():
        with open("/proc/self/status") as status:
            return int(next(l for l in status if l.startswith("VmHWM:")).split()[1]) / 1024
    start = time.perf_counter()
    with EdgeRAG.open(sys.argv[1], progress=False, extractor=sys.argv[3]) as rag:
        report = rag.insert(sys.argv[2])
        seconds = time.perf_counter() - start
        top = rag.retrieve("harbour lantern meadow", "vector", top_k=1).chunks
    print(json.dumps({"added": len(report.added), "failed": report.failed, "chunks": report.chunks,
                      "seconds": seconds, "found": bool(top), "peak_rss_mb": peak_rss_mb()}))
""")


def main(argv: list[str] | None = None) -> int:
    """Index both variants, print the table and write the results."""
    args = _parser().parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        for variant in ("one line", "lines"):
            path = Path(scratch) / f"{variant.replace(' ', '-')}.txt"
            _write(path, args.mb, one_line=variant == "one line")
            rows.append({"variant": variant, "mb": args.mb, **_index(path, args.extractor)})
            path.unlink()
    one, lines = rows
    ratio = {"seconds": round(one["seconds"] / lines["seconds"], 2),
             "peak_rss": round(one["peak_rss_mb"] / lines["peak_rss_mb"], 2)}
    headers = ["variant", "mb", "chunks", "seconds", "chunks_per_s", "peak_rss_mb", "found"]
    table = markdown_table(headers, [[r[h] for h in headers] for r in rows])
    table += f"\n\none line / lines: time x{ratio['seconds']}, peak RSS x{ratio['peak_rss']}"
    print(table)
    (RESULTS / "long_line.md").write_text(table + "\n", encoding="utf-8")
    result = {"mb": args.mb, "extractor": args.extractor, "rows": rows, "one_line_over_lines": ratio}
    print(f"wrote {write_result('long_line', result)}")
    return 0 if all(r["added"] == 1 and r["found"] for r in rows) else 1


def _write(path: Path, mb: float, one_line: bool) -> None:
    rng = random.Random(7)
    size, target = 0, int(mb * 2**20)
    with open(path, "w", encoding="utf-8") as handle:
        while size < target:
            words = rng.choices(WORDS, k=12)
            piece = " ".join(words) + (" " if one_line else "\n")
            handle.write(piece)
            size += len(piece)


def _index(path: Path, extractor: str) -> dict[str, Any]:
    index = path.with_suffix(".index")
    done = subprocess.run([sys.executable, "-c", CHILD, str(index), str(path), extractor],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = round(result["seconds"], 1)
    result["chunks_per_s"] = round(result["chunks"] / result["seconds"], 1)
    result["peak_rss_mb"] = round(result["peak_rss_mb"], 1)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.long_line",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=30.0, help="size of the line in MB (default 30)")
    parser.add_argument("--extractor", default="none", choices=("none", "fast"),
                        help="graph extractor while indexing (default none: the embedding is measured)")
    parser.add_argument("--work", default=None, help="folder for the scratch files")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
