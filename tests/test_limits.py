"""Container budgets (``index/limits.py``): a zip, a Word file, a PDF and an mbox are read within
the profile's member count and inflated bytes, checked from what they declare and while read;
over either, the container is one refused document naming the setting."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from benchmarks import hostile_server as bombs
from benchmarks import sample_files as files
from edge_rag import BadDocument, Settings
from edge_rag.index import Document, read_sources
from edge_rag.index.limits import Budget, Limits, zip_entries
from edge_rag.index.reader import read_upload

MB = 2**20


def _read(path: Path, limits: Limits) -> list:
    return list(read_sources([path], limits))


def _errors(items: list) -> list[str]:
    return [str(i) for i in items if isinstance(i, BadDocument)]


def test_the_limits_come_from_the_profile() -> None:
    limits = Limits.of(Settings.load("rpi-zero-2w"))
    assert (limits.document, limits.inflated, limits.members) == (16 * MB, 32 * MB, 2000)
    assert Limits(MB).inflated == 64 * MB and Limits(MB).members == 10000


def test_a_zip_of_more_members_than_allowed_is_refused_from_its_end_record(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for n in range(30):
            archive.writestr(f"note-{n}.txt", f"Note number {n}.")
    with open(path, "rb") as handle:
        assert zip_entries(handle) == 30
    [error] = _errors(_read(path, Limits(MB, 64 * MB, 20)))
    assert error.startswith(f"{path}: 30 members") and "max_members" in error
    assert len(_read(path, Limits(MB, 64 * MB, 30))) == 30


def test_a_zip_declaring_more_than_the_budget_is_refused_before_any_member_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ledgers.zip"
    path.write_bytes(bombs.zip_of_text(files=3, each=2 * MB))
    items = _read(path, Limits(4 * MB, 5 * MB))
    assert len(items) == 1 and "declares more than the 5 MB" in str(items[0])
    assert "max_inflated_mb" in str(items[0])
    read = _read(path, Limits(4 * MB, 8 * MB))
    assert [i.source for i in read] == [f"{path}/ledger-{n}.txt" for n in range(3)]


def test_a_member_that_lies_about_its_size_stops_where_it_said(tmp_path: Path) -> None:
    path = tmp_path / "notes.zip"
    path.write_bytes(bombs.lying_zip(real=16 * MB, declared=1000))
    [error] = _errors(_read(path, Limits(MB)))
    assert "cannot read zip member" in error


def test_the_budget_counts_a_member_read_twice_once() -> None:
    budget = Budget("box.zip", Limits(MB, 100))
    for count in (40, 60, 60, 20):
        budget.reach("a.txt", count)
    budget.reach("b.txt", 40)
    assert budget.inflated == 100 and budget.remaining() == 1
    with pytest.raises(BadDocument, match="inflates to more than"):
        budget.reach("c.txt", 1)


def test_a_word_file_is_read_without_inflating_its_media(tmp_path: Path) -> None:
    from PIL import Image

    image = tmp_path / "photo.png"
    Image.new("RGB", (40, 30), "red").save(image)
    import docx

    word = docx.Document()
    word.add_heading("Orchard Photos", 1)
    word.add_paragraph("The quince trees behind the mill flowered late.")
    word.add_picture(str(image))
    word.save(str(tmp_path / "photos.docx"))
    [doc] = _read(tmp_path / "photos.docx", Limits(MB))
    assert isinstance(doc, Document) and "quince trees" in "".join(doc.blocks())
    assert doc.metadata["title"] == "Orchard Photos"


def test_a_word_file_pointing_at_a_huge_member_is_refused_from_its_directory() -> None:
    data = bombs.docx_bomb(media_bytes=64 * MB)
    items = list(read_upload("report.docx", data, Limits(MB, 32 * MB)))
    assert len(items) == 1 and "report.docx: declares more than the 32 MB" in str(items[0])
    [doc] = read_upload("report.docx", data, Limits(MB, 128 * MB))  # within budget: text, media unread
    assert "quince trees" in "".join(doc.blocks())


def test_a_pdf_of_too_many_pages_or_streams_inflating_past_the_budget_is_refused(tmp_path: Path) -> None:
    files.write_pdf(tmp_path / "report.pdf")
    data = (tmp_path / "report.pdf").read_bytes()
    [error] = read_upload("report.pdf", data, Limits(MB, 64 * MB, 1))
    assert "report.pdf: 2 members" in str(error) and "max_members" in str(error)
    assert len(list(read_upload("report.pdf", data, Limits(MB, 64 * MB, 2)))) == 2
    bomb = bombs.pdf_bomb(pages=3, stream_bytes=8 * MB)
    [error] = read_upload("scan.pdf", bomb, Limits(MB, 20 * MB))  # refused whole: no page before it
    assert str(error).startswith("scan.pdf: inflates to more than the 20 MB")
    assert "max_inflated_mb" in str(error)


def test_an_mbox_of_more_messages_or_bytes_than_allowed_is_refused_whole(tmp_path: Path) -> None:
    files.write_mbox(tmp_path / "box.mbox", 5)
    [error] = _read(tmp_path / "box.mbox", Limits(MB, 64 * MB, 4))
    assert "5 members" in str(error) and "max_members" in str(error)
    size = (tmp_path / "box.mbox").stat().st_size
    [error] = _read(tmp_path / "box.mbox", Limits(MB, size - 1, 10))
    assert "declares more than" in str(error)
    assert len(_read(tmp_path / "box.mbox", Limits(MB, size, 5))) >= 5


def test_uploads_and_files_take_a_plain_byte_limit_as_before(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", "Alpha is a letter.")
    [doc] = read_upload("a.zip", buffer.getvalue(), MB)
    assert "".join(doc.blocks()) == "Alpha is a letter."
