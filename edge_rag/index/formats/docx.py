"""Word ``.docx``: paragraphs and tables in document order (python-docx, the ``[docx]`` extra).

The title is the document's own (core property ``title``), else its first ``Title`` or
``Heading 1`` paragraph, else a short first line, else the file stem. A file named ``.docx``
that is not a Word document (another zip renamed, or not a zip at all) is one BadDocument.

Design: docs/design/formats.md
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import IO, Any

from ...errors import BadDocument
from ..reader import Document, Item, check_size
from ..titling import best_title, short_line
from . import Blob, require

MAIN_PART = "word/document.xml"
HEADING_STYLES = ("Title", "Heading 1")


def read(blob: Blob, max_bytes: int) -> Iterator[Item]:
    """One document: the text of a Word file."""
    docx = require("docx", "docx", "reading Word .docx files", "python-docx")
    path = blob.name
    try:
        with blob.open() as handle:
            _check_package(path, handle, max_bytes)
            word = docx.Document(handle)
        lines = list(_lines(word))
    except BadDocument as exc:
        yield exc
        return
    except (KeyError, ValueError, zipfile.BadZipFile, OSError) as exc:
        yield BadDocument(f"{path}: damaged Word document, cannot be read ({type(exc).__name__}: {exc})")
        return
    text = "\n".join(lines)
    title = best_title(word.core_properties.title, _heading(word), short_line(text), source=path)
    yield Document.from_text(text, path, {"title": title})


def _check_package(path: str, handle: IO[bytes], max_bytes: int) -> None:
    if not zipfile.is_zipfile(handle):
        raise BadDocument(f"{path}: not a Word .docx document (not a zip package: password-protected, "
                          "or an old .doc renamed?); not read")
    with zipfile.ZipFile(handle) as package:
        if MAIN_PART not in package.namelist():
            raise BadDocument(f"{path}: not a Word .docx document (a zip without {MAIN_PART}: "
                              "another file renamed?); not read")
        check_size(path, package.getinfo(MAIN_PART).file_size, max_bytes)


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
