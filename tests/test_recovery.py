"""Crash safety: a SIGKILLed writer loses nothing committed; vector files heal from SQLite."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from edge_rag import EdgeRAG
from edge_rag.engine import Engine

from .conftest import open_both

# The writer inserts three LiHua documents, then a held document whose text stops arriving once
# its transaction has written chunks (its first 1,024 lines make 124 chunks, so the first group of
# 64 is in SQLite and the vector index): it announces the pause in a marker file and waits there,
# so the kill always lands mid-insert (never after a finished run).
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from edge_rag import EdgeRAG
    from edge_rag.index import Document, read_sources

    index, folder, marker = sys.argv[1:4]
    lines = [f"Line {i}: the quartermaster counted {i} crates of tea." for i in range(1200)]
    readings = []

    def held_blocks():
        readings.append(1)
        yield "\\n".join(lines[:1024]) + "\\n"
        if len(readings) > 1:  # the first reading fingerprints; the second writes the chunks
            Path(marker).write_text("mid-insert")
            time.sleep(3600)
        yield "\\n".join(lines[1024:]) + "\\n"

    docs = list(read_sources([folder], 2**30))
    with EdgeRAG.open(index, progress=False) as rag:
        rag.insert(*docs[:3], Document("held", held_blocks), *docs[3:])
""")


PLAIN_WRITER = textwrap.dedent("""
    import sys
    from edge_rag import EdgeRAG
    with EdgeRAG.open(sys.argv[1], progress=False) as rag:
        rag.insert(sys.argv[2])
""")


def _committed(index, table: str = "documents") -> int:
    try:
        with sqlite3.connect(f"file:{index / 'index.sqlite'}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.Error:
        return 0


def _assert_consistent(rag: EdgeRAG, engine: Engine) -> None:
    for doc in rag.documents():
        chunks = rag.chunks(doc.id)
        assert len(chunks) == doc.n_chunks > 0, doc
        assert [c.ord for c in chunks] == list(range(doc.n_chunks))
    vectors = engine.vectors()
    assert len(vectors) == rag.stats().chunks


def _kill_when_paused(tmp_path, script: str, *args) -> None:
    """Run a writer until it reports (marker file) that it is paused mid-write; SIGKILL it."""
    marker = tmp_path / "paused"
    writer = subprocess.Popen([sys.executable, "-c", script, *map(str, args), str(marker)])
    try:
        deadline = time.monotonic() + 600
        while not marker.exists():
            assert writer.poll() is None, f"writer ended ({writer.returncode}) before its kill point"
            assert time.monotonic() < deadline, "writer never reached its kill point"
            time.sleep(0.02)
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    assert writer.returncode == -signal.SIGKILL, "the writer was not killed"


@pytest.mark.slow
def test_sigkill_mid_index_keeps_every_committed_document(tmp_path, lihua_dir, model_folder):
    index = tmp_path / "index"
    _kill_when_paused(tmp_path, WRITER, index, lihua_dir)
    assert _committed(index) == 3  # the held document's transaction had written chunks
    with open_both(index, progress=False) as (rag, engine):
        assert "held" not in {d.source for d in rag.documents()}
        _assert_consistent(rag, engine)
        assert rag.retrieve("Li Hua moving in", top_k=3).chunks
        report = rag.insert(lihua_dir)
        assert len(report.duplicates) == 3 and report.ok
        _assert_consistent(rag, engine)
        assert len(rag.documents()) == len(list(lihua_dir.iterdir()))


@pytest.mark.slow
def test_reader_works_while_a_writer_inserts(tmp_path, lihua_dir, model_folder):
    index = tmp_path / "index"
    with EdgeRAG.open(index, progress=False) as rag:
        rag.insert_text("The harbour master rings the bell at noon.", source="harbour")
    writer = subprocess.Popen([sys.executable, "-c", PLAIN_WRITER, str(index), str(lihua_dir)])
    try:
        seen = 0
        while writer.poll() is None:
            with EdgeRAG.open(index, create=False) as reader:
                assert reader.retrieve("Who rings the bell?", top_k=1).chunks[0].source == "harbour"
                seen = max(seen, len(reader.documents()))
        assert writer.returncode == 0 and seen >= 1
    finally:
        writer.kill()


def _damage(index, how: str) -> None:
    path = index / "chunks.usearch"
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif how == "garbage":
        data = bytearray(path.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
        path.write_bytes(bytes(data))
    elif how == "stale":
        with sqlite3.connect(index / "index.sqlite") as db:
            db.execute("UPDATE vector_files SET generation = generation + 1 WHERE kind = 'chunk'")


@pytest.mark.parametrize("how", ["missing", "truncated", "garbage", "stale"])
def test_damaged_vector_file_is_rebuilt_from_sqlite(tmp_path, how, model_folder):
    index = tmp_path / "index"
    with open_both(index, progress=False, vector_file_min=0) as (rag, engine):  # always an HNSW file
        rag.insert_text("Otters hold hands while they sleep.", source="otters")
        rag.insert_text("Glaciers carve valleys over millennia.", source="glaciers")
    _damage(index, how)
    with open_both(index, create=False, vector_file_min=0) as (rag, engine):
        vectors = engine.vectors()
        assert vectors.rebuilt
        assert rag.retrieve("sleeping otters", top_k=1).chunks[0].source == "otters"
    with open_both(index, create=False, vector_file_min=0) as (rag, engine):
        assert not engine.vectors().rebuilt, "the rebuilt file should have been saved"


def test_vector_files_come_and_go_with_vector_file_min(tmp_path, model_folder):
    index = tmp_path / "index"
    with open_both(index, progress=False, vector_file_min=0) as (rag, engine):
        rag.insert_text("Otters hold hands while they sleep.", source="otters")
    assert (index / "chunks.usearch").is_file()
    with open_both(index, create=False, vector_file_min=3) as (rag, engine):  # a leftover file goes
        assert engine.vectors().exact is not None and engine.vectors().rebuilt
        assert rag.retrieve("sleeping otters", top_k=1).chunks[0].source == "otters"
        assert not (index / "chunks.usearch").exists()
        rag.insert_text("Glaciers carve valleys over millennia.", source="glaciers")
        assert not (index / "chunks.usearch").exists()
        rag.insert_text("Bees point the way with a dance.", source="bees")  # the third vector
        assert (index / "chunks.usearch").is_file()
    with open_both(index, create=False, vector_file_min=3) as (rag, engine):
        vectors = engine.vectors()
        assert vectors.has_file and not vectors.rebuilt and len(vectors) == 3
        assert rag.retrieve("glacier valleys", top_k=1).chunks[0].source == "glaciers"


# The graph writer pauses at the first SQL statement after its second graph batch committed
# (graph_batch_chunks=4: 8 chunks in the graph), so the kill lands mid-build, never after it.
GRAPH_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from edge_rag import EdgeRAG
    from edge_rag.engine import Engine

    index, folder, marker = sys.argv[1:4]
    state = {"commits": 0, "graph_write": False}

    def trace(sql):
        statement = sql.lstrip().upper()
        if state["commits"] == 2:
            Path(marker).write_text("mid-graph")
            time.sleep(3600)
        if "INSERT INTO CHUNK_GRAPH" in statement:
            state["graph_write"] = True
        elif statement.startswith(("COMMIT", "ROLLBACK")):
            state["commits"] += state["graph_write"] and statement.startswith("COMMIT")
            state["graph_write"] = False

    engine = Engine.open(index, progress=False, graph_batch_chunks=4)
    with EdgeRAG(engine) as rag:
        engine.store.conn.set_trace_callback(trace)
        rag.insert(folder)
""")


@pytest.mark.slow
def test_sigkill_mid_graph_build_resumes_to_the_same_graph(tmp_path, lihua_dir, lihua_index):
    index = tmp_path / "index"
    _kill_when_paused(tmp_path, GRAPH_WRITER, index, lihua_dir)
    with EdgeRAG.open(index, progress=False) as rag:
        done = rag.stats()
        assert done.chunks_in_graph == 8 < done.chunks and done.documents == len(list(lihua_dir.iterdir()))
        assert rag.retrieve("Li Hua moving in", top_k=3).chunks
        rag.insert(lihua_dir)  # every document is a duplicate: only the graph work resumes
        assert rag.stats().chunks_in_graph == rag.stats().chunks
        resumed = rag.graph()
    with EdgeRAG.open(lihua_index, create=False) as reference:
        assert resumed == reference.graph()
