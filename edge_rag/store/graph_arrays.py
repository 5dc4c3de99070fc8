"""Whole-graph reads for the random-walk retriever (``ppr``): every node, edge and chunk link as
arrays, read once per index generation, plus the few per-query lookups it makes.

Design: docs/design/ppr.md
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .codec import decode_rows
from .graph_tables import marks, parts

# Keys per packed read (``WalkTables._packed``): a range of ids bounds the text one read holds
# (ppr.md).
PACKED_SPAN = 65536


@dataclass(frozen=True)
class GraphArrays:
    """The weighted graph as parallel arrays (ids are SQLite row ids).

    ``relation_*``: one row per relation, ``relation_value`` is ω_r (structural) or s_r
    (similar) and ``relation_similar`` tells which. ``link_*``: the ``chunk_entities`` pairs.
    ``chunk_doc``: a small integer per chunk naming its document, ``chunk_ord`` its place there.
    """

    entity_ids: np.ndarray
    chunk_ids: np.ndarray
    chunk_doc: np.ndarray
    chunk_ord: np.ndarray
    relation_source: np.ndarray
    relation_target: np.ndarray
    relation_value: np.ndarray
    relation_similar: np.ndarray
    link_chunk: np.ndarray
    link_entity: np.ndarray


class WalkTables:
    """Typed reads of the graph for the random walk; read-only."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction around several reads (they see one state of the index)."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def arrays(self) -> GraphArrays:
        """Every node, relation and chunk link (one consistent read), streamed into arrays a few
        thousand rows at a time: row tuples of a large corpus's whole graph would not fit a
        small device."""
        own = not self.conn.in_transaction
        if own:
            self.conn.execute("BEGIN")  # one read snapshot for all four tables
        try:
            entities = self._packed("entities", "id", ("id",), (np.int64,))[0]
            chunk_ids, docs, ords = self._columns("SELECT id, doc_id, ord FROM chunks ORDER BY id",
                                                  (np.int64, object, np.int64))
            relations = self._packed("relations", "id", (
                "source_id", "target_id", "coalesce(weight, score)", "kind = 'similar'"),
                (np.int64, np.int64, np.float32, bool))
            links = self._packed("chunk_entities", "entity_id", ("chunk_id", "entity_id"),
                                 (np.int64, np.int64))
        finally:
            if own:
                self.conn.execute("COMMIT")
        numbers: dict[str, int] = {}
        doc_numbers = np.fromiter((numbers.setdefault(d, len(numbers)) for d in docs), np.int64, len(docs))
        return GraphArrays(entities, chunk_ids, doc_numbers, ords, *relations, *links)

    def chunk_texts(self, batch: int = 2048, after: int = -1) -> Iterator[list[tuple[int, str, str]]]:
        """(chunk id, document id, text) of every chunk with an id above ``after``, in id order,
        a batch at a time."""
        cursor = self.conn.execute("SELECT id, doc_id, text FROM chunks WHERE id > ? ORDER BY id", (after,))
        while rows := cursor.fetchmany(batch):
            yield rows

    def first_chunks(self) -> dict[str, int]:
        """Each document's first chunk id (lowest ``ord``)."""
        rows = self.conn.execute("SELECT doc_id, id, min(ord) FROM chunks GROUP BY doc_id")
        return {doc: chunk for doc, chunk, _ in rows}

    def titles(self) -> dict[str, str]:
        """Document id → its ``title`` metadata, for documents that have a text one."""
        rows = self.conn.execute("SELECT id, json_extract(metadata, '$.title') FROM documents "
                                 "WHERE json_type(metadata, '$.title') = 'text' ORDER BY rowid")
        return {doc: title for doc, title in rows}

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors of chunks by id (unit f32, decoded from their stored codes)."""
        out: dict[int, np.ndarray] = {}
        for part in parts([int(i) for i in ids]):
            sql = f"SELECT id, vector FROM chunks WHERE id IN ({marks(part)})"
            rows = self.conn.execute(sql, part).fetchall()
            if rows:  # one decoding pass over the part's blobs, not a blob at a time (docs/design/ppr.md)
                out.update(zip((r[0] for r in rows), decode_rows(r[1] for r in rows)))
        return out

    def _columns(self, sql: str, types: tuple[Any, ...], batch: int = 65536) -> list[np.ndarray]:
        cursor = self.conn.execute(sql)
        parts: list[list[np.ndarray]] = [[] for _ in types]
        while rows := cursor.fetchmany(batch):
            for n, kind in enumerate(types):
                parts[n].append(np.asarray([r[n] for r in rows], dtype=kind))
        return [np.concatenate(p) if p else np.zeros(0, dtype=kind) for p, kind in zip(parts, types)]

    def _packed(self, table: str, key: str, columns: tuple[str, ...], types: tuple[Any, ...],
                span: int = PACKED_SPAN) -> list[np.ndarray]:
        """Numeric ``columns`` of ``table`` in ``key`` order, read ``span`` keys at a time as one
        comma-joined string per column and parsed by numpy, not a Python row tuple per row (the
        cost of each is in docs/design/ppr.md). A REAL comes back within 1e-15 of itself
        (SQLite's 15 digits), far inside the float32 it is kept as."""
        low, high = self.conn.execute(f"SELECT min({key}), max({key}) FROM {table}").fetchone()
        joined = ", ".join(f"group_concat({column}, ',')" for column in columns)
        sql = f"SELECT {joined} FROM {table} WHERE {key} >= ? AND {key} < ?"
        parts: list[list[np.ndarray]] = [[] for _ in types]
        for start in range(low, high + 1, span) if low is not None else ():
            for n, text in enumerate(self.conn.execute(sql, (start, start + span)).fetchone()):
                parts[n].append(np.fromstring(text or "", dtype=np.float64 if types[n] is np.float32
                                              else np.int64, sep=",").astype(types[n]))
        return [np.concatenate(p) if p else np.zeros(0, dtype=kind) for p, kind in zip(parts, types)]
