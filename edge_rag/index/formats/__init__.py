"""Readers for the document formats people keep: PDF, HTML, e-mail, Word and CSV.

One module per format; each turns a ``Blob`` (a file's name, size and how to open its bytes: a file
on disk or an upload held in memory) into ``Document`` items (or ``BadDocument`` / ``Skipped``
ones) for the reader (``index/reader.py``), which picks a module by file extension here and
imports it only when such a file turns up. PDF (``pdf.py``) needs pypdf, the ``[pdf]`` extra;
Word (``docx.py``) python-docx, the ``[docx]`` extra; HTML, e-mail and CSV use the standard library.
A format whose extra is missing raises ``MissingExtra`` naming the install command; the folder
reader turns that into one ``Skipped`` item per file, and the insert report into one warning
per format with the count of files; an upload (``read_upload``) lets it rise (``serve``: HTTP 415).
An ``.mbox`` is read only from disk (``mailbox`` wants a file): an uploaded one is refused. Each
reader gets the profile's ``Limits`` (``index/limits.py``); a container (``.docx``, PDF, mbox) reads
within its budget. Design: docs/design/formats.md
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ...errors import MissingExtra


@dataclass(frozen=True)
class Format:
    """A file format: its name, the module reading it and the extra its library comes in."""

    name: str
    module: str
    extra: str | None = None


@dataclass(frozen=True)
class Blob:
    """A file's bytes to read: its source name, size and opener, and its path when it is on disk."""

    name: str
    size: int
    opener: Callable[[], IO[bytes]]
    path: Path | None = None

    @classmethod
    def from_path(cls, path: Path, size: int) -> Blob:
        """A file on disk."""
        return cls(str(path), size, lambda: open(path, "rb"), path)

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> Blob:
        """Bytes held in memory (an upload): nothing is written anywhere."""
        return cls(name, len(data), lambda: io.BytesIO(data))

    @property
    def suffix(self) -> str:
        """The extension, lower case (``.pdf``)."""
        return PurePosixPath(self.name).suffix.lower()

    def open(self) -> IO[bytes]:
        """A new binary stream over the bytes (seekable)."""
        return self.opener()


FORMATS: dict[str, Format] = {
    ".pdf": Format("PDF", "pdf", "pdf"),
    ".docx": Format("Word (.docx)", "docx", "docx"),
    ".html": Format("HTML", "html"),
    ".htm": Format("HTML", "html"),
    ".eml": Format("e-mail (.eml)", "mail"),
    ".mbox": Format("mailbox (.mbox)", "mail"),
    ".csv": Format("CSV", "table"),
}
# Formats read as a container of many documents: the document size limit applies to each of
# them (a message, a row), not to the file.
CONTAINERS = (".mbox", ".csv")


def reader_for(suffix: str) -> Callable[[Blob, Any], Iterator[Any]] | None:
    """The reading function of a format's module for a file extension, or None."""
    found = FORMATS.get(suffix)
    if found is None:
        return None
    module = importlib.import_module(f"{__name__}.{found.module}")
    return module.read


def require(module: str, extra: str, what: str, package: str | None = None) -> Any:
    """Import a format's library, or raise ``MissingExtra`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{what} needs {package or module}, not installed: "
                           f"pip install 'edge-rag[{extra}]'") from None
