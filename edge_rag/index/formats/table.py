"""CSV: one row, one record (standard library ``csv``), named ``file.csv#N`` (N from 0).

The first row names the columns. A row with a text column (``text``, ``body``, ``content``) is
read like a JSON record (its ``title`` and ``id`` kept, the other columns as metadata); any
other row becomes ``column: value`` lines, titled by its ``title`` or ``name`` column, else its
first value. The delimiter is sniffed from the first lines (``,`` ``;`` tab ``|``).

Design: docs/design/formats.md
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from ...errors import BadDocument
from ..document_titles import best_title
from ..limits import Limits
from ..reader import TEXT_FIELDS, Document, Item, record_document
from . import Blob

SNIFF_CHARS = 16384  # characters the CSV dialect is sniffed from (formats.md)
TITLE_COLUMNS = ("title", "name")


def read(blob: Blob, limits: Limits) -> Iterator[Item]:
    """A document per data row of a CSV file."""
    source = blob.name
    with io.TextIOWrapper(blob.open(), encoding="utf-8-sig", errors="replace", newline="") as stream:
        dialect = _dialect(stream.read(SNIFF_CHARS))
        stream.seek(0)
        try:
            for number, row in enumerate(csv.DictReader(stream, dialect=dialect)):
                yield _row(source, number, {str(k): v for k, v in row.items() if k and v})
        except csv.Error as exc:
            yield BadDocument(f"{source}: malformed CSV ({exc}); the rows before it were read")


def _dialect(head: str) -> type[csv.Dialect] | str:
    try:
        return csv.Sniffer().sniff(head, delimiters=",;\t|")
    except csv.Error:
        return "excel"


def _row(source: str, number: int, row: dict[str, str]) -> Item:
    if any(f in row for f in TEXT_FIELDS):
        try:
            return record_document(source, number, row)
        except BadDocument as exc:
            return exc
    if not row:
        return BadDocument(f"{source}#{number}: empty row")
    title = best_title(*(row.get(c) for c in TITLE_COLUMNS), next(iter(row.values())), source=source)
    text = "\n".join(f"{key}: {value}" for key, value in row.items())
    return Document.from_text(text, f"{source}#{number}", {"title": title})
