"""``edge-rag sync``: an index that follows a folder, file by file, one transaction per file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edge_rag import EdgeRAG
from edge_rag.cli import main
from edge_rag.index.sync import Syncer
from edge_rag.index.sync import plan as sync_plan

from .conftest import open_both

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {
    "bees.txt": "Ada keeps seven beehives behind the copper mill.",
    "ferry.txt": "The salt ferry to Vesteroy leaves at 7:40 every morning.",
    "notes/kites.md": "# Kite Club\nThe kite club meets on the dunes at Skagen on Sundays.",
    "violin.txt": "Bob tunes his violin with a brass tuning fork from Cremona.",
}


def _write(folder: Path, texts: dict[str, str]) -> None:
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    _write(folder, TEXTS)
    return folder


def _texts(rag: EdgeRAG) -> list[str]:
    return sorted(c.text for d in rag.documents() for c in rag.chunks(d.id))


def _graph(capsys, index: Path) -> str:
    capsys.readouterr()
    assert main(["graph", "--index", str(index)]) == 0
    return capsys.readouterr().out


def test_edit_delete_add_then_sync_equals_a_fresh_build(tmp_path: Path, capsys, model_folder) -> None:
    folder, index = _folder(tmp_path), tmp_path / "index"
    assert main(["sync", str(folder), "--index", str(index), "--no-progress"]) == 0
    (folder / "bees.txt").write_text("Ada keeps eleven wasp nests behind the tin mill.", encoding="utf-8")
    (folder / "ferry.txt").unlink()
    (folder / "notes" / "lamps.txt").write_text("The lighthouse lamp at Lindesnes burns paraffin.")
    capsys.readouterr()
    assert main(["sync", str(folder), "--index", str(index), "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["added"], report["replaced"], report["removed"]) == (["notes/lamps.txt"], ["bees.txt"],
                                                                         ["ferry.txt"])
    assert report["unchanged"] == 2 and report["documents_added"] == 2 and report["documents_removed"] == 2
    with EdgeRAG.open(index, create=False) as rag:
        top = rag.retrieve("Who keeps beehives behind the copper mill?", top_k=5).chunks
        assert not any("beehives" in c.text or "salt ferry" in c.text for c in top)
        assert top[0].text == "Ada keeps eleven wasp nests behind the tin mill."
        synced = _texts(rag)
    fresh = tmp_path / "fresh"
    assert main(["index", str(folder), "--index", str(fresh), "--no-progress"]) == 0
    with EdgeRAG.open(fresh, create=False) as rag:
        assert _texts(rag) == synced
    assert _graph(capsys, index) == _graph(capsys, fresh)


def test_an_unchanged_second_sync_is_a_no_op(tmp_path: Path, model_folder) -> None:
    folder, index = _folder(tmp_path), tmp_path / "index"
    with open_both(index, progress=False) as (rag, engine):
        assert len(rag.sync(folder).added) == 4
    (folder / "violin.txt").touch()  # mtime moved, same bytes: hashed, recognised, not read again
    time.sleep(0.01)
    with open_both(index, progress=False) as (rag, engine):
        version = engine.store.data_version()
        report = rag.sync(folder)
        assert (report.added, report.replaced, report.removed, report.unchanged) == ([], [], [], 4)
        assert "embedder" not in engine.loaded()  # nothing was read: the embedder was never loaded
        again = rag.sync(folder)
        assert again.unchanged == 4 and engine.store.data_version() != version  # only the touch was written
        settled = engine.store.data_version()
        assert rag.sync(folder).unchanged == 4 and engine.store.data_version() == settled  # nothing written


def test_dry_run_changes_nothing(tmp_path: Path, capsys, model_folder) -> None:
    folder, index = _folder(tmp_path), tmp_path / "index"
    assert main(["sync", str(folder), "--index", str(index), "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] and len(report["added"]) == 4
    with EdgeRAG.open(index, create=False) as rag:
        assert rag.documents() == []


def test_documents_not_from_the_folder_are_never_touched(tmp_path: Path, model_folder) -> None:
    folder, other = _folder(tmp_path), tmp_path / "other"
    _write(other, {"lamps.txt": "The lighthouse lamp at Lindesnes burns paraffin."})
    with EdgeRAG.open(tmp_path / "index", progress=False, extractor="none") as rag:
        rag.insert_text(TEXTS["violin.txt"], source="typed by hand")
        rag.insert_text("A note typed by hand about the harbour.", source="typed")
        rag.sync(other)
        rag.sync(folder)
        for name in TEXTS:
            (folder / name).unlink()
        report = rag.sync(folder)
        assert len(report.removed) == 4 and report.documents_removed == 3  # violin.txt was not its own
        assert _texts(rag) == sorted(["A note typed by hand about the harbour.", TEXTS["violin.txt"],
                                      "The lighthouse lamp at Lindesnes burns paraffin."])


def test_a_file_that_changes_while_read_is_picked_up_next_time(tmp_path: Path, model_folder) -> None:
    folder = _folder(tmp_path)
    with open_both(tmp_path / "index", progress=False, extractor="none") as (rag, engine):
        rag.sync(folder)
        (folder / "bees.txt").write_text("Ada keeps eleven wasp nests.", encoding="utf-8")
        found = sync_plan(engine.store, folder, follow_symlinks=False)
        (folder / "bees.txt").write_text("Ada keeps twelve wasp nests now.", encoding="utf-8")  # meanwhile
        syncer = Syncer(engine.store, engine.indexer(), 2**20, follow_symlinks=False)
        report = syncer.apply(found, progress=False)
        assert report.busy == ["bees.txt"] and report.replaced == [] and report.documents_added == 0
        assert TEXTS["bees.txt"] in _texts(rag)  # the old text, whole: never both, never neither
        assert not any("wasp" in t for t in _texts(rag))
        assert rag.sync(folder).replaced == ["bees.txt"]
        texts = _texts(rag)
        assert "Ada keeps twelve wasp nests now." in texts and TEXTS["bees.txt"] not in texts


def test_a_grown_mbox_keeps_its_old_messages(tmp_path: Path, model_folder) -> None:
    from benchmarks import sample_files as files

    folder = tmp_path / "mail"
    folder.mkdir()
    files.write_mbox(folder / "box.mbox", 6)
    with EdgeRAG.open(tmp_path / "index", progress=False, extractor="none") as rag:
        assert rag.sync(folder).documents_added == 6
        ids = {d.id for d in rag.documents()}
        files.write_mbox(folder / "box.mbox", 7)  # the same six, then one more
        report = rag.sync(folder)
        assert report.replaced == ["box.mbox"]
        assert (report.documents_added, report.documents_removed) == (1, 0)
        assert ids < {d.id for d in rag.documents()}


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_watch_syncs_after_changes_until_interrupted(tmp_path: Path, model_folder, stop: int) -> None:
    folder, index = _folder(tmp_path), tmp_path / "index"
    command = [sys.executable, "-m", "edge_rag.cli", "sync", str(folder), "--index", str(index), "--watch",
               "--no-progress", "--json"]
    # Ctrl-C as in a terminal, even when the suite runs in a background job (which starts with SIGINT
    # ignored, and a child inherits that: the watcher would never stop).
    watcher = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert json.loads(_next_report(watcher))["added"] == sorted(TEXTS)
        (folder / "lamps.txt").write_text("The lighthouse lamp at Lindesnes burns paraffin.")
        assert json.loads(_next_report(watcher))["added"] == ["lamps.txt"]
    finally:
        watcher.send_signal(stop)
        out, err = watcher.communicate(timeout=120)
    assert watcher.returncode == 0 and "sync stopped" in err


def _next_report(process: subprocess.Popen) -> str:
    """One pretty-printed JSON report from the watcher's output."""
    assert process.stdout is not None
    lines = [process.stdout.readline()]
    while lines[-1] and lines[-1] != "}\n":
        lines.append(process.stdout.readline())
    return "".join(lines)


def test_an_index_inside_the_folder_is_left_out(tmp_path: Path, model_folder) -> None:
    folder = _folder(tmp_path)
    with EdgeRAG.open(folder / "index", progress=False, extractor="none") as rag:
        first = rag.sync(folder)
        assert len(first.added) == 4 and first.warnings == [] and first.failed == []
        assert rag.sync(folder).unchanged == 4
