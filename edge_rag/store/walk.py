"""Whole-graph reads for the random-walk retriever (``ppr``): every node, edge and chunk link as
arrays, read once per index generation, plus the few per-query lookups it makes."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .codec import decode_rows
from .graph_tables import marks, parts


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

    def arrays(self) -> GraphArrays:
        """Every node, relation and chunk link (one consistent read)."""
        self.conn.execute("BEGIN")  # one read snapshot for all four tables
        try:
            entities = self._ints("SELECT id FROM entities ORDER BY id")
            chunks = self.conn.execute("SELECT id, doc_id, ord FROM chunks ORDER BY id").fetchall()
            relations = self.conn.execute(
                "SELECT source_id, target_id, coalesce(weight, score), kind = 'similar' FROM relations"
            ).fetchall()
            links = self.conn.execute("SELECT chunk_id, entity_id FROM chunk_entities").fetchall()
        finally:
            self.conn.execute("COMMIT")
        docs: dict[str, int] = {}
        column = lambda rows, i, dtype: np.asarray([r[i] for r in rows], dtype=dtype)
        return GraphArrays(
            entities, column(chunks, 0, np.int64),
            np.asarray([docs.setdefault(r[1], len(docs)) for r in chunks], dtype=np.int64),
            column(chunks, 2, np.int64), column(relations, 0, np.int64), column(relations, 1, np.int64),
            column(relations, 2, np.float32), column(relations, 3, bool),
            column(links, 0, np.int64), column(links, 1, np.int64))

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors of chunks by id (unit f32, decoded from their stored codes)."""
        out: dict[int, np.ndarray] = {}
        for part in parts([int(i) for i in ids]):
            sql = f"SELECT id, vector FROM chunks WHERE id IN ({marks(part)})"
            rows = self.conn.execute(sql, part).fetchall()
            if rows:  # one decoding pass over the part's blobs (a blob at a time cost ppr ~2 ms a query)
                out.update(zip((r[0] for r in rows), decode_rows(r[1] for r in rows)))
        return out

    def _ints(self, sql: str) -> np.ndarray:
        return np.asarray([r[0] for r in self.conn.execute(sql)], dtype=np.int64)
