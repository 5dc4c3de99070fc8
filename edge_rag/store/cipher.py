"""Encryption at rest (the ``[encrypt]`` extra): SQLCipher connections, keys and conversions.

An encrypted index is one SQLCipher 4 file (AES-256 pages with an HMAC each; its write-ahead log
is encrypted the same way). Nothing else of it holds text or vectors: an encrypted index keeps no
USearch file (its vectors are searched from memory, read out of SQLite), and SQLite keeps its
temporary tables and sorts in memory. A key is a passphrase (SQLCipher derives the page key with
PBKDF2 at every open, which takes a noticeable moment) or 64 hex digits, used as the raw 256-bit
key (no derivation).

Design: docs/design/storage.md
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import MissingExtra, WrongKey

KEY_ENV = "EDGE_RAG_KEY_FILE"
WRONG_KEY = "index is encrypted: wrong or missing key"
SQLITE_HEADER = b"SQLite format 3\x00"
HEX_DIGITS = set("0123456789abcdefABCDEF")

Key = str | bytes


def sqlcipher() -> ModuleType:
    """The ``sqlcipher3`` DB-API module, or MissingExtra naming the install command."""
    try:
        import sqlcipher3.dbapi2 as module
    except ImportError:
        raise MissingExtra("an encrypted index needs SQLCipher: pip install 'edge-rag[encrypt]'") from None
    return module


def database_errors() -> tuple[type[Exception], ...]:
    """The DatabaseError classes of the drivers loaded (sqlite3, and sqlcipher3 once imported)."""
    cipher = sys.modules.get("sqlcipher3.dbapi2")
    return (sqlite3.DatabaseError,) + ((cipher.DatabaseError,) if cipher is not None else ())


def read_key_file(path: str | Path) -> bytes:
    """The key held by a file (a trailing newline is not part of it)."""
    try:
        data = Path(path).read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise WrongKey(f"cannot read key file {path}: {exc.strerror or exc}") from None
    if not data:
        raise WrongKey(f"key file {path} is empty")
    return data


def key_from_env() -> bytes | None:
    """The key of the file ``$EDGE_RAG_KEY_FILE`` names, or None when it is unset."""
    path = os.environ.get(KEY_ENV)
    return read_key_file(path) if path else None


def key_text(key: Key) -> str:
    """What SQLCipher is given: ``x'…'`` (a raw key) for 64 hex digits or 32 bytes, else the
    passphrase."""
    if isinstance(key, bytes):
        if len(key) == 32:
            return f"x'{key.hex()}'"
        try:
            key = key.decode("utf-8")
        except UnicodeDecodeError:
            raise WrongKey("a key is a passphrase (UTF-8 text), 64 hex digits or 32 bytes") from None
    if not key:
        raise WrongKey("the key is empty")
    return f"x'{key}'" if len(key) == 64 and set(key) <= HEX_DIGITS else key


def quoted(text: str) -> str:
    """An SQL string literal (PRAGMA takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def is_encrypted(path: Path) -> bool:
    """Whether an index's SQLite file looks encrypted: whole pages, without SQLite's header."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
        size = path.stat().st_size
    except OSError:
        return False
    return size >= 512 and size % 512 == 0 and head != SQLITE_HEADER


def check_key(path: Path, key: Key | None) -> None:
    """Refuse before opening: an encrypted file without a key, a key for a plain file."""
    if key is None and is_encrypted(path):
        raise WrongKey(WRONG_KEY)
    if key is not None and path.is_file() and path.stat().st_size and not is_encrypted(path):
        raise WrongKey(f"index {path.parent} is not encrypted: open it without a key, or encrypt "
                       "it first with 'edge-rag encrypt'")


def connect(path: Path, key: Key | None, cipher: bool = False, **options: Any) -> Any:
    """A connection to ``path``: SQLCipher with the key (checked by reading the schema), else
    the standard library's sqlite3 (``cipher``: SQLCipher without a key, for conversions)."""
    if key is None and not cipher:
        return sqlite3.connect(path, **options)
    module = sqlcipher()
    conn = module.connect(str(path), **options)
    try:
        conn.execute("PRAGMA cipher_log_level = NONE")  # a wrong key is our one line, not its logs
        if key is not None:
            conn.execute(f"PRAGMA key = {quoted(key_text(key))}")
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except module.DatabaseError:
        conn.close()
        raise WrongKey(WRONG_KEY) from None
    return conn
