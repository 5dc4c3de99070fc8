"""Encrypting, decrypting and re-keying an index: its SQLite file rewritten under another key (the
old key may be a short passphrase, to move an index off it; the new one may not).

Above ``sqlite.py`` and ``vectors.py`` (it removes the vector files), which ``cipher.py`` sits below.

Design: docs/design/storage.md
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import IndexCorrupt, IndexLocked, WrongKey
from . import mapped_files
from .cipher import Key, check_key, connect, is_encrypted, key_text, sqlcipher
from .sqlite import DB_FILE
from .vectors import CANDIDATES_FILE, VECTOR_FILES


def convert(directory: Path, old: Key | None, new: Key | None) -> None:
    """Rewrite the index's SQLite file under key ``new`` (None: plain) from key ``old``.

    The caller holds the write lock. The file is exported (``sqlcipher_export``) into a new file
    beside it, which replaces it in one rename; any vector file is removed when the result is
    encrypted (an encrypted index keeps its vectors in SQLite only) or left to be rebuilt."""
    path, target = directory / DB_FILE, directory / (DB_FILE + ".convert")
    if old is None and new is None:
        raise WrongKey("converting an index needs a key (the old one, the new one or both)")
    if old is None and is_encrypted(path):
        raise WrongKey(f"index {directory} is already encrypted: change its key with 'edge-rag rekey'")
    check_key(path, old)
    if new is not None:
        key_text(new)  # a short new passphrase is refused before anything is written
    target.unlink(missing_ok=True)
    try:
        _export(path, old, target, new)
        _sync(target)
        os.replace(target, path)
    finally:
        target.unlink(missing_ok=True)
    for name in VECTOR_FILES.values():
        (directory / name).unlink(missing_ok=True)
        (directory / f"{name}.twins").unlink(missing_ok=True)
    (directory / CANDIDATES_FILE).unlink(missing_ok=True)  # written again by the next plain build
    mapped_files.remove(directory)  # ppr's arrays hold the corpus's words; the next write renews them
    _sync(directory)


def _export(path: Path, old: Key | None, target: Path, new: Key | None) -> None:
    conn = connect(path, old, cipher=True, strict=False, isolation_level=None, timeout=2)
    module = sqlcipher()
    try:
        # Out of WAL mode: only possible for the one connection to the file, so no reader is
        # left on the file that is about to be replaced, and its log is folded in and removed.
        if conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0].lower() != "delete":
            raise module.OperationalError("database is locked")
        conn.execute("ATTACH DATABASE ? AS target KEY ?", (str(target), key_text(new) if new else ""))
        if new is None:
            conn.execute("PRAGMA target.page_size = 8192")
        conn.execute("SELECT sqlcipher_export('target')").fetchone()
        counts = [conn.execute(f"SELECT count(*) FROM {db}.chunks").fetchone()[0]
                  for db in ("main", "target")]
        conn.execute("DETACH DATABASE target")
    except module.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise IndexLocked(f"{path.parent} is open in another process: close it first") from None
        raise
    finally:
        conn.close()
    if counts[0] != counts[1]:
        raise IndexCorrupt(f"converting {path.parent} copied {counts[1]} of {counts[0]} chunks: "
                           "nothing was replaced")


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
