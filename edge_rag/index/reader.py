"""Reading sources into documents: files, folders, zip archives, JSON/JSONL records, strings.

Text policy: UTF-8 (a BOM is stripped; UTF-16 with a BOM is accepted). Invalid UTF-8 bytes
are decoded with replacement (U+FFFD) and the document carries a warning; a file with NUL
bytes in its first 8 KiB is binary and rejected. Empty or whitespace-only documents are
rejected. Everything is streamed in blocks, so a large file is never held in memory whole.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import BadDocument

TEXT_SUFFIXES = (".txt", ".md")
RECORD_SUFFIXES = (".json", ".jsonl")
SUPPORTED = TEXT_SUFFIXES + RECORD_SUFFIXES + (".zip",)
TEXT_FIELDS = ("text", "body", "content")
BLOCK = 1 << 16
SNIFF = 8192


@dataclass
class Document:
    """A document to index: where it came from and how to read its text (streamed)."""

    source: str
    blocks: Callable[[], Iterator[str]]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_text(cls, text: str, source: str = "text", metadata: dict | None = None) -> Document:
        """A document from an in-memory string."""
        return cls(source, lambda: iter([text]), dict(metadata or {}))

    def fingerprint(self) -> tuple[str, int]:
        """(sha256 of the UTF-8 text, number of characters); rejects empty text."""
        digest, n_chars, blank = hashlib.sha256(), 0, True
        for block in self.blocks():
            digest.update(block.encode("utf-8"))
            n_chars += len(block)
            blank = blank and not block.strip()
        if blank:
            raise BadDocument(f"{self.source}: document is empty or whitespace only")
        return digest.hexdigest(), n_chars


def read_sources(paths: list[str | Path], max_bytes: int) -> Iterator[Document | BadDocument]:
    """Documents from paths; a path that cannot be read yields a BadDocument instead."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield BadDocument(f"{path}: no such file or directory")
        elif path.is_dir():
            yield from _read_folder(path, max_bytes)
        else:
            yield from _read_file(path, max_bytes)


def _read_folder(folder: Path, max_bytes: int) -> Iterator[Document | BadDocument]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED)
    for path in files:
        yield from _read_file(path, max_bytes)


def _read_file(path: Path, max_bytes: int) -> Iterator[Document | BadDocument]:
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
        if suffix == ".zip":
            yield from _read_zip(path, max_bytes)
            return
        _check_size(str(path), size, max_bytes)
        opener = lambda: open(path, "rb")
        if suffix in RECORD_SUFFIXES:
            yield from _read_records(str(path), opener, suffix)
        else:
            yield _text_document(str(path), opener)
    except BadDocument as exc:
        yield exc
    except (OSError, zipfile.BadZipFile) as exc:
        yield BadDocument(f"{path}: cannot read: {exc}")


def _read_zip(path: Path, max_bytes: int) -> Iterator[Document | BadDocument]:
    archive = zipfile.ZipFile(path)
    members = sorted(i.filename for i in archive.infolist() if not i.is_dir())
    for name in members:
        suffix = Path(name).suffix.lower()
        if suffix not in TEXT_SUFFIXES + RECORD_SUFFIXES:
            continue
        source = f"{path}/{name}"
        opener = lambda name=name: archive.open(name)
        try:
            _check_size(source, archive.getinfo(name).file_size, max_bytes)
            if suffix in RECORD_SUFFIXES:
                yield from _read_records(source, opener, suffix)
            else:
                yield _text_document(source, opener)
        except BadDocument as exc:
            yield exc


def _check_size(source: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise BadDocument(
            f"{source}: {size / 2**20:.1f} MB is over the {max_bytes / 2**20:.0f} MB document "
            "limit (setting max_document_mb)"
        )


def _text_document(source: str, opener: Callable[[], IO[bytes]]) -> Document:
    with opener() as handle:
        head = handle.read(SNIFF)
    encoding = _sniff_encoding(source, head)
    doc = Document(source, lambda: _decode_blocks(opener, encoding, doc))
    return doc


def _sniff_encoding(source: str, head: bytes) -> str:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\x00" in head:
        raise BadDocument(f"{source}: binary file (NUL bytes), not text")
    return "utf-8-sig"


def _decode_blocks(opener: Callable[[], IO[bytes]], encoding: str, doc: Document) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    replaced = False
    with opener() as handle:
        while block := handle.read(BLOCK):
            text = decoder.decode(block)
            replaced = replaced or "\ufffd" in text
            yield text
        yield decoder.decode(b"", final=True)
    if replaced and not doc.warnings:
        doc.warnings.append(f"{doc.source}: invalid UTF-8 bytes replaced with U+FFFD")


def _read_records(
    source: str, opener: Callable[[], IO[bytes]], suffix: str
) -> Iterator[Document | BadDocument]:
    with opener() as handle:
        stream = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="replace")
        records = _jsonl(source, stream) if suffix == ".jsonl" else _json(source, stream)
        for number, record in enumerate(records):
            try:
                yield _record_document(source, number, record)
            except BadDocument as exc:
                yield exc


def _json(source: str, stream: IO[str]) -> Iterator[Any]:
    try:
        data = json.load(stream)
    except ValueError as exc:
        raise BadDocument(f"{source}: invalid JSON: {exc}") from None
    yield from data if isinstance(data, list) else [data]


def _jsonl(source: str, stream: IO[str]) -> Iterator[Any]:
    for line_no, line in enumerate(stream, 1):
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError as exc:
                raise BadDocument(f"{source}:{line_no}: invalid JSON line: {exc}") from None


def _record_document(source: str, number: int, record: Any) -> Document:
    if not isinstance(record, dict):
        raise BadDocument(f"{source}#{number}: a record must be a JSON object")
    field_name = next((f for f in TEXT_FIELDS if isinstance(record.get(f), str)), None)
    if field_name is None:
        raise BadDocument(f"{source}#{number}: no text field (one of {', '.join(TEXT_FIELDS)})")
    metadata = {k: v for k, v in record.items()
                if k != field_name and isinstance(v, (str, int, float, bool))}
    title = metadata.get("title")
    text = f"{title}\n{record[field_name]}" if isinstance(title, str) and title else record[field_name]
    label = record.get("id", title if isinstance(title, str) and title else number)
    return Document.from_text(text, f"{source}#{label}", metadata)
