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

WRITER = textwrap.dedent("""
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


def _assert_consistent(rag: EdgeRAG) -> None:
    for doc in rag.documents():
        chunks = rag.store.document_chunks(doc.id)
        assert len(chunks) == doc.n_chunks > 0, doc
        assert [c.ord for c in chunks] == list(range(doc.n_chunks))
    vectors = rag._vectors()
    assert len(vectors) == rag.stats().chunks


def _kill_writer_after(index, folder, committed: int) -> int:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(index), str(folder)])
    deadline = time.monotonic() + 300
    while _committed(index) < committed and writer.poll() is None:
        assert time.monotonic() < deadline, "writer made no progress"
        time.sleep(0.02)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    return _committed(index)


@pytest.mark.slow
def test_sigkill_mid_index_keeps_every_committed_document(tmp_path, lihua_dir, model_folder):
    index = tmp_path / "index"
    survived = _kill_writer_after(index, lihua_dir, committed=3)
    assert survived >= 3
    with EdgeRAG.open(index, progress=False) as rag:
        assert len(rag.documents()) == survived
        _assert_consistent(rag)
        assert rag.retrieve("Li Hua moving in", top_k=3).chunks
        report = rag.insert(lihua_dir)
        assert len(report.duplicates) == survived and report.ok
        _assert_consistent(rag)
        assert len(rag.documents()) == 24


@pytest.mark.slow
def test_reader_works_while_a_writer_inserts(tmp_path, lihua_dir, model_folder):
    index = tmp_path / "index"
    with EdgeRAG.open(index, progress=False) as rag:
        rag.insert_text("The harbour master rings the bell at noon.", source="harbour")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(index), str(lihua_dir)])
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
    with EdgeRAG.open(index, progress=False) as rag:
        rag.insert_text("Otters hold hands while they sleep.", source="otters")
        rag.insert_text("Glaciers carve valleys over millennia.", source="glaciers")
    _damage(index, how)
    with EdgeRAG.open(index, create=False) as rag:
        vectors = rag._vectors()
        assert vectors.rebuilt
        assert rag.retrieve("sleeping otters", top_k=1).chunks[0].source == "otters"
    with EdgeRAG.open(index, create=False) as rag:
        assert not rag._vectors().rebuilt, "the rebuilt file should have been saved"


GRAPH_WRITER = textwrap.dedent("""
    import sys
    from edge_rag import EdgeRAG
    with EdgeRAG.open(sys.argv[1], progress=False, graph_batch_chunks=4) as rag:
        rag.insert(sys.argv[2])
""")


@pytest.mark.slow
def test_sigkill_mid_graph_build_resumes_to_the_same_graph(tmp_path, lihua_dir, lihua_index):
    index = tmp_path / "index"
    writer = subprocess.Popen([sys.executable, "-c", GRAPH_WRITER, str(index), str(lihua_dir)])
    deadline = time.monotonic() + 300
    while _committed(index, "chunk_graph") < 8 and writer.poll() is None:
        assert time.monotonic() < deadline, "writer made no progress"
        time.sleep(0.02)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    with EdgeRAG.open(index, progress=False) as rag:
        done = rag.stats()
        assert 8 <= done.chunks_in_graph < done.chunks or writer.returncode == 0
        assert rag.retrieve("Li Hua moving in", top_k=3).chunks
        rag.insert(lihua_dir)  # every document is a duplicate: only the graph work resumes
        assert rag.stats().chunks_in_graph == rag.stats().chunks
        resumed = rag.graph()
    with EdgeRAG.open(lihua_index, create=False) as reference:
        assert resumed == reference.graph()
