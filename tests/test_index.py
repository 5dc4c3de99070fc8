"""The index through the public API: insert, dedupe, delete, retrieve, stats, settings."""

from pathlib import Path

import pytest

from edge_rag import (
    Document,
    EdgeRAG,
    EmbedderMismatch,
    IndexCorrupt,
    NoSuchDocument,
    NotAnIndex,
    SchemaMismatch,
    Settings,
    SettingsError,
    UnknownMethod,
)

QUESTION = "What time does Li Hua check in with Adam about moving in?"


def test_retrieve_finds_the_evidence_conversation(lihua_index):
    with EdgeRAG.open(lihua_index, create=False) as rag:
        found = rag.retrieve(QUESTION, method="vector", top_k=3)
        planned = rag.retrieve(QUESTION, top_k=3)  # the default: the planner chooses
    assert planned.plan is not None and planned.method == planned.plan.method
    assert found.method == "vector" and len(found.chunks) == 3
    assert any(c.source.endswith("20260105_1400.txt") for c in found.chunks)
    scores = [c.score for c in found.chunks]
    assert scores == sorted(scores, reverse=True)
    assert all(c.doc_id and c.text and c.source for c in found.chunks)
    assert set(found.timings_ms) >= {"embed", "search"}


def test_insert_is_idempotent(rag, lihua_dir):
    first = rag.insert(lihua_dir / "20260105_1400.txt")
    again = rag.insert(lihua_dir / "20260105_1400.txt")
    assert len(first.added) == 1 and again.added == []
    assert again.duplicates == [(str(lihua_dir / "20260105_1400.txt"), first.added[0])]
    assert rag.stats().documents == 1


def test_insert_text_keeps_source_and_metadata(rag):
    report = rag.insert_text("Ada Lovelace wrote the first program.", source="notes/ada",
                             metadata={"year": 1843})
    [doc] = rag.documents()
    assert doc.id == report.added[0] and doc.source == "notes/ada" and doc.metadata == {"year": 1843}
    [chunk] = rag.retrieve("Who wrote the first program?", top_k=1).chunks
    assert chunk.source == "notes/ada" and "Lovelace" in chunk.text


def test_small_documents_embedded_ahead_get_the_vectors_they_get_alone(rag, engine):
    # Small documents are chunked and embedded on the workers a few ahead of the write; each
    # must be stored with the vectors embedding it on its own gives.
    from edge_rag.index.chunking import Chunker
    from edge_rag.index.writer import EMBED_GROUP
    from edge_rag.store.codec import encode_rows
    texts = [f"Note {n}: the keeper of lighthouse {n} feeds {n % 3 + 1} cats at dawn." for n in range(9)]
    texts.append(" ".join(f"Line {n} of the harbour log." for n in range(1200)))  # > 64 chunks: streamed
    texts.append(texts[0])  # a duplicate, reported as one
    rag.insert(*(Document.from_text(t, source=f"notes/{n}") for n, t in enumerate(texts)))
    stored = dict(engine.store.conn.execute("SELECT text, vector FROM chunks"))
    chunker = Chunker(engine.embedder.tokenizer, rag.settings.chunk_tokens, rag.settings.chunk_overlap)
    for text in texts[:-1]:
        chunks = [c.text for c in chunker.chunks(iter([text]))]
        groups = [chunks[n : n + EMBED_GROUP] for n in range(0, len(chunks), EMBED_GROUP)]
        embedded = [b for g in groups for b in encode_rows(engine.embedder.embed(g))]
        assert [stored[c] for c in chunks] == embedded
    assert rag.stats().documents == 10


def test_bad_documents_are_reported_and_the_rest_is_indexed(rag, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "good.txt").write_text("The lighthouse keeper feeds the cat at dawn.")
    (tmp_path / "docs" / "empty.txt").write_text("   \n")
    (tmp_path / "docs" / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    report = rag.insert(tmp_path / "docs", tmp_path / "missing.txt")
    assert len(report.added) == 1 and len(report.failed) == 3
    assert not report.ok
    assert rag.retrieve("Who feeds the cat?", top_k=1).chunks[0].text.startswith("The lighthouse")


def test_delete_removes_chunks_and_vectors(rag):
    keep = rag.insert_text("Bees make honey in the hive.", source="bees").added[0]
    gone = rag.insert_text("Volcanoes erupt molten lava.", source="lava").added[0]
    assert rag.delete(gone) == 1
    found = rag.retrieve("volcano lava eruption", top_k=5)
    assert [c.doc_id for c in found.chunks] == [keep]
    assert rag.stats().chunks == 1
    with pytest.raises(NoSuchDocument):
        rag.delete(gone)


def test_stats_counts_and_files(rag):
    rag.insert_text("One small document.", source="one")
    stats = rag.stats()
    assert (stats.documents, stats.chunks, stats.chunks_in_graph) == (1, 1, 1)
    assert stats.entities == stats.entity_names - stats.merges >= 1  # "document", by the fast rules
    assert "index.sqlite" in stats.files and "chunks.usearch" not in stats.files  # one vector copy
    assert stats.total_bytes == sum(stats.files.values()) > 0


def test_unknown_method_is_a_clear_error(rag):
    with pytest.raises(UnknownMethod, match="available: dual, local, none, ppr, titles, topology, vector"):
        rag.retrieve("anything", method="psychic")


def test_empty_index_retrieves_nothing(rag):
    assert rag.retrieve("anything").chunks == []


def test_other_embedder_is_refused(rag, engine):
    rag.insert_text("Some text.", source="x")
    with engine.store.write():
        engine.store.conn.execute("UPDATE manifest SET value = 'other-model' WHERE key = 'embedder_name'")
    with pytest.raises(EmbedderMismatch, match="other-model"):
        EdgeRAG.open(rag.directory)


def test_unknown_schema_version_is_refused(rag, engine):
    with engine.store.write():
        engine.store.conn.execute("UPDATE manifest SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(SchemaMismatch, match="999"):
        EdgeRAG.open(rag.directory)


def test_not_an_index(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotAnIndex, match="not empty"):
        EdgeRAG.open(tmp_path)
    with pytest.raises(NotAnIndex, match="no index.sqlite"):
        EdgeRAG.open(tmp_path / "absent", create=False)
    with pytest.raises(NotAnIndex, match="is a file"):
        EdgeRAG.open(tmp_path / "notes.txt")


def test_corrupt_sqlite_file(tmp_path):
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / "index.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorrupt, match="not a readable edge-rag index"):
        EdgeRAG.open(folder)


def test_index_settings_are_kept_from_creation(tmp_path, model_folder):
    with EdgeRAG.open(tmp_path / "i", chunk_tokens=100, chunk_overlap=20, progress=False):
        pass
    with EdgeRAG.open(tmp_path / "i", chunk_tokens=200) as rag:
        assert rag.settings.chunk_tokens == 100


def test_settings_validation(tmp_path):
    with pytest.raises(SettingsError, match="unknown setting"):
        Settings.load(None, chunk_size=3)
    with pytest.raises(SettingsError, match="vector_dtype"):
        Settings(vector_dtype="f8")
    with pytest.raises(SettingsError, match="must be an integer"):
        Settings.load(None, top_k="five")
    with pytest.raises(SettingsError, match="unknown device profile"):
        Settings.load("no-such-board")
    profile = tmp_path / "board.toml"
    profile.write_text("[retrieval]\ntop_k = 7\n")
    assert Settings.load(profile).top_k == 7 and Settings.load(profile).profile == "board"
    profile.write_text("[retrieval]\ntop_kk = 7\n")
    with pytest.raises(SettingsError, match="top_kk"):
        Settings.load(profile)


def test_answer_rules_off_is_a_list_of_known_rules(tmp_path):
    profile = tmp_path / "board.toml"
    profile.write_text('[answer]\nanswer_rules_off = ["who", "time"]\n')
    assert Settings.load(profile).answer_rules_off == ("who", "time")
    assert Settings.load(None, answer_rules_off="when, open").answer_rules_off == ("when", "open")
    with pytest.raises(SettingsError, match="unknown rule.*'whom'"):
        Settings.load(None, answer_rules_off=["whom"])
    with pytest.raises(SettingsError, match="list of names"):
        Settings.load(None, answer_rules_off=3)


def test_dev_profile_loads():
    assert Settings.load("dev").profile == "dev"


def test_sql_has_no_string_formatting_of_values(rag):
    rag.insert_text("Robert'); DROP TABLE chunks;-- was here.", source="'; DROP TABLE documents;--")
    assert rag.stats().documents == 1
    assert "DROP" in rag.documents()[0].source


def test_blank_text_is_reported_not_raised(rag):
    report = rag.insert_text("  \n ", source="blank")
    assert report.failed == [("blank", "blank: document is empty or whitespace only")]
    assert rag.stats().documents == 0


@pytest.mark.parametrize("path", sorted((Path(__file__).parent.parent / "device_profiles").glob("*.toml")),
                         ids=lambda p: p.stem)
def test_every_shipped_profile_loads(path):
    settings = Settings.load(path.stem)
    assert settings.profile == path.stem and settings.slm.endswith(("-int8", "-q4", "-q8", "-q4e8"))
