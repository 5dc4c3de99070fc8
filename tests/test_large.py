"""A 50 MB text file is streamed: it indexes whole within a bounded memory footprint."""

import json
import random
import subprocess
import sys
import textwrap

import pytest

FIFTY_MB = 50 * 2**20
# The streamed insert of this file peaks a little under 400 MiB, the same at df1b741 as now, and
# crossed 400 on busy runs; the graph is off here (benchmarks/index/graph_build.py measures it).
# Holding the decoded text, its ~100k chunks and their float32 vectors at once would push well
# past this bound.
RSS_BOUND_MB = 450

# VmHWM, not ru_maxrss: Linux carries a forking parent's peak into the child's ru_maxrss.
CHILD = textwrap.dedent("""
    def peak_rss_mb():
        with open("/proc/self/status") as status:
            line = next(l for l in status if l.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024
    import json, sys
    from edge_rag import EdgeRAG
    with EdgeRAG.open(sys.argv[1], progress=False, extractor="none") as rag:
        report = rag.insert(sys.argv[2])
        top = rag.retrieve("harbour lantern meadow", top_k=1).chunks
    print(json.dumps({"added": len(report.added), "chunks": report.chunks,
                      "failed": report.failed, "top_source": top[0].source if top else None,
                      "peak_rss_mb": peak_rss_mb()}))
""")


def _write_big_file(path) -> None:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "harbour", "garden", "lantern", "meadow", "river",
             "candle", "orchard", "copper"]
    lines = [f"{rng.choice(['Ada', 'Bob', 'Cy'])}: " + " ".join(rng.choices(words, k=8))
             for _ in range(300)]
    block = ("\n".join(lines) + "\n").encode()
    with open(path, "wb") as handle:
        for _ in range(FIFTY_MB // len(block) + 1):
            handle.write(block)


@pytest.mark.slow
def test_fifty_megabyte_file_is_streamed(tmp_path, model_folder):
    big = tmp_path / "big.txt"
    _write_big_file(big)
    assert big.stat().st_size >= FIFTY_MB
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "index"), str(big)],
                           capture_output=True, text=True, check=True)
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["added"] == 1 and result["failed"] == []
    assert result["chunks"] > 50_000
    assert result["top_source"] == str(big)
    assert result["peak_rss_mb"] < RSS_BOUND_MB, result
