"""Encryption at rest (SQLCipher, the [encrypt] extra) and deletes that leave nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_rag import EdgeRAG
from edge_rag.cli import build_parser, main
from edge_rag.errors import IndexLocked, WrongKey
from edge_rag.store.codec import search_form

from .conftest import open_both

ROOT = Path(__file__).resolve().parent.parent
KEY = "correct horse battery staple"
SECRET = "Zorblax Quintavian: the marmalade zeppelin hums ultraviolet at noon."
# Another process reading the index (SQLite's locks are per process: in this one it would not count).
READER = ("import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]); "
          "print(c.execute('SELECT count(*) FROM documents').fetchone()[0], flush=True); time.sleep(60)")
WRONG_KEY_LINE = "edge-rag: error: index is encrypted: wrong or missing key\n"


def secret_file(path: Path, text: str) -> Path:
    """A key file only its owner may read (others' are refused)."""
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def phrases(folder: Path, count: int = 40) -> list[bytes]:
    """Distinctive phrases of a corpus: the text of chat messages of 30+ characters."""
    found = []
    for path in sorted(folder.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            body = line.split(": ", 1)[-1].strip()
            if len(body) >= 30 and re.search(r"[a-z]{5}", body):
                found.append(body[:30].encode())
    return found[:: max(1, len(found) // count)][:count]


def files_holding(directory: Path, needles: list[bytes]) -> dict[str, list[bytes]]:
    """Every file of the directory that holds one of the byte strings, with those it holds."""
    out = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):  # walk/'s arrays too
        data = path.read_bytes()
        if hits := [n for n in needles if n in data]:
            out[str(path.relative_to(directory))] = hits
    return out


@pytest.fixture(scope="module")
def secret_index(tmp_path_factory: pytest.TempPathFactory, lihua_dir: Path, model_folder) -> Path:
    """``lihua_dir`` indexed encrypted, with HNSW files where a plain index would keep them."""
    path = tmp_path_factory.mktemp("encrypted") / "index"
    with open_both(path, key=KEY, progress=False, vector_file_min=0) as (rag, engine):
        assert rag.insert(lihua_dir).ok
        assert engine.store.encrypted
    return path


def test_an_encrypted_index_holds_no_plaintext(secret_index: Path, lihua_dir: Path) -> None:
    needles = phrases(lihua_dir)
    assert len(needles) >= 30
    assert files_holding(lihua_dir, needles)  # the corpus itself does hold them
    assert sorted(p.name for p in secret_index.iterdir()) == ["index.sqlite", "write.lock"]
    assert files_holding(secret_index, needles) == {}
    assert (secret_index / "index.sqlite").read_bytes()[:16] != b"SQLite format 3\x00"


def test_while_open_the_write_ahead_log_is_encrypted_too(secret_index: Path, lihua_dir: Path) -> None:
    with open_both(secret_index, key=KEY, progress=False) as (rag, engine):
        rag.insert_text(SECRET, "secret.txt")
        assert (secret_index / "index.sqlite-wal").stat().st_size > 0
        assert files_holding(secret_index, [b"marmalade zeppelin", b"Zorblax"]) == {}
        pragmas = {name: engine.store.conn.execute(f"PRAGMA {name}").fetchone()[0]
                   for name in ("temp_store", "secure_delete")}
        assert pragmas == {"temp_store": 2, "secure_delete": 1}  # temp files in memory only
        rag.delete(rag.documents()[-1].id)


def test_retrieval_reads_as_the_plain_index_does(secret_index: Path, lihua_index: Path) -> None:
    questions = ["When does Li Hua move in?", "Which game does Wolfgang like?", "dinner plans"]
    with EdgeRAG.open(lihua_index, create=False) as plain, \
            EdgeRAG.open(secret_index, create=False, key=KEY) as secret:
        for question in questions:
            want = [(c.source, c.text) for c in plain.retrieve(question).chunks]
            assert [(c.source, c.text) for c in secret.retrieve(question).chunks] == want
            assert [c.text for c in secret.retrieve(question, "local").chunks]


def test_a_wrong_or_missing_key_is_refused_and_changes_nothing(secret_index: Path) -> None:
    before = {p.name: p.read_bytes() for p in secret_index.iterdir()}
    for key in (None, "not the key at all", "ab" * 32):
        with pytest.raises(WrongKey, match="^index is encrypted: wrong or missing key$"):
            EdgeRAG.open(secret_index, create=False, key=key)
    assert {p.name: p.read_bytes() for p in secret_index.iterdir()} == before


def test_the_cli_says_one_line_and_sqlcipher_stays_quiet(secret_index: Path, tmp_path: Path) -> None:
    wrong = secret_file(tmp_path / "wrong.key", "a wrong guess of a key\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EDGE_RAG_KEY_FILE", None)
    for extra in ([], ["--key-file", str(wrong)]):
        done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "documents", "--index",
                               str(secret_index), *extra], capture_output=True, text=True, env=env)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", WRONG_KEY_LINE)


def test_the_key_comes_from_a_file_never_from_an_argument() -> None:
    options = {o for a in build_parser()._subparsers._group_actions[0].choices["ask"]._actions
               for o in a.option_strings}
    assert "--key-file" in options and "--key" not in options


def test_encrypt_rekey_decrypt_round_trip(tmp_path: Path, lihua_dir: Path, model_folder,
                                          monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    index, old, new = tmp_path / "index", tmp_path / "old.key", tmp_path / "new.key"
    secret_file(old, KEY + "\n")
    secret_file(new, "0123456789abcdef" * 4)  # 64 hex digits: a raw key
    files = sorted(lihua_dir.glob("*.txt"))[:3]
    with EdgeRAG.open(index, progress=False, vector_file_min=0) as rag:
        rag.insert(*files)
        want = [c.text for c in rag.retrieve("moving in").chunks]
    assert (index / "chunks.usearch").is_file()
    needles = phrases(lihua_dir)[:5] + [line.encode() for line in
                                        files[0].read_text().splitlines()[1:4] if len(line) > 20]
    assert files_holding(index, needles)
    assert main(["encrypt", "--index", str(index), "--key-file", str(old)]) == 0
    assert sorted(p.name for p in index.iterdir()) == ["index.sqlite", "write.lock"]
    assert files_holding(index, needles) == {}
    assert main(["rekey", "--index", str(index), "--key-file", str(old), "--new-key-file", str(new)]) == 0
    assert main(["documents", "--index", str(index), "--key-file", str(old)]) == 1
    monkeypatch.setenv("EDGE_RAG_KEY_FILE", str(new))
    with EdgeRAG.open(index, create=False, key=new.read_bytes()) as rag:
        assert [c.text for c in rag.retrieve("moving in").chunks] == want
    assert main(["decrypt", "--index", str(index), "--json"]) == 0
    monkeypatch.delenv("EDGE_RAG_KEY_FILE")
    assert '"encrypted": false' in capsys.readouterr().out
    with EdgeRAG.open(index, create=False) as rag:
        assert [c.text for c in rag.retrieve("moving in").chunks] == want


def test_conversions_refuse_what_they_cannot_do(tmp_path: Path, model_folder, capsys) -> None:
    key = secret_file(tmp_path / "k", KEY)
    with EdgeRAG.open(tmp_path / "plain", progress=False) as rag:
        rag.insert_text(SECRET, "secret.txt")
    reader = subprocess.Popen([sys.executable, "-c", READER, str(tmp_path / "plain" / "index.sqlite")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "1"
        with pytest.raises(IndexLocked, match="open in another process"):
            EdgeRAG.change_key(tmp_path / "plain", None, KEY)
    finally:
        reader.kill()
        reader.wait()
    assert main(["decrypt", "--index", str(tmp_path / "plain"), "--key-file", str(key)]) == 1
    assert "is not encrypted" in capsys.readouterr().err
    assert main(["encrypt", "--index", str(tmp_path / "plain")]) == 1
    assert "needs the key" in capsys.readouterr().err
    assert main(["encrypt", "--index", str(tmp_path / "plain"), "--key-file", str(key)]) == 0
    assert main(["encrypt", "--index", str(tmp_path / "plain"), "--key-file", str(key)]) == 1
    assert "already encrypted" in capsys.readouterr().err
    assert main(["encrypt", "--index", str(tmp_path / "absent"), "--key-file", str(key)]) == 1
    with EdgeRAG.open(tmp_path / "plain", create=False, key=KEY) as rag:
        assert [d.source for d in rag.documents()] == ["secret.txt"]


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
def test_a_deleted_document_leaves_no_trace_in_any_file(tmp_path: Path, lihua_dir: Path, model_folder,
                                                        key: str | None) -> None:
    index = tmp_path / "index"
    with open_both(index, key=key, progress=False, vector_file_min=0) as (rag, engine):
        rag.insert(*sorted(lihua_dir.glob("*.txt"))[:4])
        doc = rag.insert_text(SECRET + "\nLiHua: Quintavian, see you there!", "secret.txt").added[0]
        ids = [c.id for c in engine.store.document_chunks(doc)]
        codes = {int(k): row for keys, rows in engine.store.iter_codes("chunk") for k, row in zip(keys, rows)}
        vectors = [search_form(codes[i][None], "i8")[0].tobytes() for i in ids]
        if key is None:  # a plain index keeps the text in SQLite, the vector in its HNSW file
            assert files_holding(index, [b"marmalade zeppelin"])
            assert files_holding(index, vectors[:1]) == {"chunks.usearch": vectors[:1]}
        assert rag.delete(doc) == 1
        assert engine.store.conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        needles = [b"marmalade zeppelin", b"Zorblax", b"ultraviolet", *vectors]
        assert files_holding(index, needles) == {}  # while the writer still holds the index open
    assert files_holding(index, needles) == {}
    with open_both(index, key=key, create=False) as (rag, engine):
        assert all(c.doc_id != doc for c in rag.retrieve("marmalade zeppelin").chunks)
        assert np.isfinite([c.score for c in rag.retrieve("zeppelin").chunks]).all()


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
def test_a_file_replaced_by_sync_leaves_no_trace_of_its_old_text(tmp_path: Path, lihua_dir: Path,
                                                                 model_folder, key: str | None) -> None:
    folder, index = tmp_path / "folder", tmp_path / "index"
    folder.mkdir()
    for path in sorted(lihua_dir.glob("*.txt"))[:3]:
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "note.txt").write_text(SECRET + "\n", encoding="utf-8")
    with EdgeRAG.open(index, key=key, progress=False, vector_file_min=0) as rag:
        assert len(rag.sync(folder).added) == 4
        assert files_holding(index, [b"marmalade zeppelin"]) or key is not None
        (folder / "note.txt").write_text("The boiler is serviced every May.\n", encoding="utf-8")
        os.utime(folder / "note.txt", ns=(1, 1))  # the mtime moves even on a coarse clock
        assert rag.sync(folder).replaced == ["note.txt"]
        assert files_holding(index, [b"marmalade zeppelin", b"Zorblax", b"ultraviolet"]) == {}  # still open
    assert files_holding(index, [b"marmalade zeppelin", b"Zorblax", b"ultraviolet"]) == {}
    with EdgeRAG.open(index, key=key, create=False) as rag:
        assert "boiler" in rag.retrieve("When is the boiler serviced?").chunks[0].text


def test_only_64_hex_digits_are_a_raw_key_anything_else_is_derived(tmp_path: Path, model_folder) -> None:
    from edge_rag.store.cipher import sqlcipher

    passphrase = "0123456789abcdefghijklmnopqrstuv"  # 32 characters: once taken as a raw 256-bit key
    with EdgeRAG.open(tmp_path / "index", key=passphrase.encode(), progress=False) as rag:
        rag.insert_text(SECRET, "secret.txt")
    module = sqlcipher()
    for given, opens in ((f"x'{passphrase.encode().hex()}'", False), (passphrase, True)):
        conn = module.connect(str(tmp_path / "index" / "index.sqlite"))
        conn.execute("PRAGMA key = '" + given.replace("'", "''") + "'")
        try:
            assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1 and opens
        except module.DatabaseError:
            assert not opens
        finally:
            conn.close()


def test_a_key_file_others_can_read_is_refused_with_the_chmod(tmp_path: Path, model_folder, capsys) -> None:
    key = secret_file(tmp_path / "key", KEY)
    with EdgeRAG.open(tmp_path / "plain", progress=False) as rag:
        rag.insert_text(SECRET, "secret.txt")
    key.chmod(0o644)
    assert main(["encrypt", "--index", str(tmp_path / "plain"), "--key-file", str(key)]) == 1
    assert f"can be read by other users (mode 0644): run chmod 600 {key}" in capsys.readouterr().err
    assert (tmp_path / "plain" / "index.sqlite").read_bytes().startswith(b"SQLite format 3")  # untouched
    assert main(["encrypt", "--index", str(tmp_path / "plain"), "--key-file", str(key),
                 "--insecure-key-file"]) == 0


def test_a_short_passphrase_is_refused_and_rekey_moves_an_index_off_one(tmp_path: Path, model_folder) -> None:
    from edge_rag.store.cipher import WeakKey, sqlcipher

    with pytest.raises(WeakKey, match="shorter than 12 characters"):
        EdgeRAG.open(tmp_path / "new", key="a", progress=False)
    assert not (tmp_path / "new" / "index.sqlite").exists()
    with EdgeRAG.open(tmp_path / "index", key=KEY, progress=False) as rag:
        rag.insert_text(SECRET, "secret.txt")
    conn = sqlcipher().connect(str(tmp_path / "index" / "index.sqlite"))  # an index keyed before the rule
    conn.execute(f"PRAGMA key = '{KEY}'")
    conn.execute("PRAGMA rekey = 'a'")
    conn.close()
    with pytest.raises(WeakKey):
        EdgeRAG.open(tmp_path / "index", create=False, key="a")
    with pytest.raises(WeakKey):
        EdgeRAG.change_key(tmp_path / "index", "a", "b")
    EdgeRAG.change_key(tmp_path / "index", "a", KEY)
    with EdgeRAG.open(tmp_path / "index", create=False, key=KEY) as rag:
        assert [d.source for d in rag.documents()] == ["secret.txt"]


KILLED_WRITER = """
import sys
from edge_rag import EdgeRAG
rag = EdgeRAG.open(sys.argv[1], create=False)
removed = rag.delete(sys.argv[2])
print(removed, flush=True)
sys.stdin.read()  # alive, the index open, until killed
"""


def test_a_delete_by_the_cli_and_by_a_writer_killed_after_it_leaves_no_trace(tmp_path: Path, lihua_dir: Path,
                                                                           model_folder, capsys) -> None:
    index = tmp_path / "index"
    with EdgeRAG.open(index, progress=False) as rag:
        rag.insert(*sorted(lihua_dir.glob("*.txt"))[:2])
        first = rag.insert_text(SECRET, "secret.txt").added[0]
        second = rag.insert_text(SECRET.replace("noon", "dusk"), "secret-2.txt").added[0]
    needles = [b"marmalade zeppelin", b"Zorblax", b"ultraviolet"]
    with EdgeRAG.open(index, create=False) as reader:  # another handle, as a server's lanes hold
        reader.documents()
        assert main(["delete", first, "--index", str(index)]) == 0
        assert files_holding(index, needles)  # the second still holds the phrase
        writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(index), second],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "1"
            assert files_holding(index, needles) == {}  # the writer alive
        finally:
            writer.kill()
            writer.wait()
        assert files_holding(index, needles) == {}  # after kill -9
        assert {first, second}.isdisjoint(d.id for d in reader.documents())


def test_an_index_keyed_by_the_old_raw_rule_is_named_and_rekey_moves_it(tmp_path: Path, model_folder) -> None:
    from edge_rag.store.cipher import sqlcipher

    passphrase = "0123456789abcdefghijklmnopqrstuv"  # 32 characters: the old rule took them as the raw key
    with EdgeRAG.open(tmp_path / "index", key=passphrase, progress=False) as rag:
        rag.insert_text(SECRET, "secret.txt")
    conn = sqlcipher().connect(str(tmp_path / "index" / "index.sqlite"))
    conn.execute(f"PRAGMA key = '{passphrase}'")
    conn.execute(f"PRAGMA rekey = \"x'{passphrase.encode().hex()}'\"")  # as an older edge-rag keyed it
    conn.close()
    with pytest.raises(WrongKey, match="keyed by an older edge-rag"):
        EdgeRAG.open(tmp_path / "index", key=passphrase, create=False)
    EdgeRAG.change_key(tmp_path / "index", passphrase, passphrase)
    with EdgeRAG.open(tmp_path / "index", key=passphrase, create=False) as rag:
        assert len(rag.documents()) == 1
