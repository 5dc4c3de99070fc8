"""Readers for PDF, HTML, e-mail, Word and CSV: real files written with the real libraries, titles
for every document, one clear line per bad input and one warning per missing extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.index import sample_files as files
from edge_rag import BadDocument, EdgeRAG
from edge_rag.index import Document, Skipped, read_sources
from edge_rag.index.reader import SkipTally

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20
MESSAGES = 1000


def _read(*paths, limit=64 * MB) -> list:
    return list(read_sources(list(paths), limit))


def _docs(items) -> dict[str, Document]:
    return {Path(d.source).name: d for d in items if isinstance(d, Document)}


def _text(doc: Document) -> str:
    return "".join(doc.blocks())


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """Every format, an mbox of 1,000 messages (written once for the module)."""
    folder = tmp_path_factory.mktemp("mixed") / "docs"
    files.write_all(folder, MESSAGES)
    return folder


def test_every_format_gives_documents_with_titles_and_sources(mixed: Path) -> None:
    items = _read(mixed)
    docs = _docs(items)
    assert docs["report.pdf#p1"].metadata == {"title": "Apiary Report", "page": 1, "pages": 2}
    assert docs["report.pdf#p2"].metadata["title"] == "Apiary Report (page 2)"
    assert "Lillehammer" in _text(docs["report.pdf#p2"])
    ferry = _text(docs["ferry.html"])
    assert docs["ferry.html"].metadata == {"title": "Island Ferry Timetable"}
    assert "7:40" in ferry and not any(w in ferry for w in ("tracking", "Timetables |", "Copyright", "color"))
    order = docs["order.eml"]
    assert order.metadata["title"] == "Candle order for the chapel" and order.metadata["attachments"] == 1
    assert order.metadata["from"] == "bob@example.org" and "2024" in order.metadata["date"]
    assert _text(order).startswith("Candle order for the chapel\nFrom: bob@example.org\n")
    planted = docs[f"letters.mbox#{files.planted_message(MESSAGES)}"]
    assert "blue flowerpot" in _text(planted) and "<p>" not in _text(planted)  # HTML part converted
    assert sum(name.startswith("letters.mbox#") for name in docs) == MESSAGES
    assert docs["harvest.docx"].metadata == {"title": "Hallberg Farm Harvest"}
    assert "quince | 312 kg" in _text(docs["harvest.docx"])
    assert docs["kites.md"].metadata == {"title": "Kite Club"}
    assert docs["violin.txt"].metadata == {"title": "Bob's violin"}
    assert _text(docs["players.csv#1"]) == "name: Edda Moberg\ninstrument: cello\ntown: Bergen"
    assert docs["players.csv#1"].metadata == {"title": "Edda Moberg"}


def test_scans_and_encrypted_pdfs_are_one_line_each(mixed: Path) -> None:
    errors = {Path(e.source).name: str(e) for e in _read(mixed) if isinstance(e, BadDocument)}
    assert set(errors) == {"scan.pdf", "locked.pdf"}
    assert "no text layer" in errors["scan.pdf"] and "needs OCR" in errors["scan.pdf"]
    assert "encrypted PDF" in errors["locked.pdf"]
    assert all("\n" not in e for e in errors.values())


def test_attachments_are_counted_into_one_warning(mixed: Path) -> None:
    tally = SkipTally()
    for item in _read(mixed / "order.eml"):
        if isinstance(item, Skipped):
            tally.add(item)
    example = f"{mixed}/order.eml/chapel.png"
    assert tally.warnings() == [f"e-mail attachments are not read (1 skipped, e.g. {example})"]


@pytest.mark.parametrize(("head", "name", "title"), [
    ("Lord Peter Wimsey (film)\nA 1935 film.", "1.txt", "Lord Peter Wimsey (film)"),
    ("intro line\n\n# Real Heading\nbody", "a.md", "Real Heading"),
    ("Dear Bob,\nthe meeting moved.", "letter-to-bob.txt", "letter-to-bob"),
    ("x " * 80, "long.txt", "long"),
])
def test_plain_files_get_a_title(tmp_path: Path, head: str, name: str, title: str) -> None:
    (tmp_path / name).write_text(head, encoding="utf-8")
    [doc] = _read(tmp_path / name)
    assert doc.metadata == {"title": title} and _text(doc) == head  # the text itself is unchanged


def test_records_keep_their_own_title(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(json.dumps({"title": "Ada", "text": "A note."}) + "\n")
    [doc] = _read(tmp_path / "r.jsonl")
    assert doc.metadata == {"title": "Ada"} and _text(doc) == "Ada\nA note."


def test_bad_inputs_are_one_clear_line_each(tmp_path: Path, mixed: Path) -> None:
    files.write_damaged_pdf(mixed / "report.pdf", tmp_path / "damaged.pdf")
    files.write_renamed_zip(tmp_path / "photos.docx")
    files.write_json_strings(tmp_path / "lines.json", 200_000)
    errors = [e for e in _read(tmp_path) if isinstance(e, BadDocument)]
    by_name = {Path(e.source).name: str(e) for e in errors}
    assert len(errors) == 3 and all("\n" not in m for m in by_name.values())
    assert "damaged PDF" in by_name["damaged.pdf"]
    assert "not a Word .docx document" in by_name["photos.docx"]
    assert "200,000 record(s) are not JSON objects" in by_name["lines.json"]


def test_a_broken_message_in_the_middle_of_an_mbox_loses_only_itself(tmp_path: Path) -> None:
    files.write_mbox(tmp_path / "box.mbox", 9, broken=4)
    items = _read(tmp_path / "box.mbox")
    [error] = [e for e in items if isinstance(e, BadDocument)]
    assert error.source.endswith("box.mbox#4") and "broken message" in str(error)
    assert sorted(_docs(items)) == [f"box.mbox#{n}" for n in range(9) if n != 4]


def test_a_50_mb_html_page_streams_or_is_refused_in_one_line(tmp_path: Path) -> None:
    page = tmp_path / "saved.html"
    files.write_big_html(page, 50, "The weather station on Hekla recorded minus 31 degrees.")
    [doc] = _read(page)
    fact = "Saved page The weather station on Hekla recorded minus 31 degrees."
    assert " ".join(_text(doc).split()) == fact
    [refused] = _read(page, limit=10 * MB)
    assert isinstance(refused, BadDocument) and "over the 10 MB document limit" in str(refused)


def _cli(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block)
            + "from edge_rag.cli import main\nsys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)


def test_the_mixed_folder_indexes_and_every_planted_fact_is_found_first(tmp_path: Path, mixed: Path,
                                                                         model_folder) -> None:
    index = tmp_path / "index"
    done = _cli("index", str(mixed), "--index", str(index), "--no-progress")
    errors = [line for line in done.stderr.splitlines() if line.startswith("edge-rag: error:")]
    assert done.returncode == 1 and len(errors) == 2, done.stderr
    assert any("scan.pdf: no text layer" in e for e in errors)
    assert any("locked.pdf: encrypted" in e for e in errors)
    with EdgeRAG.open(index, create=False) as rag:
        for fact in files.FACTS:
            expected = fact.source.format(planted=files.planted_message(MESSAGES))
            for method in ("vector", "ppr"):
                top = rag.retrieve(fact.question, method=method, top_k=1).chunks[0]
                assert top.source.endswith(expected), (method, fact, top.source)


def test_without_the_extras_each_missing_one_is_one_warning(tmp_path: Path, mixed: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("report.pdf", "scan.pdf", "locked.pdf", "harvest.docx", "violin.txt"):
        (folder / name).write_bytes((mixed / name).read_bytes())
    done = _cli("index", str(folder), "--index", str(tmp_path / "index"), "--no-progress",
                "--extractor", "none", block=("pypdf", "docx"))
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert done.returncode == 0 and "added 1 documents" in done.stdout, done.stdout + done.stderr
    assert len(warnings) == 2, warnings
    pdf, docx = sorted(warnings)  # "warning: reading PDF files needs pypdf, not installed: ..."
    assert "reading PDF files needs pypdf" in pdf and "(3 skipped" in pdf
    assert "pip install 'edge-rag[pdf]'" in pdf
    assert "needs python-docx" in docx and "pip install 'edge-rag[docx]'" in docx and "(1 skipped" in docx


def test_unsupported_types_are_one_warning_per_extension(tmp_path: Path, model_folder) -> None:
    (tmp_path / "docs").mkdir()
    for name in ("a.xyz", "b.xyz", "c.xyz", "d.bin", ".hidden", "note.txt"):
        (tmp_path / "docs" / name).write_text("some words", encoding="utf-8")
    with EdgeRAG.open(tmp_path / "index", progress=False, extractor="none") as rag:
        report = rag.insert(tmp_path / "docs")
    assert len(report.added) == 1
    assert sorted(w.split(" (")[0] for w in report.warnings) == [
        ".bin files are not a supported type", ".xyz files are not a supported type"]
    assert any("(3 skipped" in w for w in report.warnings)


def test_a_json_list_of_200000_strings_is_one_error(tmp_path: Path, model_folder) -> None:
    files.write_json_strings(tmp_path / "lines.json", 200_000)
    done = _cli("index", str(tmp_path / "lines.json"), "--index", str(tmp_path / "index"), "--no-progress")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"edge-rag: error: {tmp_path}/lines.json: 200,000 record(s) are not "
                                        "JSON objects (#0, #1, #2, ...); a record must be an object with "
                                        "a text field (text, body, content)"]


def test_an_mbox_without_messages_and_a_message_without_text(tmp_path: Path) -> None:
    (tmp_path / "notes.mbox").write_text("just some text, no From lines\n", encoding="utf-8")
    [error] = _read(tmp_path / "notes.mbox")
    assert isinstance(error, BadDocument) and "no messages" in str(error)
    message = files._message("Scanned invoice", "shop@example.org", "")
    message.clear_content()
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="invoice.pdf")
    (tmp_path / "invoice.eml").write_bytes(bytes(message))
    doc, skipped = _read(tmp_path / "invoice.eml")
    assert _text(doc).startswith("Scanned invoice\nFrom: shop@example.org")
    assert doc.metadata["attachments"] == 1
    assert isinstance(skipped, Skipped) and skipped.group == "attachment"


def test_the_format_extras_stay_out_of_import_time() -> None:
    code = ("import sys, edge_rag, edge_rag.cli, edge_rag.index.sync\n"
            "assert not {'pypdf', 'docx', 'watchdog'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
