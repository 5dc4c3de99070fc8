"""SQL schema of an index file: documents, chunks and the weighted graph's adjacency."""

from __future__ import annotations

SCHEMA_VERSION = 7
VECTOR_KINDS = ("chunk", "entity", "relation")

# Mentions (per chunk, as extracted) are the source of truth of the graph; entity_keys (one row
# per normalised name, with its name vector) and the nodes, relations and links are derived
# from them and rebuilt for the part an insert or delete touches. Relations are the graph's
# adjacency: kind 'structural' carries a weight (omega_r), kind 'similar' the aggregation score
# S. Both endpoints are indexed so one-hop lookups in either direction are an index seek.
# Version 1 files had the same tables for documents and chunks and empty graph tables, so
# opening one drops GRAPH_TABLES_V1, creates the rest and keeps everything else. Version 2 had
# these tables with f16 vector blobs (768 bytes at 384 dimensions); version 3 holds i8 codes
# (``codec.py``), so opening a version 2 file re-encodes its blobs once.
# A blob's length alone cannot tell the two apart for every dimension: the version decides.
# Version 3 also stores a mention's description that is a span of its chunk's text (nearly all
# of the fast extractor's: lines and snippets) as that span: ``at`` (0-based character offset)
# and ``len`` with an empty ``description``; MENTION_DESCRIPTION reads either form back.
# Version 4 stores no node description (``entities.description`` stays empty and export derives
# it from the mentions), keeps the fast extractor's 'mentions' relations without a vector, and
# indexes relation endpoints without the kind (``relations_from``/``relations_to``: the kind
# text repeated in both indexes was 3 MB of 2Wiki's 134k relations); RELATION_INDEXES_V3 are
# the version 3 indexes a migration drops.
# Version 5 (issue 16: LiHua 13.1 -> under 8 MiB, 2Wiki 71.6 -> under 64):
# - every vector at 4 bits (``codec.py``; 193 bytes at 384 dimensions), re-encoded on migration;
# - no text indexes on relation_mentions' endpoint keys (13 % of a 2Wiki index): a relation's
#   endpoints are entity mentions of its own chunk, so ``GraphTables.relation_mentions`` finds
#   the chunks through ``entity_mentions_key`` and the rows through the primary key;
# - no (chunk_id, relation_id) index on relation_chunks: only a chunk's deletion looked a chunk's
#   relations up (its cascade now scans the table, once per deleted chunk);
# - a structural relation's description is kept only until its vector is stored (it is the text
#   embedded); ``GraphTables.all_relations`` derives it from the mentions for export, exactly as
#   the builder joined it; its text hash (for reusing the vector) has TEXT_SHA_DIGITS hex digits.
# INDEXES_V4 are the version 4 indexes a migration drops.
# Version 6 (issue 42) adds the tables of ``edge-rag sync`` (``synced.py``): each synced file's
# size, mtime and content hash, and the documents it gave (``owned``: the sync added it, so the
# sync may delete it; a document equal to one inserted otherwise is only linked). Opening a
# version 5 file creates them.
# entity_keys.description holds no description (nothing reads one back): it is empty, or holds
# the running summary (JSON) of a name with many mentions (``index/summary.py``), which an
# insert updates from the new chunks' mentions alone. Code that does not know it writes it
# empty, and an empty one is derived again from the mentions, so files stay compatible.
MENTION_DESCRIPTION = ("CASE WHEN m.at IS NULL THEN m.description "
                       "ELSE substr((SELECT text FROM chunks WHERE id = m.chunk_id), m.at + 1, m.len) END")
SPAN_COLUMNS = ("at", "len")
MENTION_TABLES = ("entity_mentions", "relation_mentions")
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
    n_keys INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS entities_name ON entities(name);
CREATE TABLE IF NOT EXISTS entity_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    entity_id INTEGER REFERENCES entities(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    mentions INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_keys_entity ON entity_keys(entity_id);
CREATE TABLE IF NOT EXISTS relations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('structural', 'similar')),
    source_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    keywords TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    weight REAL,
    score REAL,
    text_sha TEXT,
    vector BLOB,
    CHECK ((kind = 'structural' AND weight IS NOT NULL) OR (kind = 'similar' AND score IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS relations_from ON relations(source_id);
CREATE INDEX IF NOT EXISTS relations_to ON relations(target_id);
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
CREATE TABLE IF NOT EXISTS entity_mentions (
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    description TEXT NOT NULL,
    at INTEGER,
    len INTEGER,
    PRIMARY KEY (chunk_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_mentions_key ON entity_mentions(key);
CREATE TABLE IF NOT EXISTS relation_mentions (
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    source_key TEXT NOT NULL,
    target_key TEXT NOT NULL,
    keywords TEXT NOT NULL,
    description TEXT NOT NULL,
    strength REAL NOT NULL,
    at INTEGER,
    len INTEGER,
    PRIMARY KEY (chunk_id, source_key, target_key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunk_graph (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    extractor TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS extractions (
    chunk_sha TEXT NOT NULL,
    extractor TEXT NOT NULL,
    output TEXT NOT NULL,
    PRIMARY KEY (chunk_sha, extractor)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS synced_files (
    folder TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (folder, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS synced_documents (
    folder TEXT NOT NULL,
    path TEXT NOT NULL,
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    owned INTEGER NOT NULL,
    PRIMARY KEY (folder, path, doc_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS synced_documents_doc ON synced_documents(doc_id);
CREATE TABLE IF NOT EXISTS vector_files (
    kind TEXT PRIMARY KEY,
    generation INTEGER NOT NULL DEFAULT 0,
    saved_generation INTEGER,
    saved_count INTEGER,
    saved_bytes INTEGER,
    saved_crc32 INTEGER
);
CREATE VIEW IF NOT EXISTS entity_relations AS
    SELECT r.id AS relation_id, s.name AS source, t.name AS target, r.kind, r.keywords,
           r.weight, r.score
    FROM relations r JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id;
CREATE VIEW IF NOT EXISTS document_chunks AS
    SELECT d.source, c.ord AS chunk, c.text, c.n_tokens AS tokens, d.id AS doc_id, c.id AS chunk_id
    FROM chunks c JOIN documents d ON d.id = c.doc_id;
"""

GRAPH_TABLES_V1 = ("relation_chunks", "chunk_entities", "relations", "entities")
RELATION_INDEXES_V3 = ("relations_source", "relations_target")
INDEXES_V4 = ("relation_mentions_source", "relation_mentions_target", "relation_chunks_chunk")
TEXT_SHA_DIGITS = 16
