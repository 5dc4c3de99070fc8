"""Word ``.docx``: paragraphs and tables in document order (python-docx, the ``[docx]`` extra).

The title is the document's own (core property ``title``), else its first ``Title`` or
``Heading 1`` paragraph, else a short first line, else the file stem. A file named ``.docx``
that is not a Word document (another zip renamed, or not a zip at all) is one BadDocument.

The package is a container read within its budget (``index/limits.py``): its entries and their
declared sizes are checked first, then only its XML parts are inflated (counted as they are) into
a copy whose media and embedded files are empty, which python-docx opens: it would hold every
part in memory, and the text needs none but the XML.

Design: docs/design/formats.md
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import IO, Any

from ...errors import BadDocument
from ..document_titles import best_title, short_line
from ..limits import Budget, Limits, zip_entries
from ..reader import BLOCK, READ_ERRORS, Document, Item, check_size
from . import Blob, require

MAIN_PART = "word/document.xml"
HEADING_STYLES = ("Title", "Heading 1")
XML_PARTS = (".xml", ".rels")


def read(blob: Blob, limits: Limits) -> Iterator[Item]:
    """One document: the text of a Word file."""
    docx = require("docx", "docx", "reading Word .docx files", "python-docx")
    path = blob.name
    try:
        with blob.open() as handle:
            word = docx.Document(_text_parts(path, handle, limits))
        lines = list(_lines(word))
    except BadDocument as exc:
        yield exc
        return
    except (KeyError, ValueError, *READ_ERRORS) as exc:
        yield BadDocument(f"{path}: damaged Word document, cannot be read ({type(exc).__name__}: {exc})")
        return
    text = "\n".join(lines)
    title = best_title(word.core_properties.title, _heading(word), short_line(text), source=path)
    yield Document.from_text(text, path, {"title": title})


def _text_parts(path: str, handle: IO[bytes], limits: Limits) -> IO[bytes]:
    """The package's XML parts in a copy held in memory, within the container's budget."""
    if not zipfile.is_zipfile(handle):
        raise BadDocument(f"{path}: not a Word .docx document (not a zip package: password-protected, "
                          "or an old .doc renamed?); not read")
    budget = Budget(path, limits)
    budget.declare(zip_entries(handle), 0)
    with zipfile.ZipFile(handle) as package:
        infos = package.infolist()
        budget.declare(len(infos), sum(i.file_size for i in infos))
        if MAIN_PART not in package.namelist():
            raise BadDocument(f"{path}: not a Word .docx document (a zip without {MAIN_PART}: "
                              "another file renamed?); not read")
        check_size(path, package.getinfo(MAIN_PART).file_size, limits.document)
        copy = io.BytesIO()
        with zipfile.ZipFile(copy, "w") as text_only:
            for info in infos:
                text_only.writestr(info.filename, _xml(package, info, budget))
    copy.seek(0)
    return copy


def _xml(package: zipfile.ZipFile, info: zipfile.ZipInfo, budget: Budget) -> bytes:
    """An XML part's bytes, counted into the budget as they inflate; nothing for other parts."""
    if not info.filename.lower().endswith(XML_PARTS):
        return b""
    blocks, count = [], 0
    with package.open(info) as stream:
        while block := stream.read(BLOCK):
            count += len(block)
            budget.reach(info.filename, count)
            blocks.append(block)
    return b"".join(blocks)


def _lines(word: Any) -> Iterator[str]:
    for block in word.iter_inner_content():
        if hasattr(block, "rows"):
            for row in block.rows:
                yield " | ".join(cell.text.strip() for cell in row.cells)
        elif block.text.strip():
            yield block.text


def _heading(word: Any) -> str | None:
    for paragraph in word.paragraphs:
        style = paragraph.style.name if paragraph.style is not None else ""
        if style in HEADING_STYLES and paragraph.text.strip():
            return str(paragraph.text)
    return None
