"""A folder of hostile files: ``edge-rag index`` refuses each bad one clearly and indexes the rest.

The corpus holds every kind of bad input a user's folder can hold (deep JSON, a symbolic link out
of the folder, zip members named ``../x`` or ``/x``, a zip member that inflates past what its
directory says, bad JSON and JSONL lines, NUL bytes, invalid UTF-8, a single line of a few MB,
control characters in names, an empty file) next to good documents. The multi-MB line here is a
JSONL record whose bulk is a metadata field, so it is read and parsed whole but embeds as one
chunk; a text line of a few MB takes minutes to embed: its one measurement is kept in
``benchmarks/results/long_line.json`` (the script was retired in issue 62).
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from edge_rag import EdgeRAG

MB = 2**20
LIMIT_MB = 4
DEPTH = 100_000
# Good documents: a file name (relative to the folder) and a sentence only that document holds.
GOOD = {
    "good.txt": "The lighthouse keeper Mara polishes the brass lens every Sunday morning.",
    "notes.md": "# Orchard\nThe quince trees behind the mill flower late in April.",
    "invalid-utf8.txt": "Beekeeper Tomas moves the hives to the heather moor \udcff in August.",
    "new\nline\x1b[31m.txt": "The ferry to Inishmore leaves at seven when the tide allows.",
    "zz-after-deep.txt": "Glassblowers in the old quarter anneal their vases overnight.",
}
GOOD_RECORDS = {
    "records.jsonl#r1": "The cartographer Ilse redrew the river delta after the flood.",
    "records.jsonl#2": "Salt pans on the island dry fastest under the August wind.",
    "list.json#Kites": "Kites\nThe kite festival on the dunes draws flyers from three countries.",
    "archive.zip/ok/inner.txt": "The archive's inner note says the violin maker uses spruce tops.",
    "long-line.jsonl#long": "The long record says the bell foundry casts on Thursdays.",
}
OUTSIDE = "Zanzibar saffron ledger: the secret that lives outside the folder."


def _lying_zip_member(name: str, size: int) -> bytes:
    """A one-member zip whose directory says 1,000 bytes while the member inflates to ``size``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, b"bomb " * (size // 5))
    data = bytearray(buffer.getvalue())
    struct.pack_into("<I", data, data.find(b"PK\x03\x04") + 22, 1000)
    struct.pack_into("<I", data, data.rfind(b"PK\x01\x02") + 24, 1000)
    return bytes(data)


def _write_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ok/inner.txt", GOOD_RECORDS["archive.zip/ok/inner.txt"])
        archive.writestr("../escape.txt", "A member that would land outside the archive.")
        archive.writestr("/absolute.txt", "A member with an absolute name.")
        archive.writestr("big.txt", b"quince " * ((LIMIT_MB + 1) * MB // 7))
    (path.parent / "bomb.zip").write_bytes(_lying_zip_member("bomb.txt", (LIMIT_MB + 4) * MB))


def _write_records(folder: Path) -> None:
    deep_line = '{"text": "deep", "x": ' + "[" * DEPTH + "]" * DEPTH + "}"
    lines = [json.dumps({"id": "r1", "text": GOOD_RECORDS["records.jsonl#r1"]}),
             '{"text": "an unterminated record',
             "",
             json.dumps({"text": GOOD_RECORDS["records.jsonl#2"]}),
             deep_line]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "list.json").write_text(json.dumps(
        [{"title": "Kites", "text": GOOD_RECORDS["list.json#Kites"].split("\n", 1)[1]},
         {"title": "No text", "year": 1999}]), encoding="utf-8")
    (folder / "deep.json").write_text("[" * DEPTH + "]" * DEPTH, encoding="utf-8")
    (folder / "bad.json").write_text('{"text": "half a record", ', encoding="utf-8")


def _write_outside(root: Path, folder: Path) -> None:
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(OUTSIDE, encoding="utf-8")
    (folder / "link-to-secret.txt").symlink_to(outside / "secret.txt")
    (folder / "linked-dir").symlink_to(outside, target_is_directory=True)


def build_corpus(root: Path) -> Path:
    """Write the hostile folder under ``root``; returns the folder."""
    folder = root / "hostile"
    folder.mkdir()
    for name, text in GOOD.items():
        (folder / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    bulk = " ".join(f"w{i}" for i in range(3 * MB // 7))
    (folder / "long-line.jsonl").write_text(json.dumps(
        {"id": "long", "text": GOOD_RECORDS["long-line.jsonl#long"], "notes": bulk}) + "\n")
    (folder / "nul.txt").write_bytes(b"text with a NUL \x00 in it")
    (folder / "nul-late.txt").write_bytes(b"plain words " * 1000 + b"\x00 late NUL")
    (folder / "empty.txt").write_bytes(b"")
    _write_records(folder)
    _write_zip(folder / "archive.zip")
    _write_outside(root, folder)
    return folder


# Each refused document: its source (relative to the folder) and words its error must contain.
REFUSED = {
    "deep.json": "nested too deeply",
    "bad.json": "invalid JSON",
    "records.jsonl#1": "invalid JSON (line 2)",
    "records.jsonl#3": "nested too deeply (line 5)",
    "list.json#No text": "no text field",
    "nul.txt": "binary",
    "nul-late.txt": "binary",
    "empty.txt": "empty",
    "archive.zip/../escape.txt": "unsafe zip member name",
    "archive.zip//absolute.txt": "unsafe zip member name",
    "archive.zip/big.txt": "max_document_mb",
    "bomb.zip/bomb.txt": "cannot read zip member",
}
WARNED = {"invalid-utf8.txt": "U+FFFD", "link-to-secret.txt": "symbolic link out of the folder",
          "linked-dir": "symbolic link out of the folder"}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, model_folder) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """The hostile folder indexed once by the real ``edge-rag index`` command."""
    root = tmp_path_factory.mktemp("hostile")
    folder = build_corpus(root)
    profile = root / "small-limit.toml"
    profile.write_text(f"max_document_mb = {LIMIT_MB}\n", encoding="utf-8")
    command = [sys.executable, "-m", "edge_rag.cli", "index", str(folder), "--index",
               str(root / "index"), "--profile", str(profile), "--no-progress", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=900)
    return folder, root / "index", done


def _env() -> dict[str, str]:
    here = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}


def test_index_exits_1_without_a_traceback(indexed):
    _, _, done = indexed
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr


def test_each_bad_document_gets_one_clear_error(indexed):
    folder, _, done = indexed
    failed = json.loads(done.stdout)["failed"]
    sources = [f["source"] for f in failed]
    assert sorted(sources) == sorted(f"{folder}/{name}" for name in REFUSED)
    for item in failed:
        expected = REFUSED[item["source"][len(str(folder)) + 1 :]]
        assert item["error"].startswith(item["source"] + ": ") and expected in item["error"], item
    errors = done.stderr.strip().splitlines()
    assert len(errors) == len(REFUSED) and all(e.startswith("edge-rag: error: ") for e in errors)


def test_warnings_name_the_skipped_links_and_the_replaced_bytes(indexed):
    folder, _, done = indexed
    warnings = json.loads(done.stdout)["warnings"]
    for name, words in WARNED.items():
        assert any(w.startswith(f"{folder}/{name}: ") and words in w for w in warnings), name


def test_every_good_document_is_indexed_and_searchable(indexed):
    folder, index, _ = indexed
    expected = {f"{folder}/{name}" for name in [*GOOD, *GOOD_RECORDS]}
    with EdgeRAG.open(index, create=False) as rag:
        assert {d.source for d in rag.documents()} == expected
        for name, text in {**GOOD, **GOOD_RECORDS}.items():
            found = rag.retrieve(text.split("\n")[-1].replace("\udcff", ""), top_k=1).chunks
            assert found[0].source == f"{folder}/{name}", name
        [long] = [d for d in rag.documents() if d.source.endswith("#long")]
        assert len(long.metadata["notes"]) > 3 * MB and long.n_chunks == 1


def test_nothing_from_outside_the_folder_is_indexed(indexed):
    _, index, _ = indexed
    with EdgeRAG.open(index, create=False) as rag:
        top = rag.retrieve(OUTSIDE, top_k=3).chunks
        assert all("saffron" not in c.text and "outside" not in c.source for c in top)
        assert not any("outside" in d.source or "link" in d.source for d in rag.documents())


def test_control_characters_in_names_are_printed_escaped(indexed, capsys):
    from edge_rag.cli import main

    folder, index, _ = indexed
    assert main(["documents", "--index", str(index)]) == 0
    out = capsys.readouterr().out
    assert "new\\nline\\x1b[31m.txt" in out and "\x1b" not in out
    assert len(out.strip().splitlines()) == len(GOOD) + len(GOOD_RECORDS)


def test_follow_symlinks_setting_allows_links_out_of_the_folder(tmp_path, model_folder):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "own.txt").write_text("Our own note about copper kettles.", encoding="utf-8")
    _write_outside(tmp_path, folder)
    with EdgeRAG.open(tmp_path / "strict", progress=False) as rag:
        report = rag.insert(folder)
        assert report.ok and len(report.added) == 1 and len(report.warnings) == 2
    with EdgeRAG.open(tmp_path / "following", progress=False, follow_symlinks=True) as rag:
        report = rag.insert(folder)
        assert report.ok and len(report.added) == 2 and len(report.duplicates) == 1
        assert rag.retrieve(OUTSIDE, top_k=1).chunks[0].text == OUTSIDE
