"""SQL schema of an index file: documents, chunks and the weighted graph's adjacency."""

from __future__ import annotations

SCHEMA_VERSION = 1
VECTOR_KINDS = ("chunk", "entity", "relation")

# Relations are the graph's adjacency: kind 'structural' carries a weight (omega_r),
# kind 'similar' carries the aggregation score S. Both endpoints are indexed so one-hop
# lookups in either direction are an index seek.
DDL = """
CREATE TABLE IF NOT EXISTS manifest (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    content_sha256 TEXT NOT NULL UNIQUE,
    n_chars INTEGER NOT NULL,
    n_chunks INTEGER NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    added_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    text TEXT NOT NULL,
    n_tokens INTEGER NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (doc_id, ord)
);
CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    vector BLOB
);
CREATE INDEX IF NOT EXISTS entities_name ON entities(name);
CREATE TABLE IF NOT EXISTS relations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('structural', 'similar')),
    source_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    keywords TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    weight REAL,
    score REAL,
    vector BLOB,
    CHECK ((kind = 'structural' AND weight IS NOT NULL) OR (kind = 'similar' AND score IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS relations_source ON relations(source_id, kind);
CREATE INDEX IF NOT EXISTS relations_target ON relations(target_id, kind);
CREATE TABLE IF NOT EXISTS chunk_entities (
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (chunk_id, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_entities_entity ON chunk_entities(entity_id, chunk_id);
CREATE TABLE IF NOT EXISTS relation_chunks (
    relation_id INTEGER NOT NULL REFERENCES relations(id) ON DELETE CASCADE,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    PRIMARY KEY (relation_id, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relation_chunks_chunk ON relation_chunks(chunk_id, relation_id);
CREATE TABLE IF NOT EXISTS vector_files (
    kind TEXT PRIMARY KEY,
    generation INTEGER NOT NULL DEFAULT 0,
    saved_generation INTEGER,
    saved_count INTEGER,
    saved_bytes INTEGER,
    saved_crc32 INTEGER
);
"""
