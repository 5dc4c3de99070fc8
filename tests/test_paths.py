"""Paths no other test takes: two writers at once, Ctrl-C, i8 and f32 vector files, the CLI's text
output and ``ask --stream``, a missing model, and keywords written by the SLM."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edge_rag import EdgeRAG, IndexLocked, ModelNotFound
from edge_rag.cli import main
from edge_rag.models import ModelFolder

from .conftest import SMALL_SLM, open_both

ROOT = Path(__file__).resolve().parent.parent
NOTES = {
    "a-otters.txt": "Otters hold hands while they sleep so that they do not drift apart.",
    "b-glaciers.txt": "Glaciers carve deep valleys over millennia as they grind downhill.",
    "c-bees.txt": "Honey bees dance in a figure of eight to point the way to flowers.",
}

# `edge-rag index` whose third document stops inside its transaction, as its chunks are written:
# the process holds the write lock and an open transaction, and says so in a marker file. (The
# writer reads a small document ahead of its turn, so the pause is in the write, not the read.)
HELD_CLI = textwrap.dedent("""
    import signal, sys, time
    from pathlib import Path
    # Ctrl-C as in a terminal, even when this test runs in a background job (which starts with
    # SIGINT ignored, and a child inherits that).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from edge_rag.cli import main
    from edge_rag.store.sqlite import IndexStore

    marker, argv = sys.argv[1], sys.argv[2:]
    add_chunks, writes = IndexStore.add_chunks, []

    def held_add_chunks(self, *args, **kwargs):
        writes.append(1)
        if len(writes) == 3:
            Path(marker).write_text("mid-insert")
            time.sleep(3600)
        return add_chunks(self, *args, **kwargs)

    IndexStore.add_chunks = held_add_chunks
    sys.exit(main(argv))
""")


def _notes(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _held_writer(tmp_path: Path, index: Path) -> tuple[subprocess.Popen, Path]:
    """A real ``edge-rag index`` paused inside its third document's transaction."""
    marker = tmp_path / "paused"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    writer = subprocess.Popen(
        [sys.executable, "-c", HELD_CLI, str(marker), "index", str(_notes(tmp_path / "notes")),
         "--index", str(index), "--no-progress"], stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert writer.poll() is None, f"writer ended early: {writer.stderr.read()}"
        assert time.monotonic() < deadline, "writer never reached its pause"
        time.sleep(0.02)
    return writer, tmp_path / "notes"


def _committed(index: Path) -> int:
    with sqlite3.connect(f"file:{index / 'index.sqlite'}?mode=ro", uri=True, timeout=5) as db:
        return db.execute("SELECT count(*) FROM documents").fetchone()[0]


@pytest.mark.slow
def test_a_second_writer_gets_index_locked_while_readers_go_on(tmp_path, capsys, model_folder):
    index = tmp_path / "index"
    writer, notes = _held_writer(tmp_path, index)
    try:
        with EdgeRAG.open(index, create=False) as rag:
            with pytest.raises(IndexLocked, match="another process is writing"):
                rag.insert_text("A second writer's note.")
            with pytest.raises(IndexLocked):
                rag.delete(rag.documents()[0].id)
            assert rag.retrieve("sleeping otters", top_k=1).chunks[0].source.endswith("a-otters.txt")
        assert main(["index", str(notes), "--index", str(index), "--no-progress"]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("edge-rag: error: another process is writing") and "\n" not in err
    finally:
        writer.kill()
        writer.wait()
    with EdgeRAG.open(index, create=False) as rag:  # the lock died with its process
        assert rag.insert_text("A second writer's note.").ok


@pytest.mark.slow
def test_ctrl_c_during_index_exits_130_and_keeps_the_index(tmp_path, model_folder):
    index = tmp_path / "index"
    writer, notes = _held_writer(tmp_path, index)
    writer.send_signal(signal.SIGINT)
    try:
        _, err = writer.communicate(timeout=120)
    finally:
        writer.kill()
    assert writer.returncode == 130, err
    assert "interrupted; every committed document is kept" in err and "Traceback" not in err
    assert _committed(index) == 2
    with open_both(index, create=False) as (rag, engine):
        assert not any(d.source.endswith("c-bees.txt") for d in rag.documents())
        assert len(engine.vectors()) == rag.stats().chunks == 2
        report = rag.insert(notes)
        assert report.ok and len(report.duplicates) == 2 and len(report.added) == 1


def test_i8_and_f32_vector_files(tmp_path, model_folder):
    sizes = {}
    for dtype in ("i8", "f32"):
        index = tmp_path / dtype
        with open_both(index, progress=False, vector_dtype=dtype, vector_file_min=0) as (rag, engine):
            assert rag.insert(_notes(tmp_path / "notes")).ok
        with open_both(index, create=False, vector_dtype="f16", vector_file_min=0) as (rag, engine):
            assert rag.settings.vector_dtype == dtype  # an index keeps its creation dtype
            assert not engine.vectors().rebuilt
            for name, text in NOTES.items():
                top = rag.retrieve(text, top_k=1).chunks[0]
                assert top.source.endswith(name) and top.score > 0.95, (dtype, top)
            assert rag.retrieve("Where do bees point?", method="dual", top_k=2).chunks
        sizes[dtype] = {p.name: p.stat().st_size for p in index.glob("*.usearch")}
    assert sizes["i8"].keys() == sizes["f32"].keys()
    for name in ("chunks.usearch", "entities.usearch"):  # these notes have no relations
        assert sizes["i8"][name] < sizes["f32"][name] / 2, sizes


def test_cli_text_output_of_every_index_command(tmp_path, capsys, model_folder):
    index = str(tmp_path / "index")
    notes = _notes(tmp_path / "notes")
    assert main(["index", str(notes), "--index", index, "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("added 3 documents (3 chunks) in ")
    assert main(["retrieve", "Why do otters hold hands?", "--index", index, "--top-k", "1",
                 "--method", "vector"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1 chunks by vector retrieval:" and lines[1].startswith("[1] ")
    assert f"  {notes}/a-otters.txt  (doc " in lines[1]
    assert lines[2].strip() == NOTES["a-otters.txt"]
    assert main(["retrieve", "When did Otto visit?", "--index", index, "--method", "auto"]) == 0
    assert capsys.readouterr().out.startswith("planner (")
    assert main(["documents", "--index", index]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[1:] for r in rows] == [["1", "chunks", f"{notes}/{n}"] for n in NOTES]
    assert main(["delete", rows[0].split()[0], "--index", index]) == 0
    assert capsys.readouterr().out.strip() == f"deleted {rows[0].split()[0]} (1 chunks)"
    assert main(["stats", "--index", index]) == 0
    stats = {k.strip(): v for k, v in (line.split(": ", 1) for line in capsys.readouterr().out.splitlines())}
    assert stats["documents"] == "2" and stats["index.sqlite"].endswith(" bytes")
    assert stats["total"].endswith(" bytes") and stats["table chunks"].endswith(" bytes")
    assert main(["compact", "--index", index]) == 0
    assert capsys.readouterr().out.startswith("compacted: ")


def test_cli_ask_text_and_stream(lihua_index, capsys, slm, monkeypatch):
    monkeypatch.setenv("EDGE_RAG_PROFILES", str(lihua_index.parent))
    (lihua_index.parent / "tiny-text.toml").write_text(f'slm = "{SMALL_SLM}"\nanswer_max_tokens = 8\n')
    question = ["ask", "Who is Li Hua's landlord?", "--index", str(lihua_index), "--profile",
                "tiny-text", "--top-k", "2", "--method", "vector"]
    assert main(question) == 0
    whole = capsys.readouterr().out
    assert main([*question, "--stream"]) == 0
    streamed = capsys.readouterr().out
    assert main([*question, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    for out in (whole, streamed):
        text, sources = out.split("\nsources:\n")
        assert text.strip() == answer["answer"].strip() and text.strip()
        lines = sources.splitlines()
        assert [line.split(" (doc ")[0] for line in lines[:2]] == [
            f"[{i}] {s['source']}" for i, s in enumerate(answer["sources"], 1)]
        assert lines[-1].startswith("timings: ")
    assert "first_token" in streamed.splitlines()[-1]


def test_missing_or_incomplete_model_is_model_not_found(tmp_path, capsys, lihua_index, model_folder):
    (tmp_path / "note.txt").write_text("A note for an index without its embedder.")
    home = str(tmp_path / "home")
    with EdgeRAG.open(tmp_path / "index", progress=False, models_home=home) as rag, \
            pytest.raises(ModelNotFound, match="edge-rag export embedder"):
        rag.insert(tmp_path / "note.txt")
    (tmp_path / "absent.toml").write_text('embedder = "absent-embedder"\n')
    code = main(["index", str(tmp_path / "note.txt"), "--index", str(tmp_path / "cli-index"),
                 "--profile", str(tmp_path / "absent.toml"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("edge-rag: error: no exported model at") and "absent-embedder" in err
    with EdgeRAG.open(lihua_index, create=False, slm="absent-slm") as rag, \
            pytest.raises(ModelNotFound, match="absent-slm.*edge-rag export slm"):
        rag.ask("Who is Li Hua's landlord?")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text((model_folder.path / "manifest.json").read_text())
    with pytest.raises(ModelNotFound, match="lacks"):
        ModelFolder.open(broken)


def test_slm_keyword_extractor_feeds_dual_and_topology(lihua_index, slm):
    with open_both(lihua_index, create=False, keyword_extractor="slm", slm=SMALL_SLM) as (rag, engine):
        assert "slm" not in engine.loaded()
        for method in ("dual", "topology"):
            result = rag.retrieve("When does Li Hua check in with Adam about moving in?",
                                  method=method, top_k=3)
            assert result.chunks and "keywords" in result.timings_ms, method
        assert "slm" in engine.loaded(), "the keywords were not written by the SLM"
    with open_both(lihua_index, create=False) as (rules, engine):
        rules.retrieve("When does Li Hua check in with Adam?", method="dual", top_k=3)
        assert "slm" not in engine.loaded()
