"""The tables of ``edge-rag sync``: which files of a folder an index follows, and their documents.

A synced file is keyed by its folder (resolved, absolute) and its path inside that folder; it
keeps the size, mtime (ns) and sha256 of the bytes last read, so an unchanged file is recognised
from ``os.stat`` alone. Each file links to the documents it gave; ``owned`` marks the link whose
sync added the document. A document is deleted with its last link, and only if some sync added
it: documents inserted otherwise (``insert_text``, ``edge-rag index``) are never deleted by a
sync, even when a synced file has the same text.

Design: docs/design/sync.md
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class FileState(NamedTuple):
    """A synced file as last read."""

    size: int
    mtime_ns: int
    sha256: str


class SyncedTables:
    """Reads and writes the sync tables (writes inside ``IndexStore.write()``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def files(self, folder: str) -> dict[str, FileState]:
        """Every file of a folder the index follows, by path inside the folder."""
        rows = self.conn.execute("SELECT path, size, mtime_ns, sha256 FROM synced_files WHERE folder = ?",
                                 (folder,))
        return {row[0]: FileState(*row[1:]) for row in rows}

    def set_file(self, folder: str, path: str, state: FileState) -> None:
        """Record (or update) a file's state."""
        self.conn.execute("INSERT INTO synced_files(folder, path, size, mtime_ns, sha256) "
                          "VALUES (?, ?, ?, ?, ?) ON CONFLICT(folder, path) DO UPDATE SET "
                          "size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256",
                          (folder, path, *state))

    def links(self, folder: str, path: str) -> dict[str, bool]:
        """The documents a file gave: doc id -> owned."""
        rows = self.conn.execute("SELECT doc_id, owned FROM synced_documents WHERE folder = ? AND path = ?",
                                 (folder, path))
        return {row[0]: bool(row[1]) for row in rows}

    def link(self, folder: str, path: str, doc_id: str, owned: bool) -> None:
        """Link a document to a file (an owned link stays owned)."""
        self.conn.execute("INSERT INTO synced_documents(folder, path, doc_id, owned) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT(folder, path, doc_id) DO UPDATE "
                          "SET owned = max(owned, excluded.owned)",
                          (folder, path, doc_id, int(owned)))

    def owned_elsewhere(self, doc_id: str) -> bool:
        """Whether any sync link owns the document."""
        row = self.conn.execute("SELECT 1 FROM synced_documents WHERE doc_id = ? AND owned = 1 LIMIT 1",
                                (doc_id,)).fetchone()
        return row is not None

    def unlink(self, folder: str, path: str, doc_id: str) -> bool:
        """Drop one link. Returns True when the document is now unreferenced and was owned by
        it (the caller deletes the document); when other links remain, one of them takes over
        the ownership."""
        owned = self.links(folder, path).get(doc_id, False)
        self.conn.execute("DELETE FROM synced_documents WHERE folder = ? AND path = ? AND doc_id = ?",
                          (folder, path, doc_id))
        if not owned:
            return False
        heir = self.conn.execute("SELECT folder, path FROM synced_documents WHERE doc_id = ? LIMIT 1",
                                 (doc_id,)).fetchone()
        if heir is None:
            return True
        self.link(heir[0], heir[1], doc_id, True)
        return False

    def forget(self, folder: str, path: str) -> None:
        """Drop a file's record (its links must be gone)."""
        self.conn.execute("DELETE FROM synced_files WHERE folder = ? AND path = ?", (folder, path))
