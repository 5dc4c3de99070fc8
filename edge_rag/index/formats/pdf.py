"""PDF: the text layer of each page (pypdf, the ``[pdf]`` extra), one document per page.

A page document is named ``file.pdf#pN`` (N from 1) and keeps ``page`` and ``pages`` in its
metadata, so a citation points at the page. Its title is the PDF's own (metadata ``/Title``), else
the first page's short first line, else the file stem; pages after the first add ``(page N)``
(a title two documents share would name neither, see ``retrieve/title_links.py``). Pages without text
are left out; a PDF without any text is reported as a scan that needs OCR, an encrypted one (with
a user password) as encrypted, a damaged one as damaged: each one line, never a crash.

A PDF is a container read within its budget (``index/limits.py``): its page count is checked
before any page is read, then every page's content stream is inflated and counted into the budget
before any text is extracted, each stream pypdf inflates capped at what the budget has left; over
either, the whole file is one refused document.
Design: docs/design/formats.md
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from ...errors import BadDocument
from ..document_titles import best_title, short_line
from ..limits import Budget, Limits
from ..reader import Document, Item
from . import Blob, require

# What a damaged PDF makes pypdf raise besides its own errors (it parses untrusted structures).
DAMAGED = (ValueError, KeyError, TypeError, IndexError, AttributeError, AssertionError,
           RecursionError, OSError, zlib.error)
# pypdf's caps on what one stream may inflate to, each set to what the budget has left.
OUTPUT_CAPS = ("zlib_maximum_output_length", "lzw_maximum_output_length", "run_length_maximum_output_length",
               "brotli_maximum_output_length", "array_based_stream_maximum_output_length")


def read(blob: Blob, limits: Limits) -> Iterator[Item]:
    """The page documents of one PDF file, or one BadDocument saying why there are none."""
    pypdf = require("pypdf", "pdf", "reading PDF files")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file is one line, not a log
    errors = (pypdf.errors.PyPdfError, *DAMAGED)
    budget = Budget(blob.name, limits)
    try:
        with _capped(pypdf, budget):
            reader = _open(pypdf, blob, budget)
        yield from _pages(pypdf, reader, blob.name, budget)
    except BadDocument as exc:
        yield exc
    except pypdf.errors.LimitReachedError:
        yield budget.refusal()
    except errors as exc:
        yield BadDocument(f"{blob.name}: damaged PDF, cannot be read ({type(exc).__name__}: {exc})")


def _capped(pypdf: Any, budget: Budget) -> AbstractContextManager[Any]:
    """pypdf's configuration with every stream capped at what the budget has left."""
    return pypdf.apply_configuration(**dict.fromkeys(OUTPUT_CAPS, budget.remaining()))


def _open(pypdf: Any, blob: Blob, budget: Budget) -> Any:
    with blob.open() as handle:  # held in memory, as pypdf does with a path
        reader = pypdf.PdfReader(io.BytesIO(handle.read()), strict=False)
    if reader.is_encrypted and not _opens_without_password(pypdf, reader, blob.name):
        raise BadDocument(f"{blob.name}: encrypted PDF (needs a password); not read")
    budget.declare(len(reader.pages), 0)
    return reader


def _opens_without_password(pypdf: Any, reader: Any, source: str) -> bool:
    # Many PDFs are encrypted with an empty user password (only printing or copying restricted).
    try:
        return bool(reader.decrypt(""))
    except pypdf.errors.DependencyError:
        raise BadDocument(f"{source}: encrypted PDF (AES: reading it needs the cryptography "
                          "package); not read") from None


def _pages(pypdf: Any, reader: Any, source: str, budget: Budget) -> Iterator[Document]:
    pages = len(reader.pages)
    for number, page in enumerate(reader.pages, 1):  # every stream counted before any page is read
        with _capped(pypdf, budget):
            _count_contents(page, number, budget)
    title = None
    for number, page in enumerate(reader.pages, 1):
        with _capped(pypdf, budget):
            text = str(page.extract_text() or "")
        if not text.strip():
            continue
        if title is None:
            title = best_title(_metadata_title(reader), short_line(text), source=source)
        name = title if number == 1 else f"{title} (page {number})"
        yield Document.from_text(text, f"{source}#p{number}", {"title": name, "page": number, "pages": pages})
    if title is None:
        raise BadDocument(f"{source}: no text layer (a scanned PDF of {pages} page(s)): needs OCR; "
                          "not indexed")


def _count_contents(page: Any, number: int, budget: Budget) -> None:
    """Inflate a page's content stream into the budget (pypdf keeps it for the extraction)."""
    contents = page.get_contents()
    budget.reach(f"p{number}", len(contents.get_data()) if contents is not None else 0)


def _metadata_title(reader: Any) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except DAMAGED:
        return None
    return title if isinstance(title, str) else None
