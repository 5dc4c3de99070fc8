"""SQL of the graph: mentions per chunk, entity names with vectors, nodes, relations and links;
the typed reads retrieval and export use.

Design: docs/design/storage.md, docs/design/index.md
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .codec import decode, encode, encode_rows
from .schema import MENTION_DESCRIPTION

BATCH = 500  # ids per ``IN (...)`` read, below SQLite's bound-variable limit (storage.md)


class MentionRow(NamedTuple):
    """One extracted entity mention: (key, name, type, description) and how often it occurs."""

    key: str
    name: str
    type: str
    description: str
    times: int


class RelationMentionRow(NamedTuple):
    """One extracted relation mention in one chunk."""

    chunk_id: int
    source_key: str
    target_key: str
    keywords: str
    description: str
    strength: float


@dataclass(frozen=True)
class PairMentions:
    """What a node pair's structural relation is derived from: its relation mentions' keyword
    counts, strengths (in mention order) and distinct chunk ids, and the counts of their
    descriptions, read when called (a description is a span of its chunk's text)."""

    keywords: Counter[str]
    strengths: list[float]
    chunk_ids: list[int]
    descriptions: Callable[[], Counter[str]]

    @classmethod
    def of(cls, rows: list[RelationMentionRow]) -> PairMentions:
        """The pair's mentions held as rows."""
        return cls(Counter(r.keywords for r in rows), [r.strength for r in rows],
                   sorted({r.chunk_id for r in rows}), lambda: Counter(r.description for r in rows))

    def __bool__(self) -> bool:
        return bool(self.strengths)


@dataclass(frozen=True)
class KeyRow:
    """A stored entity name: its row id (the vector key), node and name vector.

    The vector is kept as its stored blob (4-bit levels) and decoded when read: a build's region holds
    thousands of these rows and most of them never need their vector."""

    id: int
    key: str
    entity_id: int | None
    name: str
    code: bytes

    @property
    def vector(self) -> np.ndarray:
        """The unit name vector."""
        return decode(self.code)


@dataclass(frozen=True)
class NewRelation:
    """A relation row to insert (structural: weight set; similar: score set)."""

    kind: str
    source_id: int
    target_id: int
    keywords: str = ""
    description: str = ""
    weight: float | None = None
    score: float | None = None
    text_sha: str | None = None
    vector: np.ndarray | None = None
    chunk_ids: tuple[int, ...] = ()


class EntityRow(NamedTuple):
    """A graph node as retrieval reads it."""

    id: int
    name: str
    type: str


class NodeRow(NamedTuple):
    """A graph node with its description, as export reads it."""

    id: int
    name: str
    type: str
    description: str


class RelationRow(NamedTuple):
    """A stored relation: ``weight`` (ω_r) set for structural, ``score`` (s_r) for similar edges."""

    id: int
    kind: str
    source_id: int
    target_id: int
    weight: float | None
    score: float | None
    keywords: str
    description: str


RELATION_COLUMNS = "id, kind, source_id, target_id, weight, score, keywords, description"


class GraphTables:
    """Typed reads and writes of the graph tables; writes run inside ``IndexStore.write()``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- extraction bookkeeping -----------------------------------------------------------

    def pending_chunks(self, limit: int) -> list[tuple[int, str]]:
        """(id, text) of chunks not yet in the graph, oldest first."""
        return self.conn.execute(
            "SELECT c.id, c.text FROM chunks c LEFT JOIN chunk_graph g ON g.chunk_id = c.id "
            "WHERE g.chunk_id IS NULL ORDER BY c.id LIMIT ?", (limit,)).fetchall()

    def pending_count(self) -> int:
        """How many chunks wait for extraction."""
        return int(self.conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN chunk_graph g ON g.chunk_id = c.id "
            "WHERE g.chunk_id IS NULL").fetchone()[0])

    def cached_extractions(self, shas: Sequence[str], extractor: str) -> dict[str, str]:
        """Cached extractor output by chunk hash."""
        out: dict[str, str] = {}
        for part in parts(list(shas)):
            rows = self.conn.execute(
                f"SELECT chunk_sha, output FROM extractions WHERE extractor = ? AND chunk_sha IN "
                f"({marks(part)})", [extractor, *part])
            out.update(dict(rows.fetchall()))
        return out

    def cache_extractions(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Store (chunk hash, extractor id, output JSON) rows."""
        self.conn.executemany("INSERT OR REPLACE INTO extractions(chunk_sha, extractor, output) "
                              "VALUES (?, ?, ?)", list(rows))

    def add_mentions(self, chunk_id: int, extractor: str, failures: int,
                     entities: Iterable[tuple[str, str, str, str]],
                     relations: Iterable[tuple[str, str, str, str, float]]) -> None:
        """Record one chunk's mentions and mark it as in the graph (a description found in the
        chunk's text is stored as its span, see ``schema.py``)."""
        row = self.conn.execute("SELECT text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        text = row[0] if row else ""
        self.conn.executemany(
            "INSERT OR IGNORE INTO entity_mentions(chunk_id, key, name, type, description, at, len) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", [(chunk_id, *e[:3], *_span(text, e[3])) for e in entities])
        self.conn.executemany(
            "INSERT OR IGNORE INTO relation_mentions(chunk_id, source_key, target_key, keywords, "
            "description, at, len, strength) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(chunk_id, *r[:3], *_span(text, r[3]), r[4]) for r in relations])
        self.conn.execute("INSERT INTO chunk_graph(chunk_id, extractor, failures) VALUES (?, ?, ?)",
                          (chunk_id, extractor, failures))

    def keys_of_chunks(self, chunk_ids: Sequence[int]) -> set[str]:
        """Entity keys the chunks mention (relation endpoints are mentioned entities too)."""
        keys: set[str] = set()
        for part in parts(list(chunk_ids)):
            rows = self.conn.execute(
                f"SELECT key FROM entity_mentions WHERE chunk_id IN ({marks(part)})", part)
            keys.update(r[0] for r in rows)
        return keys

    # -- entity names (keys) --------------------------------------------------------------

    def mentions(self, keys: Iterable[str]) -> dict[str, list[MentionRow]]:
        """Distinct mentions of each key with their counts."""
        return self._mentions("key", sorted(keys))

    def mentions_in(self, chunk_ids: Iterable[int]) -> dict[str, list[MentionRow]]:
        """Distinct mentions in these chunks, by key, with their counts."""
        return self._mentions("chunk_id", sorted(int(c) for c in chunk_ids))

    def _mentions(self, column: str, values: list) -> dict[str, list[MentionRow]]:
        out: dict[str, list[MentionRow]] = {}
        found: dict[tuple[str, str, str, str], int] = {}
        for part in parts(values):
            rows = self.conn.execute(
                f"SELECT key, name, type, {MENTION_DESCRIPTION} AS d, count(*) FROM entity_mentions m "
                f"WHERE {column} IN ({marks(part)}) GROUP BY key, name, type, d", part)
            for *group, n in rows:
                found[tuple(group)] = found.get(tuple(group), 0) + n  # (a key may span two parts)
        for group, n in sorted(found.items()):
            out.setdefault(group[0], []).append(MentionRow(*group, n))
        return out

    def summaries(self, keys: Iterable[str]) -> dict[str, tuple[int, str]]:
        """(mentions, stored running summary) of the keys that have one (``index/summary.py``)."""
        out: dict[str, tuple[int, str]] = {}
        for part in parts(sorted(keys)):
            rows = self.conn.execute(f"SELECT key, mentions, description FROM entity_keys WHERE key IN "
                                     f"({marks(part)}) AND description != ''", part)
            out.update((key, (n, text)) for key, n, text in rows)
        return out

    def key_rows(self, keys: Iterable[str]) -> dict[str, KeyRow]:
        """Stored entity names by key."""
        return {row.key: row for row in self._key_rows("key", list(keys))}

    def key_rows_by_id(self, ids: Iterable[int]) -> dict[int, KeyRow]:
        """Stored entity names by row id (the entity vector index's keys)."""
        return {row.id: row for row in self._key_rows("id", [int(i) for i in ids])}

    def _key_rows(self, column: str, values: list) -> Iterator[KeyRow]:
        for part in parts(values):
            rows = self.conn.execute(
                f"SELECT id, key, entity_id, name, vector FROM entity_keys WHERE {column} IN "
                f"({marks(part)})", part)
            for row in rows:
                yield KeyRow(row[0], row[1], row[2], row[3], row[4])

    def upsert_key(self, key: str, name: str, type_: str, description: str, mentions: int,
                   vector: np.ndarray) -> int:
        """Insert or update an entity name; returns its row id."""
        self.conn.execute(
            "INSERT INTO entity_keys(key, name, type, description, mentions, vector) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET name = excluded.name, "
            "type = excluded.type, description = excluded.description, "
            "mentions = excluded.mentions, vector = excluded.vector",
            (key, name, type_, description, mentions, encode(vector)))
        return int(self.conn.execute("SELECT id FROM entity_keys WHERE key = ?", (key,)).fetchone()[0])

    def delete_keys(self, keys: Sequence[str]) -> None:
        """Forget entity names that no chunk mentions any more."""
        for part in parts(list(keys)):
            self.conn.execute(f"DELETE FROM entity_keys WHERE key IN ({marks(part)})", part)

    def keys_of_entities(self, entity_ids: Iterable[int]) -> set[str]:
        """Every key that names one of these nodes."""
        out: set[str] = set()
        for part in parts(sorted(set(entity_ids))):
            rows = self.conn.execute(
                f"SELECT key FROM entity_keys WHERE entity_id IN ({marks(part)})", part)
            out.update(r[0] for r in rows)
        return out

    def similar_partners(self, entity_ids: Iterable[int]) -> set[int]:
        """Nodes joined to these by a similar edge."""
        out: set[int] = set()
        for part in parts(sorted(set(entity_ids))):
            holders = marks(part)
            rows = self.conn.execute(
                "SELECT source_id, target_id FROM relations WHERE kind = 'similar' AND "
                f"(source_id IN ({holders}) OR target_id IN ({holders}))", part + part)
            out.update(i for row in rows for i in row)
        return out

    # -- nodes, relations and links ---------------------------------------------------------

    def relations_of(self, entity_ids: Iterable[int], kind: str | None = None
                     ) -> list[tuple[int, str | None, np.ndarray | None]]:
        """(id, text hash, vector) of every relation (of one kind, if given) touching these nodes."""
        out: dict[int, tuple[int, str | None, np.ndarray | None]] = {}
        kinds = ("structural", "similar") if kind is None else (kind,)
        for part in parts(sorted(set(entity_ids))):
            holders, which = marks(part), marks(kinds)
            rows = self.conn.execute(
                f"SELECT id, text_sha, vector FROM relations WHERE source_id IN ({holders}) AND kind IN "
                f"({which}) UNION SELECT id, text_sha, vector FROM relations WHERE target_id IN "
                f"({holders}) AND kind IN ({which})", [*part, *kinds, *part, *kinds])
            out.update((row[0], (row[0], row[1], None if row[2] is None else decode(row[2])))
                       for row in rows)
        return list(out.values())

    def relations_between(self, pairs: Iterable[tuple[int, int]]
                          ) -> list[tuple[int, str | None, np.ndarray | None]]:
        """(id, text hash, vector) of the structural relation of each (smaller, larger) node pair."""
        out: list[tuple[int, str | None, np.ndarray | None]] = []
        for source, target in sorted(pairs):
            rows = self.conn.execute("SELECT id, text_sha, vector FROM relations WHERE source_id = ? "
                                     "AND target_id = ? AND kind = 'structural'", (source, target))
            out.extend((i, sha, None if v is None else decode(v)) for i, sha, v in rows)
        return out

    def delete_relations(self, relation_ids: Iterable[int]) -> None:
        """Delete relations with their chunk links."""
        for part in parts(sorted(set(relation_ids))):
            self.conn.execute(f"DELETE FROM relations WHERE id IN ({marks(part)})", part)

    def delete_entities(self, entity_ids: Iterable[int]) -> None:
        """Delete nodes with their relations and chunk links (keys keep their rows)."""
        for part in parts(sorted(set(entity_ids))):
            self.conn.execute(f"DELETE FROM entities WHERE id IN ({marks(part)})", part)

    def add_entity(self, name: str, type_: str, description: str, keys: Sequence[str]) -> int:
        """Create a node for a group of keys, link its keys and the chunks that mention them."""
        cursor = self.conn.execute(
            "INSERT INTO entities(name, type, description, n_keys) VALUES (?, ?, ?, ?)",
            (name, type_, description, len(keys)))
        entity_id = inserted_id(cursor)
        self.conn.execute(f"UPDATE entity_keys SET entity_id = ? WHERE key IN ({marks(keys)})",
                          [entity_id, *keys])
        self.link_chunks(entity_id, keys)
        return entity_id

    def link_chunks(self, entity_id: int, keys: Sequence[str], chunks: Sequence[int] | None = None) -> None:
        """Link a node to every chunk that mentions one of its keys (links held stay), or to
        those of ``chunks`` that do (the new ones, when the others are linked already)."""
        for part in [None] if chunks is None else parts(list(chunks)):
            among = "" if part is None else f"chunk_id IN ({marks(part)}) AND "
            self.conn.execute(
                "INSERT OR IGNORE INTO chunk_entities(chunk_id, entity_id) SELECT DISTINCT chunk_id, ? "
                f"FROM entity_mentions WHERE {among}key IN ({marks(keys)})",
                [entity_id, *(part or []), *keys])

    def relation_mentions(self, keys: Iterable[str]) -> list[RelationMentionRow]:
        """Every relation mention with an endpoint among the keys.

        A relation's endpoints are entity mentions of its chunk (``GraphBuilder`` keeps no other),
        so the chunks come from ``entity_mentions_key`` and the mentions from the primary key:
        relation_mentions needs no index of its own on the key texts (schema 5)."""
        out: dict[tuple, RelationMentionRow] = {}
        columns = f"chunk_id, source_key, target_key, keywords, {MENTION_DESCRIPTION}, strength"
        for part in parts(sorted(keys)):
            rows = self.conn.execute(
                f"WITH k(key) AS (VALUES {', '.join(['(?)'] * len(part))}) SELECT {columns} "
                "FROM relation_mentions m WHERE m.chunk_id IN (SELECT chunk_id FROM entity_mentions "
                "WHERE key IN k) AND (m.source_key IN k OR m.target_key IN k)", part)
            out.update((row[:3], RelationMentionRow(*row)) for row in rows)
        return sorted(out.values(), key=lambda r: (r.chunk_id, r.source_key, r.target_key))

    def key_chunks(self) -> KeyChunks:
        """A reader of keys' chunk ids that keeps them for the next pair (``mentions_between``)."""
        return KeyChunks(self.conn)

    def mentions_between(self, keys: Sequence[str], others: Sequence[str],
                         chunks: KeyChunks | None = None) -> PairMentions:
        """The relation mentions joining a key of ``keys`` to one of ``others``, in the order
        ``relation_mentions`` gives: read by primary key in the chunks that mention both keys
        (``chunks`` keeps each key's chunk ids for the next pair that has it), their
        descriptions (a span of each mention's chunk text) only when asked for."""
        chunks = chunks or KeyChunks(self.conn)
        found: list[tuple[int, str, str, str, float]] = []
        among: list[tuple[list[int], str, str]] = []
        for a in keys:
            for b in others:
                first, second = min(a, b), max(a, b)
                both = np.intersect1d(chunks.of(first), chunks.of(second), assume_unique=True).tolist()
                for part in parts(both):
                    rows = self.conn.execute(
                        "SELECT chunk_id, source_key, target_key, keywords, strength FROM relation_mentions "
                        f"WHERE chunk_id IN ({marks(part)}) AND source_key = ? AND target_key = ?",
                        (*part, first, second)).fetchall()
                    if rows:
                        found.extend(rows)
                        among.append((part, first, second))
        found.sort(key=lambda r: r[:3])
        return PairMentions(Counter(r[3] for r in found), [r[4] for r in found],
                            sorted({r[0] for r in found}), lambda: self._descriptions(among))

    def _descriptions(self, among: list[tuple[list[int], str, str]]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for part, first, second in among:
            rows = self.conn.execute(
                f"SELECT {MENTION_DESCRIPTION}, count(*) FROM relation_mentions m WHERE m.chunk_id IN "
                f"({marks(part)}) AND m.source_key = ? AND m.target_key = ? GROUP BY 1",
                (*part, first, second))
            counts.update(dict(rows.fetchall()))
        return counts

    def entity_of_keys(self, keys: Iterable[str]) -> dict[str, int]:
        """The node id each key belongs to."""
        out: dict[str, int] = {}
        for part in parts(sorted(set(keys))):
            rows = self.conn.execute(
                f"SELECT key, entity_id FROM entity_keys WHERE key IN ({marks(part)}) "
                "AND entity_id IS NOT NULL", part)
            out.update(rows.fetchall())
        return out

    def entity_names(self, entity_ids: Iterable[int]) -> dict[int, str]:
        """Display names of nodes."""
        out: dict[int, str] = {}
        for part in parts(sorted(set(entity_ids))):
            rows = self.conn.execute(f"SELECT id, name FROM entities WHERE id IN ({marks(part)})", part)
            out.update(rows.fetchall())
        return out

    def add_relation(self, relation: NewRelation) -> int:
        """Insert a relation with its supporting chunks; returns its id. A relation stored with
        its vector keeps no description (see ``set_relation_vectors``)."""
        vector = None if relation.vector is None else encode(relation.vector)
        cursor = self.conn.execute(
            "INSERT INTO relations(kind, source_id, target_id, keywords, description, weight, score, "
            "text_sha, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (relation.kind, relation.source_id, relation.target_id, relation.keywords,
             relation.description if vector is None else "", relation.weight, relation.score,
             relation.text_sha, vector))
        relation_id = inserted_id(cursor)
        self.conn.executemany("INSERT OR IGNORE INTO relation_chunks(relation_id, chunk_id) VALUES (?, ?)",
                              [(relation_id, c) for c in relation.chunk_ids])
        return relation_id


    def relations_without_vector(self) -> list[tuple[int, str, str, str, str]]:
        """(id, source name, target name, keywords, description) of structural relations
        still waiting for their vector (those kept without one have no text hash)."""
        return self.conn.execute(
            "SELECT r.id, a.name, b.name, r.keywords, r.description FROM relations r "
            "JOIN entities a ON a.id = r.source_id JOIN entities b ON b.id = r.target_id "
            "WHERE r.kind = 'structural' AND r.vector IS NULL AND r.text_sha IS NOT NULL "
            "ORDER BY r.id").fetchall()

    def set_relation_vectors(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Store relation vectors (4-bit blobs) and drop the descriptions they were embedded from:
        ``all_relations`` derives a description from the mentions (schema 5)."""
        blobs = encode_rows(vectors)
        self.conn.executemany("UPDATE relations SET vector = ?, description = '' WHERE id = ?",
                              [(blobs[i], int(r)) for i, r in enumerate(ids)])

    # -- reads for retrieval ----------------------------------------------------------------

    def spellings(self) -> list[str]:
        """Every spelling of every entity name in the graph, sorted."""
        rows = self.conn.execute("SELECT name FROM entity_keys WHERE entity_id IS NOT NULL")
        return sorted({row[0] for row in rows})

    def entity_of_key_ids(self, key_ids: Iterable[int]) -> dict[int, int | None]:
        """The node of each entity name, by the name's row id (the entity vector index's keys)."""
        found: dict[int, int | None] = {}
        for part in parts(sorted(set(key_ids))):
            rows = self.conn.execute(
                f"SELECT id, entity_id FROM entity_keys WHERE id IN ({marks(part)})", part)
            found.update(rows.fetchall())
        return found

    def entities(self, entity_ids: Iterable[int]) -> list[EntityRow]:
        """Nodes by id."""
        out: list[EntityRow] = []
        for part in parts(sorted(set(entity_ids))):
            rows = self.conn.execute(f"SELECT id, name, type FROM entities WHERE id IN ({marks(part)})",
                                     part)
            out.extend(EntityRow(*row) for row in rows)
        return out

    def relations(self, relation_ids: Iterable[int]) -> list[RelationRow]:
        """Relations by id."""
        return self._relations("id", sorted(set(relation_ids)))

    def relations_touching(self, entity_ids: Iterable[int]) -> list[RelationRow]:
        """Every relation with an endpoint among the nodes, by id."""
        ids = sorted(set(entity_ids))
        found = {r.id: r for r in self._relations("source_id", ids)}
        found.update((r.id, r) for r in self._relations("target_id", ids))
        return sorted(found.values(), key=lambda r: r.id)

    def _relations(self, column: str, ids: list[int]) -> list[RelationRow]:
        out: list[RelationRow] = []
        for part in parts(ids):
            rows = self.conn.execute(
                f"SELECT {RELATION_COLUMNS} FROM relations WHERE {column} IN ({marks(part)})", part)
            out.extend(RelationRow(*row) for row in rows)
        return out

    def chunks_of_entities(self, entity_ids: Iterable[int] | None = None) -> list[tuple[int, int]]:
        """(chunk id, node id) links of these nodes, or of every node."""
        return self._links("chunk_entities", "entity_id", entity_ids)

    def chunks_of_relations(self, relation_ids: Iterable[int] | None = None) -> list[tuple[int, int]]:
        """(chunk id, relation id) links of these relations, or of every relation."""
        return self._links("relation_chunks", "relation_id", relation_ids)

    def _links(self, table: str, column: str, ids: Iterable[int] | None) -> list[tuple[int, int]]:
        if ids is None:
            return self.conn.execute(f"SELECT chunk_id, {column} FROM {table}").fetchall()
        out: list[tuple[int, int]] = []
        for part in parts(sorted(ids)):
            rows = self.conn.execute(f"SELECT chunk_id, {column} FROM {table} WHERE {column} IN "
                                     f"({marks(part)})", part)
            out.extend(rows.fetchall())
        return out

    # -- reads for export ---------------------------------------------------------------------

    def nodes(self) -> list[NodeRow]:
        """Every node with its description: the stored one (schema 3 and older), else its
        names' mention descriptions joined, most frequent first (schema 4 stores none)."""
        derived: dict[int, Counter[str]] = {}
        for entity_id, text, count in self.conn.execute(
                f"SELECT k.entity_id, {MENTION_DESCRIPTION} AS d, count(*) FROM entity_mentions m "
                "JOIN entity_keys k ON k.key = m.key WHERE k.entity_id IS NOT NULL GROUP BY 1, 2"):
            derived.setdefault(entity_id, Counter())[text] += count
        rows = self.conn.execute("SELECT id, name, type, description FROM entities")
        return [NodeRow(i, name, type_,
                        stored or join_counts(derived.get(i, Counter()), NODE_DESCRIPTION_CHARS))
                for i, name, type_, stored in rows]

    def all_relations(self) -> list[RelationRow]:
        """Every relation with its description: the stored one (a relation still waiting for its
        vector, schema 4 and older), else its mentions' descriptions joined as the builder joined
        them to embed it (schema 5 keeps none once the vector is stored)."""
        derived: dict[tuple[int, int], list[str]] = {}
        for a, b, text in self.conn.execute(
                f"SELECT s.entity_id, t.entity_id, {MENTION_DESCRIPTION} FROM relation_mentions m "
                "JOIN entity_keys s ON s.key = m.source_key JOIN entity_keys t ON t.key = m.target_key "
                "WHERE s.entity_id IS NOT NULL AND t.entity_id IS NOT NULL AND s.entity_id != t.entity_id"):
            derived.setdefault((min(a, b), max(a, b)), []).append(text)
        rows = [RelationRow(*row) for row in self.conn.execute(f"SELECT {RELATION_COLUMNS} FROM relations")]
        return [r if r.description or r.kind != "structural" or not embedded(r.keywords) else r._replace(
            description=join_texts(derived.get((r.source_id, r.target_id), []), RELATION_DESCRIPTION_CHARS))
                for r in rows]

    def aliases(self) -> list[tuple[str, int | None]]:
        """(key, node id) of every entity name, by key."""
        return self.conn.execute("SELECT key, entity_id FROM entity_keys ORDER BY key").fetchall()

    def named_keys(self) -> list[tuple[str, int]]:
        """(key, node id) of every entity name that belongs to a node."""
        return self.conn.execute(
            "SELECT key, entity_id FROM entity_keys WHERE entity_id IS NOT NULL").fetchall()

    def neighbours(self, entity_id: int) -> list[int]:
        """Nodes joined to this one by a relation of either kind."""
        rows = self.conn.execute("SELECT target_id FROM relations WHERE source_id = ? UNION "
                                 "SELECT source_id FROM relations WHERE target_id = ?",
                                 (entity_id, entity_id))
        return [row[0] for row in rows]


# Relations kept without a vector (and without the description and text hash only embedding
# needs): those whose every mention is a co-occurrence chain link of the fast extractor (two
# names on one line) or a speaker → name link ('mentions'). Retrieval still walks them as
# edges; only dual's relation search (R_DR, eq. 14) cannot reach them. The speaker → word links
# ('talks about') keep theirs. What each costs in recall: docs/design/storage.md.
UNEMBEDDED_KEYWORDS = frozenset({"co-occur", "mentions"})
NODE_DESCRIPTION_CHARS = 400  # what a node's exported description holds of its mentions (storage.md)
RELATION_DESCRIPTION_CHARS = 400  # what a structural relation's embedded text holds of its mentions


class KeyChunks:
    """The sorted ids of the chunks that mention each key, read once per key (from the covering
    ``entity_mentions_key`` index) and kept up to ``limit`` ids in all: a batch's changed pairs
    share their busy keys (a person of every conversation), which an SQL ``INTERSECT`` per pair
    read again for each pair."""

    def __init__(self, conn: sqlite3.Connection, limit: int = 2_000_000) -> None:
        self.conn, self.limit = conn, limit
        self._kept: dict[str, np.ndarray] = {}
        self._size = 0

    def of(self, key: str) -> np.ndarray:
        """The chunk ids mentioning ``key``, ascending."""
        found = self._kept.get(key)
        if found is None:
            rows = self.conn.execute("SELECT chunk_id FROM entity_mentions WHERE key = ? ORDER BY chunk_id",
                                     (key,))
            found = np.fromiter((r[0] for r in rows), dtype=np.int64)
            if self._size + len(found) > self.limit:
                self._kept, self._size = {}, 0
            self._kept[key], self._size = found, self._size + len(found)
        return found


def join_texts(texts: Iterable[str], limit: int, separator: str = "; ") -> str:
    """Distinct non-empty texts, most frequent first (ties alphabetical), within a length limit."""
    return join_counts(Counter(texts), limit, separator)


def join_counts(counts: Counter[str], limit: int, separator: str = "; ") -> str:
    """``join_texts`` of texts already counted."""
    out = ""
    for text, _ in sorted(((t, n) for t, n in counts.items() if t), key=lambda kv: (-kv[1], kv[0])):
        candidate = f"{out}{separator}{text}" if out else text
        if len(candidate) > limit:
            break
        out = candidate
    return out


def embedded(keywords: str) -> bool:
    """Whether a structural relation with these (comma-joined) keywords gets a vector."""
    return not {k.strip() for k in keywords.split(",")} <= UNEMBEDDED_KEYWORDS


def _span(text: str, description: str) -> tuple[str, int | None, int | None]:
    """(description, at, len) as stored: the span of ``text`` it is, or the text itself."""
    at = text.find(description) if description else -1
    return ("", at, len(description)) if at >= 0 else (description, None, None)


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The row id an INSERT just gave (typed optional by sqlite3; always set after an INSERT)."""
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def parts(values: list) -> Iterator[list]:
    """Slices of at most BATCH values (SQLite limits the number of parameters)."""
    for start in range(0, len(values), BATCH):
        yield values[start : start + BATCH]


def marks(values: Sequence) -> str:
    """``?,?,…`` placeholders for the values."""
    return ",".join("?" * len(values))
