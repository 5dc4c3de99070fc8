"""Issue 16: vectors stored once as i8 codes, version 2 files migrated, compaction, bytes per table."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from edge_rag import EdgeRAG
from edge_rag.cli import main
from edge_rag.engine import Engine
from edge_rag.index.graph_builder import relation_text
from edge_rag.store import codec
from edge_rag.store.schema import INDEXES_V4, SCHEMA_VERSION, TEXT_SHA_DIGITS

from .conftest import open_both

NOTES = {
    "otters": "Otters hold hands while they sleep so that they do not drift apart.",
    "glaciers": "Glaciers carve deep valleys over millennia as they grind downhill.",
    "bees": "Honey bees dance in a figure of eight to point the way to flowers.",
}


def _index(path: Path, **overrides) -> Path:
    with EdgeRAG.open(path, progress=False, **overrides) as rag:
        for source, text in NOTES.items():
            rag.insert_text(text, source=source)
    return path


def _rewrite_vectors(db: sqlite3.Connection, convert) -> None:
    for table in ("chunks", "entity_keys", "relations"):
        rows = db.execute(f"SELECT id, vector FROM {table} WHERE vector IS NOT NULL").fetchall()
        db.executemany(f"UPDATE {table} SET vector = ? WHERE id = ?", [(convert(b), i) for i, b in rows])


def test_codes_keep_cosine_and_are_stable():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(64, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    blobs = codec.encode_rows(vectors)
    assert {len(b) for b in blobs} == {193} and all(codec.is_packed(b) for b in blobs)  # 4 bits a dimension
    back = codec.decode_rows(blobs)
    assert np.sum(back * vectors, axis=1).min() > 0.985
    assert codec.encode_rows(back) == blobs  # decoding and encoding again changes nothing
    odd = codec.encode_rows(vectors[:, :383])  # an odd dimension is padded, and read back as it was
    assert codec.code_rows(odd).shape == (64, 383) and codec.code_of(odd[0]).shape == (383,)
    old = [codec.codes(v).tobytes() for v in vectors]  # a schema 4 blob: 8-bit codes
    assert np.allclose(codec.decode_rows(old), codec.unit(codec.codes(vectors)))


def test_sqlite_holds_4bit_levels_and_the_i8_file_holds_the_same(tmp_path, model_folder):
    index = _index(tmp_path / "index")
    with sqlite3.connect(index / "index.sqlite") as db:
        rows = db.execute("SELECT id, vector FROM chunks ORDER BY id").fetchall()
    assert {len(blob) for _, blob in rows} == {193}
    assert not list(index.glob("*.usearch"))  # below vector_file_min: SQLite's codes only
    with open_both(index, create=False) as (rag, engine):
        exact = engine.vectors().exact
        assert exact is not None and exact.rows.dtype == np.int8
        held = dict(zip(exact.keys.tolist(), exact.rows))
        for key, blob in rows:
            assert np.array_equal(held[key], codec.code_of(blob))
        decoded = engine.store.walk.chunk_vectors([key for key, _ in rows] + [10**9])  # ppr's read, one pass
        assert sorted(decoded) == [key for key, _ in rows]
        assert all(np.allclose(decoded[key], codec.decode(blob), atol=1e-6) for key, blob in rows)
        for source, text in NOTES.items():
            top = rag.retrieve(text, top_k=1).chunks[0]
            assert top.source == source and top.score > 0.95
    with open_both(index, create=False, vector_file_min=0) as (rag, engine):  # an HNSW file from here on
        stored = engine.vectors()
        assert stored.rebuilt and stored.index is not None and "i8" in str(stored.index.dtype).lower()
        for key, blob in rows:
            assert np.array_equal(stored.index.get(key), codec.code_of(blob))
        for source, text in NOTES.items():
            top = rag.retrieve(text, top_k=1).chunks[0]
            assert top.source == source and top.score > 0.95


def test_a_version_2_index_is_migrated_not_misread(tmp_path, model_folder):
    index = _index(tmp_path / "index", vector_dtype="f16")
    with sqlite3.connect(index / "index.sqlite") as db:  # what version 2 wrote: f16 blobs
        _rewrite_vectors(db, lambda b: codec.decode(b).astype(np.float16).tobytes())
        db.execute("UPDATE manifest SET value = '2' WHERE key = 'schema_version'")
        before = dict(db.execute("SELECT id, vector FROM chunks").fetchall())
    with EdgeRAG.open(index, create=False) as rag:
        stats = rag.stats()
        assert stats.schema_version == str(SCHEMA_VERSION)
        for source, text in NOTES.items():
            top = rag.retrieve(text, top_k=1).chunks[0]
            assert top.source == source and top.score > 0.95
    with sqlite3.connect(index / "index.sqlite") as db:
        after = dict(db.execute("SELECT id, vector FROM chunks").fetchall())
        assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    for key, blob in before.items():
        assert len(after[key]) == 193
        assert np.array_equal(after[key], codec.encode(np.frombuffer(blob, dtype=np.float16)))


def test_compact_after_deletes_returns_the_space(tmp_path, model_folder, capsys):
    index = tmp_path / "index"
    filler = " ".join(f"Paragraph {i} is about river stones, moss and the weather in May." for i in range(60))
    with open_both(index, progress=False) as (rag, engine):
        for source, text in NOTES.items():
            rag.insert_text(text, source=source)
        ids = [rag.insert_text(f"{filler} Part {n}.", source=f"bulk-{n}").added[0] for n in range(6)]
        for doc_id in ids:
            rag.delete(doc_id)
        assert engine.store.free_share() > 0.1
        before, after = rag.compact()
        assert after < before and engine.store.free_share() == 0
        tables = rag.stats().tables
        assert "(free)" not in tables and tables["chunks"] > 0
        assert sum(tables.values()) == (index / "index.sqlite").stat().st_size
        # A bulk insert and stats read unmapped; readers keep the configured memory map.
        mapped = engine.store.conn.execute("PRAGMA mmap_size").fetchone()[0]
        assert mapped == rag.settings.sqlite_mmap_mb << 20
    with open_both(index, create=False) as (rag, engine):
        assert not engine.vectors().rebuilt and len(engine.vectors()) == len(NOTES)
        assert rag.retrieve(NOTES["bees"], top_k=1).chunks[0].source == "bees"
    assert main(["compact", "--index", str(index)]) == 0
    assert capsys.readouterr().out.startswith("compacted: ")
    assert main(["stats", "--index", str(index)]) == 0
    lines = {k.strip(): v for k, v in (line.split(": ", 1) for line in capsys.readouterr().out.splitlines())}
    assert lines["table chunks"].strip().endswith(" bytes")


CHAT = ("Time: 20260408_08:38\nAlice: I am Alice from Hailey's Bakery. Your bread from Hailey's Bakery is "
        "ready, LiHua.\nLiHua: Thanks Alice! I will ask Adam to pick it up at the Bakery.\n"
        "Adam: Sure, I will go to Hailey's Bakery after the Gym.\n")


def _chat_index(path: Path) -> Path:
    with EdgeRAG.open(path, progress=False) as rag:
        rag.insert_text(CHAT, source="chat")
    return path


def test_a_version_3_index_is_migrated_to_the_current_version(tmp_path, model_folder):
    index = _chat_index(tmp_path / "index")
    with sqlite3.connect(index / "index.sqlite") as db:  # what version 3 wrote
        db.execute("DROP INDEX relations_from")
        db.execute("DROP INDEX relations_to")
        db.execute("CREATE INDEX relations_source ON relations(source_id, kind)")
        db.execute("CREATE INDEX relations_target ON relations(target_id, kind)")
        db.execute("UPDATE entities SET description = 'stored ' || name")
        vector = db.execute("SELECT vector FROM chunks").fetchone()[0]
        linked = db.execute("UPDATE relations SET vector = ?, text_sha = 'x', description = 'd' "
                            "WHERE keywords = 'mentions'", (vector,)).rowcount
        db.execute("UPDATE manifest SET value = '3' WHERE key = 'schema_version'")
    assert linked > 0
    with open_both(index, create=False) as (rag, engine):
        assert rag.stats().schema_version == str(SCHEMA_VERSION)
        nodes = engine.store.graph.nodes()
        assert any(n.description for n in nodes)
        assert not any(n.description.startswith("stored ") for n in nodes)
        assert rag.retrieve("Who picks up the bread?", method="dual", top_k=1).chunks[0].source == "chat"
        with sqlite3.connect(index / "index.sqlite") as db:
            embedded = db.execute("SELECT count(*) FROM relations WHERE vector IS NOT NULL").fetchone()[0]
            assert len(engine.vectors("relation")) == embedded
            assert db.execute("SELECT count(*) FROM relations WHERE keywords = 'mentions' "
                              "AND vector IS NOT NULL").fetchone()[0] == 0
            assert db.execute("SELECT count(*) FROM entities WHERE description != ''").fetchone()[0] == 0
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")}
    assert {"relations_from", "relations_to"} <= names
    assert not names & {"relations_source", "relations_target"}


def test_a_version_4_index_is_migrated_and_finds_the_same_relation_mentions(tmp_path, model_folder):
    index = _chat_index(tmp_path / "index")
    with sqlite3.connect(index / "index.sqlite") as db:  # what version 4 wrote
        db.execute("CREATE INDEX relation_mentions_source ON relation_mentions(source_key)")
        db.execute("CREATE INDEX relation_mentions_target ON relation_mentions(target_key)")
        db.execute("CREATE INDEX relation_chunks_chunk ON relation_chunks(chunk_id, relation_id)")
        db.execute("UPDATE relations SET description = 'as embedded', text_sha = text_sha || "
                   "'0123456789abcdef' WHERE vector IS NOT NULL")
        _rewrite_vectors(db, lambda b: codec.codes(codec.decode(b)).tobytes())  # 8-bit codes
        db.execute("UPDATE manifest SET value = '4' WHERE key = 'schema_version'")
        keys = [r[0] for r in db.execute("SELECT key FROM entity_mentions")]
        rows = db.execute("SELECT chunk_id, source_key, target_key FROM relation_mentions").fetchall()
    assert rows
    with open_both(index, create=False) as (rag, engine):
        assert rag.stats().schema_version == str(SCHEMA_VERSION)
        for key in keys:  # through entity_mentions, the same rows the endpoint indexes found
            found = {(r.chunk_id, r.source_key, r.target_key)
                     for r in engine.store.graph.relation_mentions([key])}
            assert found == {r for r in rows if key in r[1:]}
        everything = engine.store.graph.relation_mentions(keys)
        assert [(r.chunk_id, r.source_key, r.target_key) for r in everything] == sorted(rows)
        assert rag.retrieve("Who picks up the bread?", method="dual", top_k=1).chunks[0].source == "chat"
        # No description is stored beside a vector; the derived one is the text that was embedded.
        names_of = engine.store.graph.entity_names(n.id for n in engine.store.graph.nodes())
        shas = dict(engine.store.conn.execute("SELECT id, text_sha FROM relations WHERE vector IS NOT NULL"))
        derived = {r.id: r for r in engine.store.graph.all_relations() if r.id in shas}
        assert derived and all(r.description for r in derived.values())
        for r in derived.values():
            text = relation_text(names_of[r.source_id], names_of[r.target_id], r.keywords, r.description)
            assert hashlib.sha256(text.encode()).hexdigest()[:TEXT_SHA_DIGITS] == shas[r.id]
    with sqlite3.connect(index / "index.sqlite") as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")}
        assert db.execute("SELECT value FROM manifest WHERE key = 'migrated_from'").fetchone()[0] == "4"
        assert db.execute("SELECT count(*) FROM relations WHERE vector IS NOT NULL AND description != ''"
                          ).fetchone()[0] == 0
        for table in ("chunks", "entity_keys", "relations"):
            blobs = [r[0] for r in db.execute(f"SELECT vector FROM {table} WHERE vector IS NOT NULL")]
            assert blobs and all(len(b) == 193 and codec.is_packed(b) for b in blobs)
    assert not names & set(INDEXES_V4)


def test_exact_search_of_many_queries_in_slices_equals_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from edge_rag.store import vectors

    rows = np.random.default_rng(0).integers(-127, 128, (300, 16), dtype=np.int8)
    exact = vectors.ExactVectors(16, np.arange(300, dtype=np.uint64) + 7, rows)
    whole = exact.search(rows[:25], 5)
    monkeypatch.setattr(vectors, "EXACT_CELLS", 300 * 4)  # slices of 4 queries, the last of 1
    sliced = exact.search(rows[:25], 5)
    assert sliced[0].shape == (25, 5) and (sliced[0] == whole[0]).all()
    assert np.allclose(sliced[1], whole[1]) and (whole[0][:, 0] == np.arange(25) + 7).all()


def test_deferred_rows_equal_rows_read_at_open(rag: EdgeRAG, engine: Engine) -> None:
    """An exact kind opens with its keys and reads its rows at the first search. Rows SQLite
    gained since (added here too) come once, removed ones not at all: the same matrix an open
    after the writes reads; counting needs no rows."""
    from edge_rag.store.vectors import ExactVectors

    for n in range(4):
        rag.insert_text(f"Note {n}: the {['red', 'blue', 'green', 'grey'][n]} boat is moored at pier {n}.",
                        source=f"n{n}")
    store, dim, dtype = engine.store, engine.embedder.dim, rag.settings.vector_dtype
    deferred = ExactVectors.deferred(store, "chunk", dim, dtype)
    assert deferred._reader is not None and len(deferred) == 4
    rag.insert_text("Note 4: the white boat left at dawn.", source="n4")
    added = ExactVectors.load(store, "chunk", dim, dtype)
    new = np.setdiff1d(added.keys, deferred._keys)
    deferred.add(new, added.rows[np.isin(added.keys, new)])
    gone = int(added.keys[0])
    deferred.remove(np.array([gone], dtype=np.uint64))
    assert len(deferred) == 4 and deferred._reader is not None  # counted without the rows
    keep = added.keys != gone
    assert sorted(deferred.keys.tolist()) == sorted(added.keys[keep].tolist())
    order = np.argsort(deferred.keys)
    assert np.array_equal(deferred.rows[order], added.rows[keep][np.argsort(added.keys[keep])])
    query = added.rows[1].astype(np.float32)
    assert deferred.search(query, 5)[0].tolist() == ExactVectors(dim, added.keys[keep], added.rows[keep]
                                                                 ).search(query, 5)[0].tolist()
