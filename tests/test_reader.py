"""Reading sources: text policy, records, archives and every kind of bad input."""

import io
import json
import os
import zipfile

import pytest

from edge_rag import BadDocument
from edge_rag.index import Document, read_sources

MB = 2**20


def _read(*paths, limit=MB):
    return list(read_sources(list(paths), limit))


def _text(doc: Document) -> str:
    return "".join(doc.blocks())


def test_text_file_is_read_whole(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("hello\nworld\n", encoding="utf-8")
    [doc] = _read(path)
    assert doc.source == str(path) and _text(doc) == "hello\nworld\n"


def test_bom_is_stripped_and_utf16_is_accepted(tmp_path):
    (tmp_path / "bom.txt").write_bytes("\ufeffcafé".encode("utf-8"))
    (tmp_path / "wide.txt").write_bytes("naïve text".encode("utf-16"))
    bom, wide = _read(tmp_path / "bom.txt", tmp_path / "wide.txt")
    assert _text(bom) == "café" and _text(wide) == "naïve text"


def test_invalid_utf8_is_replaced_with_a_warning(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good start \xff\xfe\xfa good end")
    [doc] = _read(path)
    assert _text(doc) == "good start \ufffd\ufffd\ufffd good end"
    assert doc.warnings and "U+FFFD" in doc.warnings[0]


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    [error] = _read(path)
    assert isinstance(error, BadDocument) and "binary" in str(error)


def test_empty_and_blank_documents_are_refused():
    for text in ("", "   \n\t  \n"):
        with pytest.raises(BadDocument, match="empty"):
            Document.from_text(text, "blank").fingerprint()


def test_missing_path_is_reported(tmp_path):
    [error] = _read(tmp_path / "nope.txt")
    assert isinstance(error, BadDocument) and "no such file" in str(error)


def test_oversized_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * (MB + 1))
    [error] = _read(path, limit=MB)
    assert isinstance(error, BadDocument) and "max_document_mb" in str(error)


def test_json_and_jsonl_records(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([{"title": "Ada", "text": "Ada wrote notes.", "year": 1843}]))
    (tmp_path / "b.jsonl").write_text('{"id": "x1", "body": "first"}\n\n{"content": "second"}\n{"nope": 1}\n')
    docs = _read(tmp_path)
    first, second, third, bad = docs
    assert first.source.endswith("a.json#Ada") and _text(first) == "Ada\nAda wrote notes."
    assert first.metadata == {"title": "Ada", "year": 1843}
    assert second.source.endswith("b.jsonl#x1") and _text(third) == "second"
    assert isinstance(bad, BadDocument) and "no text field" in str(bad)


def test_invalid_json_is_reported(tmp_path):
    (tmp_path / "broken.json").write_text("[{")
    [error] = _read(tmp_path / "broken.json")
    assert isinstance(error, BadDocument) and "invalid JSON" in str(error)


def test_folder_is_read_recursively_in_order(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("beta")
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "skip.bin").write_bytes(b"\x00")
    items = _read(tmp_path)
    assert [_text(d) for d in items if isinstance(d, Document)] == ["alpha", "beta"]
    [skipped] = [d for d in items if not isinstance(d, Document)]  # an unsupported type is reported
    assert skipped.group == "type .bin" and "not a supported type" in skipped.reason


def test_zip_members_are_read_in_place(tmp_path):
    archive = tmp_path / "docs.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("x/one.txt", "one")
        handle.writestr("x/two.md", "two")
        handle.writestr("x/ignored.png", b"\x00")
    docs = _read(archive)
    assert [d.source for d in docs] == [f"{archive}/x/one.txt", f"{archive}/x/two.md"]
    assert [_text(d) for d in docs] == ["one", "two"]


def test_fingerprint_is_the_same_for_file_and_string(tmp_path):
    path = tmp_path / "same.txt"
    path.write_text("same content", encoding="utf-8")
    [doc] = _read(path)
    assert doc.fingerprint() == Document.from_text("same content").fingerprint()


def test_a_bad_jsonl_line_is_one_error_named_like_its_record(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"text": "zero"}\n{"text": \n\n{"text": "two"}\n')
    zero, bad, two = _read(tmp_path / "r.jsonl")
    assert zero.source.endswith("r.jsonl#0") and two.source.endswith("r.jsonl#2")
    assert isinstance(bad, BadDocument) and bad.source.endswith("r.jsonl#1")
    assert "invalid JSON (line 2)" in str(bad)


def test_deep_json_is_one_error(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "next.txt").write_text("after the deep file")
    error, after = _read(tmp_path)
    assert isinstance(error, BadDocument) and "nested too deeply" in str(error)
    assert _text(after) == "after the deep file"


def test_zip_members_that_would_leave_the_archive_are_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name in ("../up.txt", "/abs.txt", "a/../../up2.txt", "C:/win.txt", "fine/ok.txt"):
            handle.writestr(name, "text")
    *refused, ok = sorted(_read(archive), key=lambda d: isinstance(d, Document))
    assert len(refused) == 4 and all("unsafe zip member" in str(e) for e in refused)
    assert ok.source == f"{archive}/fine/ok.txt"


def test_streams_stop_at_the_document_limit():
    from edge_rag.index.reader import capped_opener

    opener = capped_opener("s", lambda: io.BytesIO(b"x" * (MB + 10)), MB)
    with opener() as handle, pytest.raises(BadDocument, match="max_document_mb"):
        while handle.read(4096):
            pass
    with capped_opener("s", lambda: io.BytesIO(b"x" * MB), MB)() as handle:
        assert len(handle.read()) == MB


def test_a_nul_byte_past_the_sniffed_head_refuses_the_document(tmp_path):
    (tmp_path / "late.txt").write_bytes(b"words " * 4000 + b"\x00")
    [doc] = _read(tmp_path / "late.txt")
    with pytest.raises(BadDocument, match="binary"):
        _text(doc)


def test_symbolic_links_out_of_a_folder_are_skipped_unless_followed(tmp_path):
    from edge_rag.index.reader import Skipped

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "secret.txt").write_text("secret")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "own.txt").write_text("own")
    (folder / "secret.txt").symlink_to(tmp_path / "out" / "secret.txt")
    (folder / "loop").symlink_to(tmp_path, target_is_directory=True)  # leads out, and back in
    (folder / "gone.txt").symlink_to(tmp_path / "missing.txt")
    strict = _read(folder)
    assert [_text(d) for d in strict if isinstance(d, Document)] == ["own"]
    assert sorted(str(s).split(": ")[1].split(" (")[0] for s in strict if isinstance(s, Skipped)) == [
        "broken symbolic link, skipped", "symbolic link out of the folder",
        "symbolic link out of the folder"]
    followed = list(read_sources([folder], MB, follow_symlinks=True))
    # Each real folder is walked once: the loop reaches out/ but not in/ again.
    assert sorted(_text(d) for d in followed if isinstance(d, Document)) == ["own", "secret", "secret"]


def test_a_pipe_is_refused_not_waited_on(tmp_path):
    """Opening a FIFO for reading blocks until a writer comes: the reader never opens one."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Alpha is a letter.")
    os.mkfifo(folder / "queue.txt")
    named = list(read_sources([folder / "queue.txt"], 1 << 20))
    walked = list(read_sources([folder], 1 << 20))
    assert [type(item).__name__ for item in named] == ["BadDocument"]
    assert "not a regular file" in str(named[0])
    assert sorted(type(item).__name__ for item in walked) == ["Document", "Skipped"]
