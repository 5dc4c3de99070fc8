"""Issue 46: what ``ppr`` needs is written once by the build and memory-mapped by queries, giving
the same walk as deriving it in memory; repeated chunk vectors do not hide other documents in
an HNSW file."""

from __future__ import annotations

import numpy as np
import pytest

from edge_rag import EdgeRAG
from edge_rag.engine import Engine
from edge_rag.retrieve import GraphReader
from edge_rag.retrieve.ppr import PPRRetriever, WalkGraph
from edge_rag.retrieve.walk_cache import generations, open_walk, store_walk
from edge_rag.store import VectorIndex, mapped_files
from edge_rag.store.mapped_files import StringTable

from .conftest import open_both

PASSAGES = {"Pearl Lust": "Pearl Lust\nPearl Lust is a 1936 film directed by Vera Smith.",
            "Vera Smith": "Vera Smith\nVera Smith was a director; her father was Tom Smith.",
            "Harbour Lights": "Harbour Lights\nHarbour Lights is a 1932 film by Vera Smith.",
            "Ships": "Ships\nA harbour is where ships dock."}
QUESTIONS = ["Who is the father of the director of film Pearl Lust?", "Where do ships dock?",
             "Which film came out first, Pearl Lust or Harbour Lights?", "What is a harbour?"]


def _same_walk(stored: WalkGraph, derived: WalkGraph) -> None:
    names = ("entity_ids", "chunk_ids", "indptr", "indices", "data", "width", "dangling", "entity_chunks")
    for name in names:
        assert np.array_equal(getattr(stored, name), getattr(derived, name)), name
    assert stored.lexical is not None and derived.lexical is not None
    for question in QUESTIONS:
        assert np.array_equal(stored.lexical.scores(question), derived.lexical.scores(question))
        if derived.titles is not None:
            assert stored.titles is not None
            assert stored.titles.find(question) == derived.titles.find(question)


def test_the_build_writes_the_walk_and_queries_map_the_same_graph(rag: EdgeRAG, engine: Engine) -> None:
    for title, text in PASSAGES.items():
        rag.insert_text(text, source=title, metadata={"title": title})
    stored = open_walk(rag.directory, engine.store)
    assert stored is not None and isinstance(stored.indptr, np.memmap)
    derived = WalkGraph.from_store(engine.store)
    assert derived.titles is not None and len(derived.titles) == len(PASSAGES)
    _same_walk(stored, derived)
    assert engine.walk.get().indptr is not None and isinstance(engine.walk.get().indptr, np.memmap)
    graph = GraphReader(_view(engine), lambda: engine.vectors("entity"), lambda: engine.vectors("relation"))
    for question in QUESTIONS:
        by_file = PPRRetriever(graph, lambda: stored).retrieve(question, 3)
        in_memory = PPRRetriever(graph, lambda: derived).retrieve(question, 3)
        pairs = [(c.chunk_id, c.score) for c in in_memory.chunks]
        assert [(c.chunk_id, c.score) for c in by_file.chunks] == pairs


def test_lihua_conversations_walk_the_same_from_the_files(lihua_index) -> None:
    with open_both(lihua_index, create=False) as (rag, engine):
        stored = open_walk(rag.directory, engine.store)
        assert stored is not None and stored.titles is not None  # files are titled by the reader
        _same_walk(stored, WalkGraph.from_store(engine.store))


def test_stale_files_are_not_used_and_every_write_renews_them(rag: EdgeRAG, engine: Engine) -> None:
    rag.insert_text("LiHua: Adam, the plumber comes at 5 PM on Friday.", source="chat-1")
    doc = rag.insert_text("AdamSmith: Thanks Li Hua, I will be home by then.", source="chat-2").added[0]
    assert mapped_files.current_stamp(rag.directory)["generations"] == generations(engine.store)
    rag.delete(doc)
    assert mapped_files.current_stamp(rag.directory)["generations"] == generations(engine.store)
    assert len([p for p in (rag.directory / mapped_files.FOLDER).iterdir() if p.is_dir()]) == 1
    with engine.store.write():
        engine.store.bump_generation("relation")  # as a writer without the walk step would leave it
    assert open_walk(rag.directory, engine.store) is None
    assert engine.walk.get().size == WalkGraph.from_store(engine.store).size  # derived in memory instead
    assert store_walk(rag.directory, engine.store) and open_walk(rag.directory, engine.store) is not None
    assert not store_walk(rag.directory, engine.store)  # current: nothing to write


def test_a_write_reads_only_the_new_chunks_texts_while_the_titles_stay(rag: EdgeRAG, engine: Engine,
                                                                       monkeypatch) -> None:
    """The walk files keep each chunk's word counts and title links: a write that adds no title
    reads the texts of its new chunks only, and gives the walk a fresh derivation gives."""
    from edge_rag.store.graph_arrays import WalkTables

    read_after: list[int] = []
    chunk_texts = WalkTables.chunk_texts

    def recorded(self, batch: int = 2048, after: int = -1):
        read_after.append(after)
        return chunk_texts(self, batch, after)

    monkeypatch.setattr(WalkTables, "chunk_texts", recorded)
    for title, text in PASSAGES.items():
        rag.insert_text(text, source=title, metadata={"title": title})
    chats = ["LiHua: I watched Pearl Lust by Vera Smith yesterday.", "AdamSmith: Ships dock at the harbour.",
             "LiHua: Harbour Lights is on tonight, Adam."]
    added = []
    for n, chat in enumerate(chats):
        read_after.clear()
        added += rag.insert_text(chat, source=f"chat-{n}").added
        assert read_after and read_after[0] > 0  # only chunks newer than the stored walk's
        _same_walk(open_walk(rag.directory, engine.store), WalkGraph.from_store(engine.store))
    rag.delete(added[1])
    _same_walk(open_walk(rag.directory, engine.store), WalkGraph.from_store(engine.store))
    rag.delete(rag.documents()[0].id)  # a titled one: the titles change, every text is read
    assert read_after[-1] == -1
    _same_walk(open_walk(rag.directory, engine.store), WalkGraph.from_store(engine.store))


def test_a_damaged_stored_reading_is_derived_again(rag: EdgeRAG, engine: Engine) -> None:
    rag.insert_text("LiHua: Adam, the plumber comes at 5 PM on Friday.", source="chat-1")
    root = rag.directory / mapped_files.FOLDER
    folder = root / (root / mapped_files.CURRENT).read_text()
    np.save(folder / "lex_tf.npy", np.zeros(3, dtype=np.uint8))  # no longer one count per posting
    assert rag.insert_text("AdamSmith: Thanks Li Hua, I will be home by then.", source="chat-2").ok
    _same_walk(open_walk(rag.directory, engine.store), WalkGraph.from_store(engine.store))


def test_the_ablation_without_weights_derives_in_memory(rag: EdgeRAG, engine: Engine) -> None:
    rag.insert_text("LiHua: Adam, the plumber comes at 5 PM on Friday.", source="chat-1")
    assert open_walk(rag.directory, engine.store, use_weights=False) is None


def test_string_tables_find_every_key_and_nothing_else() -> None:
    items = {"harbour": 3, "ships": 9, "ämter": 1, "a b c": 4, "": 7}
    arrays = StringTable.arrays(items)
    table = StringTable(arrays["blob"], arrays["offsets"], arrays["values"], arrays["hashes"])
    assert {k: table.get(k) for k in items} == items
    assert table.get("harb") is None and table.get("zzz") is None and len(table) == len(items)


def _view(engine: Engine):
    from edge_rag.retrieve.base import IndexView

    return IndexView(engine.settings, engine.store, engine.embedder, engine.vectors(),
                     lambda: engine.vectors("entity"), lambda: engine.vectors("relation"),
                     lambda: engine.slm, engine.names.get, engine.walk.get)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


# 20,000 copies of one vector among 2,000 others: USearch's HNSW (without twins) found 46 % of
# the others first (reproduced on usearch 2.x while writing this test).
SAME, OTHERS = 20_000, 2_000


@pytest.fixture()
def repeated(rag: EdgeRAG, engine: Engine) -> tuple[VectorIndex, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(46)
    others = _unit(rng.standard_normal((OTHERS, 384)))
    same = _unit(rng.standard_normal((1, 384)))
    rows = np.concatenate([np.repeat(same, SAME, axis=0), others])
    order = rng.permutation(len(rows))
    vectors = VectorIndex(rag.directory, "chunk", 384, "i8", engine.store, file_min=0).open(writable=True)
    for part in np.array_split(order, 8):  # added in batches, as a build does
        vectors.add([int(k) + 1 for k in part], rows[part])
    return vectors, others, np.arange(SAME + 1, SAME + OTHERS + 1)


def test_many_identical_vectors_leave_every_other_one_found_first(repeated) -> None:
    vectors, others, keys = repeated
    assert vectors.has_file and len(vectors) == SAME + OTHERS and len(vectors.index) == OTHERS + 1
    found = vectors.search_many(others, 10)
    first = sum(int(f[0][0]) == want for f, want in zip(found, keys.tolist()))
    # HNSW is approximate even without copies (its graph is built on several threads): these
    # 2,000 random vectors alone, added in the same 8 batches, are found first 1,995-2,000 times
    # (usearch, i8 and f32, 8 builds); with the 20,000 copies as twins 1,994-1,998 (4 builds);
    # with the copies in the graph it was 926. A miss is one HNSW misses outright (not in the top 10).
    in_top = sum(want in f[0].tolist() for f, want in zip(found, keys.tolist()))
    assert first >= 0.99 * OTHERS and in_top >= 0.99 * OTHERS
    near, sims = vectors.search(vectors_row(vectors, 1), 10)
    assert len(near) == 10 and set(near.tolist()) <= set(range(1, SAME + 1)) and np.allclose(sims, sims[0])


def vectors_row(vectors: VectorIndex, key: int) -> np.ndarray:
    owner = vectors.twins.rep.get(key, key)
    return np.asarray(vectors.index.get(owner), dtype=np.float32)


def test_twins_survive_a_save_a_reopen_and_their_representatives_removal(repeated, rag: EdgeRAG,
                                                                         engine: Engine) -> None:
    vectors, others, keys = repeated
    vectors.save(int(engine.store.vector_state("chunk")["generation"]))
    assert vectors.twins_path.is_file()
    owner, twins = next(iter(vectors.twins.of)), len(vectors.twins)
    reopened = VectorIndex(rag.directory, "chunk", 384, "i8", engine.store, file_min=0).open(writable=True)
    assert not reopened.rebuilt and len(reopened.twins) == twins and len(reopened) == SAME + OTHERS
    reopened.remove([owner, int(keys[0])])
    assert len(reopened) == SAME + OTHERS - 2 and owner not in reopened.twins.of
    found, _ = reopened.search(vectors_row(reopened, 2 if owner != 2 else 3), 5)
    assert owner not in found.tolist() and len(found) == 5
    found = reopened.search_many(others[1:], 10)  # (HNSW after removals: allow its approximation)
    assert sum(want in f[0].tolist() for f, want in zip(found, keys[1:].tolist())) >= 0.99 * (OTHERS - 1)


def test_stored_names_match_as_the_names_in_memory_do(lihua_index, monkeypatch) -> None:
    from edge_rag import lexicon
    from edge_rag.retrieve import walk_cache

    monkeypatch.setattr(walk_cache, "NAME_BLOCK", 7)  # many blocks: the first best name still wins
    with open_both(lihua_index, create=False) as (rag, engine):
        stored = walk_cache.open_names(rag.directory, engine.store)
        assert isinstance(engine.names.get(), walk_cache.StoredNames) and stored is not None
        memory = lexicon.NameMatcher(engine.store.graph.spellings())
        assert list(stored.names) == memory.names
        for question in ["When does Li Hua meet Adam Smith?", "Did Wolfgang call LiHua about the rent?",
                         "What did Jenifer say on 20260105?", "Who is Yurko?", "Nothing to see"]:
            assert stored.find(question) == memory.find(question)


def test_the_walk_over_reached_nodes_ranks_as_the_scan_of_every_node(lihua_index, monkeypatch) -> None:
    from edge_rag.retrieve import ppr

    with open_both(lihua_index, create=False) as (rag, engine):
        walk = engine.walk.get()
    rng = np.random.default_rng(46)
    for _ in range(20):
        seeds = np.zeros(walk.size)
        seeds[rng.choice(walk.size, size=int(rng.integers(1, 8)), replace=False)] = rng.random(1)[0] + 0.1
        seeds /= seeds.sum()
        dense = walk.pagerank(seeds)  # the index is far below LOCAL_FROM nodes
        monkeypatch.setattr(ppr, "LOCAL_FROM", 0)
        for push_dense in (0.0, 0.25, 1e9):  # sorted distinct targets, and a bincount over every node
            monkeypatch.setattr(ppr, "PUSH_DENSE", push_dense)
            assert np.array_equal(walk.pagerank(seeds), dense)
        monkeypatch.setattr(ppr, "LOCAL_FROM", 60_000)
