"""Schema migrations: an ordered list of steps, each bringing an index file one version up.

Opening a file of an older version runs every later step in order, each in one transaction (a
killed migration leaves the file at the version the last finished step wrote), then returns the
freed pages to the disk. The schema itself is ``schema.py``; design: docs/design/storage.md.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from .codec import from_version_2, from_version_4
from .graph_tables import embedded
from .schema import (
    GRAPH_TABLES_V1,
    INDEXES_V4,
    MENTION_TABLES,
    RELATION_INDEXES_V3,
    SPAN_COLUMNS,
    TEXT_SHA_DIGITS,
)

VECTOR_TABLES = {"chunk": "chunks", "entity": "entity_keys", "relation": "relations"}


class IndexStore(Protocol):
    """What a migration uses of ``sqlite.IndexStore``."""

    conn: sqlite3.Connection

    def write(self) -> AbstractContextManager[None]: ...
    def run_ddl(self) -> None: ...
    def set_manifest(self, values: dict[str, str]) -> None: ...
    def bump_generation(self, kind: str) -> None: ...
    def compact(self) -> None: ...


@dataclass(frozen=True)
class Step:
    """One migration: the version it writes, what changed (one line), and the change."""

    version: int
    history: str
    run: Callable[[IndexStore], None]


def migrate(store: IndexStore, version: int) -> None:
    """Run every step after ``version`` in order, then compact the file."""
    for step in STEPS:
        if step.version > version:
            with store.write():
                step.run(store)
                store.set_manifest({"schema_version": str(step.version), "migrated_from": str(version)})
    store.compact()


def _graph_tables(store: IndexStore) -> None:
    for table in GRAPH_TABLES_V1:
        store.conn.execute(f"DROP TABLE IF EXISTS {table}")
    store.run_ddl()


def _i8_codes(store: IndexStore) -> None:
    _mention_spans(store)
    store.conn.execute("UPDATE entity_keys SET description = ''")
    for kind, table in VECTOR_TABLES.items():
        _reencode(store, table, from_version_2)
        store.bump_generation(kind)


def _lean_relations(store: IndexStore) -> None:
    store.conn.execute("UPDATE entities SET description = ''")
    rows = store.conn.execute("SELECT id, keywords FROM relations WHERE kind = 'structural'")
    ids = [(row[0],) for row in rows.fetchall() if not embedded(row[1])]
    store.conn.executemany("UPDATE relations SET vector = NULL, text_sha = NULL, description = '' "
                           "WHERE id = ?", ids)
    store.bump_generation("relation")
    for name in RELATION_INDEXES_V3:
        store.conn.execute(f"DROP INDEX IF EXISTS {name}")
    store.run_ddl()


def _four_bits(store: IndexStore) -> None:
    for name in INDEXES_V4:
        store.conn.execute(f"DROP INDEX IF EXISTS {name}")
    store.conn.execute("UPDATE relations SET description = '' WHERE vector IS NOT NULL")
    store.conn.execute(f"UPDATE relations SET text_sha = substr(text_sha, 1, {TEXT_SHA_DIGITS})")
    for kind, table in VECTOR_TABLES.items():
        _reencode(store, table, from_version_4)
        store.bump_generation(kind)


def _new_tables(store: IndexStore) -> None:
    store.run_ddl()


def _mention_spans(store: IndexStore) -> None:
    # A mention's description that is a span of its chunk's text is stored as the span.
    for table in MENTION_TABLES:
        present = {row[1] for row in store.conn.execute(f"PRAGMA table_info({table})")}
        for column in SPAN_COLUMNS:
            if column not in present:
                store.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER")
        found = f"instr((SELECT text FROM chunks WHERE id = {table}.chunk_id), description)"
        store.conn.execute(f"UPDATE {table} SET at = {found} - 1, len = length(description), "
                           f"description = '' WHERE description != '' AND {found} > 0")


def _reencode(store: IndexStore, table: str, convert: Callable[[Iterable[bytes]], list[bytes]],
              batch: int = 4096) -> None:
    last = -1
    while rows := store.conn.execute(f"SELECT id, vector FROM {table} WHERE vector IS NOT NULL AND "
                                     "id > ? ORDER BY id LIMIT ?", (last, batch)).fetchall():
        store.conn.executemany(f"UPDATE {table} SET vector = ? WHERE id = ?",
                               list(zip(convert(r[1] for r in rows), (r[0] for r in rows))))
        last = rows[-1][0]


STEPS = [
    Step(2, "the graph tables as the indexer writes them (version 1 never wrote to its own)", _graph_tables),
    Step(3, "i8 vector codes instead of f16 blobs; mention descriptions kept as spans of their chunk",
         _i8_codes),
    Step(4, "no node descriptions; vectors only on embedded relations; endpoint indexes without the kind",
         _lean_relations),
    Step(5, "4-bit vector codes; 16-digit text hashes; no key indexes on relation mentions", _four_bits),
    Step(6, "the tables of `edge-rag sync` (synced files and the documents they gave)", _new_tables),
    Step(7, "views for people browsing an index (entity_relations, document_chunks)", _new_tables),
]
