"""Encryption at rest (the ``[encrypt]`` extra): SQLCipher connections, keys and conversions.

An encrypted index is one SQLCipher 4 file (AES-256 pages with an HMAC each; its write-ahead log
is encrypted the same way). Nothing else of it holds text or vectors: an encrypted index keeps no
USearch file (its vectors are searched from memory, read out of SQLite), and SQLite keeps its
temporary tables and sorts in memory. A key is exactly 64 hex digits, used as the raw 256-bit key
(no derivation), or anything else, a passphrase of 12 characters or more from which SQLCipher
derives the page key (PBKDF2-HMAC-SHA512, at every open). A key or token file that other users
may read is refused.

Design: docs/design/storage.md
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import EdgeRagError, MissingExtra, WrongKey

KEY_ENV = "EDGE_RAG_KEY_FILE"
WRONG_KEY = "index is encrypted: wrong or missing key"
SQLITE_HEADER = b"SQLite format 3\x00"
RAW_KEY = re.compile(r"[0-9a-fA-F]{64}")
MIN_PASSPHRASE = 12  # the shortest passphrase accepted (storage.md)
PRIVATE = 0o044  # mode bits that let group or others read a file

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


class WeakKey(WrongKey):
    """A passphrase too short to stand against guessing."""


def check_private(path: Path, what: str, insecure: bool = False) -> None:
    """Refuse a key or token file that group or others may read (POSIX; ``insecure``: tests only)."""
    if insecure or os.name != "posix":
        return
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        return  # reading it says what is wrong
    if mode & PRIVATE:
        raise EdgeRagError(f"{what} {path} can be read by other users (mode {mode:04o}): "
                           f"run chmod 600 {path}")


def read_key_file(path: str | Path, insecure: bool = False) -> bytes:
    """The key held by a file (a trailing newline is not part of it); the file must be private."""
    check_private(Path(path), "key file", insecure)
    try:
        data = Path(path).read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise WrongKey(f"cannot read key file {path}: {exc.strerror or exc}") from None
    if not data:
        raise WrongKey(f"key file {path} is empty")
    return data


def key_from_env(insecure: bool = False) -> bytes | None:
    """The key of the file ``$EDGE_RAG_KEY_FILE`` names, or None when it is unset."""
    path = os.environ.get(KEY_ENV)
    return read_key_file(path, insecure) if path else None


def key_text(key: Key, strict: bool = True) -> str:
    """What SQLCipher is given: ``x'…'`` (the raw key) for exactly 64 hex digits, else the
    passphrase (bytes that are not UTF-8 as their hex digits, still a passphrase). ``strict``
    refuses a passphrase under ``MIN_PASSPHRASE`` characters (``WeakKey``)."""
    binary = isinstance(key, bytes) and not _is_utf8(key)
    text = key.hex() if isinstance(key, bytes) and binary else \
        key.decode("utf-8") if isinstance(key, bytes) else key
    if not text:
        raise WrongKey("the key is empty")
    if RAW_KEY.fullmatch(text) and not binary:
        return f"x'{text}'"
    if strict and len(text) < MIN_PASSPHRASE:
        raise WeakKey(f"the passphrase is shorter than {MIN_PASSPHRASE} characters: use a longer one, or "
                      "64 hex digits (python -c 'import secrets; print(secrets.token_hex(32))'); "
                      "'edge-rag rekey' moves an index off a short one")
    return text


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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


def connect(path: Path, key: Key | None, cipher: bool = False, strict: bool = True, **options: Any) -> Any:
    """A connection to ``path``: SQLCipher with the key (checked by reading the schema), else
    the standard library's sqlite3 (``cipher``: SQLCipher without a key, for conversions;
    ``strict``: a short passphrase is refused, see ``key_text``)."""
    if key is None and not cipher:
        return sqlite3.connect(path, **options)
    text = key_text(key, strict) if key is not None else None
    try:
        return _keyed(path, text, **options)
    except WrongKey:
        legacy = _legacy_text(key)
        if legacy is None:
            raise
        if strict:  # an index keyed by an older edge-rag: opened again only to be re-keyed
            _keyed(path, legacy, **options).close()
            raise WrongKey(f"{WRONG_KEY}: this index was keyed by an older edge-rag, which took a "
                           "32-character key as the raw key; re-key it with the same key file as "
                           "old and new ('edge-rag rekey') to have the key derived") from None
        return _keyed(path, legacy, **options)


def _keyed(path: Path, text: str | None, **options: Any) -> Any:
    module = sqlcipher()
    conn = module.connect(str(path), **options)
    try:
        conn.execute("PRAGMA cipher_log_level = NONE")  # a wrong key is our one line, not its logs
        if text is not None:
            conn.execute(f"PRAGMA key = {quoted(text)}")
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except module.DatabaseError:
        conn.close()
        raise WrongKey(WRONG_KEY) from None
    return conn


def _legacy_text(key: Key | None) -> str | None:
    # Before the 64-hex-digits rule, any key of 32 bytes (or 32 characters) was the raw key.
    raw = key.encode("utf-8") if isinstance(key, str) else key
    return f"x'{raw.hex()}'" if raw is not None and len(raw) == 32 else None
