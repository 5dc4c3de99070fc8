"""PDF: the text layer of each page (pypdf, the ``[pdf]`` extra), one document per page.

A page document is named ``file.pdf#pN`` (N from 1) and keeps ``page`` and ``pages`` in its
metadata, so a citation points at the page. Its title is the PDF's own (metadata ``/Title``), else
the first page's short first line, else the file stem; pages after the first add ``(page N)``
(a title two documents share would name neither, see ``retrieve/title_index.py``). Pages without text
are left out; a PDF without any text is reported as a scan that needs OCR, an encrypted one (with
a user password) as encrypted, a damaged one as damaged: each one line, never a crash.

Design: docs/design/formats.md
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Iterator
from typing import Any

from ...errors import BadDocument
from ..reader import Document, Item
from ..titling import best_title, short_line
from . import Blob, require

# What a damaged PDF makes pypdf raise besides its own errors (it parses untrusted structures).
DAMAGED = (ValueError, KeyError, TypeError, IndexError, AttributeError, AssertionError,
           RecursionError, OSError, zlib.error)


def read(blob: Blob, max_bytes: int) -> Iterator[Item]:
    """The page documents of one PDF file, or one BadDocument saying why there are none."""
    pypdf = require("pypdf", "pdf", "reading PDF files")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file is one line, not a log
    errors = (pypdf.errors.PyPdfError, *DAMAGED)
    try:
        reader = _open(pypdf, blob)
        yield from _pages(reader, blob.name)
    except BadDocument as exc:
        yield exc
    except errors as exc:
        yield BadDocument(f"{blob.name}: damaged PDF, cannot be read ({type(exc).__name__}: {exc})")


def _open(pypdf: Any, blob: Blob) -> Any:
    with blob.open() as handle:  # held in memory, as pypdf does with a path
        reader = pypdf.PdfReader(io.BytesIO(handle.read()), strict=False)
    if reader.is_encrypted and not _opens_without_password(pypdf, reader, blob.name):
        raise BadDocument(f"{blob.name}: encrypted PDF (needs a password); not read")
    return reader


def _opens_without_password(pypdf: Any, reader: Any, source: str) -> bool:
    # Many PDFs are encrypted with an empty user password (only printing or copying restricted).
    try:
        return bool(reader.decrypt(""))
    except pypdf.errors.DependencyError:
        raise BadDocument(f"{source}: encrypted PDF (AES: reading it needs the cryptography "
                          "package); not read") from None


def _pages(reader: Any, source: str) -> Iterator[Document]:
    pages = len(reader.pages)
    title = None
    for number, page in enumerate(reader.pages, 1):
        text = page.extract_text() or ""
        if not text.strip():
            continue
        if title is None:
            title = best_title(_metadata_title(reader), short_line(text), source=source)
        name = title if number == 1 else f"{title} (page {number})"
        yield Document.from_text(text, f"{source}#p{number}", {"title": name, "page": number, "pages": pages})
    if title is None:
        raise BadDocument(f"{source}: no text layer (a scanned PDF of {pages} page(s)): needs OCR; "
                          "not indexed")


def _metadata_title(reader: Any) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except DAMAGED:
        return None
    return title if isinstance(title, str) else None
