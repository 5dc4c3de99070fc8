"""The ``ppr`` retriever: the walk equals the exact PageRank solution on a hand-built graph, seeds
are weighted by specificity, the matrix is cached per index generation, and the method runs end
to end on real LiHua-World conversations."""

from __future__ import annotations

import numpy as np
import pytest

from edge_rag import EdgeRAG
from edge_rag.engine import Engine
from edge_rag.questions import names_a_title
from edge_rag.retrieve import GraphReader, make_retriever
from edge_rag.retrieve.base import IndexView
from edge_rag.retrieve.ppr import PPRRetriever, WalkGraph, longest_matches, restart
from edge_rag.store.graph_arrays import GraphArrays

from .conftest import open_both

# Entities 1..4; chunks 10, 11 (document 0), 12 (document 1).
ARRAYS = GraphArrays(
    entity_ids=np.array([1, 2, 3, 4]), chunk_ids=np.array([10, 11, 12]),
    chunk_doc=np.array([0, 0, 1]), chunk_ord=np.array([0, 1, 0]),
    relation_source=np.array([1, 2, 1]), relation_target=np.array([2, 3, 4]),
    relation_value=np.array([0.8, 0.5, 0.9], dtype=np.float32),
    relation_similar=np.array([False, False, True]),
    link_chunk=np.array([10, 10, 11, 12, 12]), link_entity=np.array([1, 2, 2, 3, 4]))


def _dense_transition(use_weights: bool) -> np.ndarray:
    # Nodes: entities 1..4 at 0..3, chunks 10, 11, 12 at 4, 5, 6; next-chunk link 10–11 weighs 1.
    w = np.zeros((7, 7))
    for a, b, value in [(0, 1, 0.8), (1, 2, 0.5), (0, 3, 0.9)]:
        w[a, b] = w[b, a] = value if use_weights else 1.0
    for a, b in [(0, 4), (1, 4), (1, 5), (2, 6), (3, 6), (4, 5)]:
        w[a, b] = w[b, a] = 1.0
    return w / w.sum(axis=0, keepdims=True)


@pytest.mark.parametrize("use_weights", [True, False])
def test_power_iteration_matches_the_exact_solution(use_weights: bool) -> None:
    walk = WalkGraph.build(ARRAYS, use_weights)
    seeds = np.zeros(walk.size, dtype=np.float32)
    seeds[walk.entity_nodes(np.array([1, 3]))] = [0.75, 0.25]
    found = walk.pagerank(seeds, damping=0.5, tolerance=1e-9)
    exact = 0.5 * np.linalg.solve(np.eye(7) - 0.5 * _dense_transition(use_weights), seeds)
    assert found == pytest.approx(exact, abs=1e-5)
    assert found.sum() == pytest.approx(1.0, abs=1e-5)


def test_node_positions_and_specificity() -> None:
    walk = WalkGraph.build(ARRAYS)
    assert walk.entity_nodes(np.array([3, 9])).tolist() == [2, -1]
    assert walk.chunk_nodes(np.array([12, 99])).tolist() == [6, -1]
    assert walk.entity_chunks.tolist() == [1, 2, 1, 1]  # entity 2 is mentioned by chunks 10 and 11


def test_restart_splits_mass_between_entities_and_nearest_chunks() -> None:
    walk = WalkGraph.build(ARRAYS)
    seeds = restart(walk, {1: 1.0, 2: 0.5}, {10: 0.6, 12: 0.2})
    assert seeds.sum() == pytest.approx(1.0)
    entity_mass = seeds[walk.entity_nodes(np.array([1, 2]))]
    assert entity_mass[0] == pytest.approx(2 * entity_mass[1])
    chunk_mass = seeds[walk.chunk_nodes(np.array([10, 12]))]
    assert chunk_mass[0] == pytest.approx(3 * chunk_mass[1])
    only_chunks = restart(walk, {}, {10: 0.6, 12: 0.2})
    assert only_chunks[walk.chunk_nodes(np.array([10, 12]))].sum() == pytest.approx(1.0)


def test_titles_the_question_names_take_their_share_of_the_named_mass() -> None:
    from edge_rag.retrieve.ppr import CHUNK_SEED_SHARE, TITLE_SEED_SHARE

    walk = WalkGraph.build(ARRAYS)
    seeds = restart(walk, {1: 1.0}, {10: 0.5}, [12])
    named = 1.0 - CHUNK_SEED_SHARE
    assert seeds[walk.chunk_nodes(np.array([12]))[0]] == pytest.approx(named * TITLE_SEED_SHARE)
    assert seeds[walk.entity_nodes(np.array([1]))[0]] == pytest.approx(named * (1 - TITLE_SEED_SHARE))
    assert restart(walk, {}, {}, [12])[walk.chunk_nodes(np.array([12]))[0]] == pytest.approx(1.0)


def test_an_empty_graph_walks_to_nothing() -> None:
    empty = np.array([], dtype=np.int64)
    arrays = GraphArrays(empty, empty, empty, empty, empty, empty, np.array([], dtype=np.float32),
                         np.array([], dtype=bool), empty, empty)
    walk = WalkGraph.build(arrays)
    assert walk.size == 0 and walk.pagerank(np.zeros(0, dtype=np.float32)).size == 0


def test_seeds_weigh_specific_entities_more(rag: EdgeRAG, engine: Engine) -> None:
    for text in ("AnaLee: I bake bread with BoKim.", "AnaLee: I run at dawn.", "AnaLee: I paint boats."):
        rag.insert_text(text, source=text)
    retriever = make_retriever("ppr", _view(engine), engine.walk.get)
    named = engine.store.graph.entity_of_keys(["analee", "bokim"])
    seeds = retriever.seed_entities(engine.walk.get(), list(named.values()), np.zeros((0, 384)))
    assert seeds[named["bokim"]] == pytest.approx(3 ** 0.5 * seeds[named["analee"]])  # 3 chunks vs 1


def test_a_seed_is_no_rarer_than_its_word_in_the_text(rag: EdgeRAG, engine: Engine) -> None:
    for text in ("AnaLee: I bake bread with BoKim.", "AnaLee: I run at dawn.", "AnaLee: I paint boats."):
        rag.insert_text(text, source=text)
    retriever = make_retriever("ppr", _view(engine), engine.walk.get)
    bokim = engine.store.graph.entity_of_keys(["bokim"])["bokim"]
    # As a name the question spells out BoKim's one chunk counts; as an n-gram seed, a word in
    # three chunks weighs as an entity in three does.
    seeds = retriever.seed_entities(engine.walk.get(), [bokim], np.zeros((0, 384)), {bokim: 3})
    assert seeds[bokim] == pytest.approx(1 / 3 ** 0.5)
    words = engine.walk.get().lexical
    assert words is not None and words.spread("AnaLee") == 3 and words.spread("bread") == 1
    assert words.spread("bread zeppelin") == 0 and words.spread("the") == 0


def test_a_name_inside_a_longer_matched_name_seeds_nothing() -> None:
    matched = {"li hua": 1, "li": 2, "hua": 3, "hong kong": 4, "kong": 5, "lihua": 6, "ali": 7}
    assert longest_matches(matched) == {"li hua": 1, "hong kong": 4, "lihua": 6, "ali": 7}


def test_the_walk_matrix_is_cached_until_the_index_changes(tmp_path, model_folder) -> None:
    with open_both(tmp_path / "index", progress=False) as (rag, engine):
        rag.insert_text("Time: 20260101_10:00\nLiHua: I met MarcoPolo at the harbour.", source="one")
        first = engine.walk.get()
        assert engine.walk.get() is first
        rag.insert_text("Time: 20260102_10:00\nLiHua: ZoeQuinn brought the cake.", source="two")
        second = engine.walk.get()
        assert second is not first and len(second.chunk_ids) == len(first.chunk_ids) + 1


@pytest.mark.parametrize("use_weights", [True, False])
def test_ppr_retrieves_ranked_chunks_from_named_entities(lihua_index, use_weights: bool) -> None:
    with EdgeRAG.open(lihua_index, create=False, use_weights=use_weights) as rag:
        found = rag.retrieve("What time does Li Hua check in with Adam about moving in?", "pagerank",
                             top_k=5)
    assert found.method == "ppr" and 1 <= len(found.chunks) <= 5
    assert len({c.chunk_id for c in found.chunks}) == len(found.chunks)
    docs = [c.doc_id for c in found.chunks]
    distinct = len(set(docs))  # documents first: one chunk of each, best first, then the others
    assert len(set(docs[:distinct])) == distinct
    assert [c.score for c in found.chunks[:distinct]] == sorted((c.score for c in found.chunks[:distinct]),
                                                                 reverse=True)
    assert found.entities and {"keywords", "walk", "chunks"} <= set(found.timings_ms)  # each stage timed


def test_ppr_without_a_graph_falls_back_to_the_nearest_chunks(tmp_path, model_folder) -> None:
    with EdgeRAG.open(tmp_path / "index", extractor="none", progress=False) as rag:
        rag.insert_text("LiHua: the keys are under the mat.", source="keys")
        rag.insert_text("LiHua: the cat sleeps all day.", source="cat")
        found = rag.retrieve("Where are the keys?", "ppr", top_k=1)
    assert [c.source for c in found.chunks] == ["keys"]


def _view(engine: Engine) -> IndexView:
    return IndexView(engine.settings, engine.store, engine.embedder, engine.vectors(),
                     lambda: engine.vectors("entity"), lambda: engine.vectors("relation"), None,
                     engine.names.get)


def test_the_retriever_builds_its_own_matrix_without_a_cache(rag: EdgeRAG, engine: Engine) -> None:
    rag.insert_text("AnaLee: I bake bread with BoKim.", source="one")
    rag.insert_text("AnaLee: I paint boats.", source="two")
    view = _view(engine)
    assert view.entity_vectors is not None and view.relation_vectors is not None
    reader = GraphReader(view, view.entity_vectors, view.relation_vectors)
    found = PPRRetriever(reader).retrieve("What does BoKim bake?", top_k=1)
    assert [c.source for c in found.chunks] == ["one"]


def test_documents_first_puts_one_chunk_per_document_before_the_rest() -> None:
    from edge_rag.retrieve.ppr import documents_first
    from edge_rag.retrieve.types import RetrievedChunk

    chunks = [RetrievedChunk(i, doc, "s", "t", 1.0 - i / 10) for i, doc in enumerate("aabca")]
    assert [c.chunk_id for c in documents_first(chunks)] == [0, 2, 3, 1, 4]


def test_questions_of_two_events_split_into_their_clauses() -> None:
    from edge_rag.questions import clauses

    assert clauses("Did Li Hua ask Yuriko to play music before Wolfgang proposed a break?") == [
        "Did Li Hua ask Yuriko to play music", "Wolfgang proposed a break"]
    assert clauses("Is it more than 3 days between Adam asking for the rent and LiHua paying the rent?") == [
        "Adam asking for the rent", "LiHua paying the rent"]
    # A short piece stays with its neighbour; one event is no split.
    assert clauses("Who reminds Li Hua to drink water after the workout?") == []
    assert clauses("Did Jennifer remind him to eat protein after the workout before she went to Paris?") == [
        "Did Jennifer remind him to eat protein after the workout", "she went to Paris"]
    assert clauses("Did it take a week from Adam ordering the fridge to the fridge being delivered?") == [
        "Adam ordering the fridge", "the fridge being delivered"]
    assert clauses("How did Li Hua get from Beijing to Shanghai?") == []


def test_interleave_gives_each_clause_a_document_after_the_whole_question_leads() -> None:
    from edge_rag.retrieve.ppr import WHOLE_FIRST, interleave
    from edge_rag.retrieve.types import RetrievedChunk

    whole = [RetrievedChunk(i, f"w{i}", "s", "t", 1.0) for i in range(6)]
    clause = [RetrievedChunk(10 + i, d, "s", "t", 1.0) for i, d in enumerate(["w0", "c1", "c2"])]
    docs = [c.doc_id for c in interleave([whole, clause], 6)]
    assert docs[:WHOLE_FIRST] == ["w0", "w1", "w2"] and docs[WHOLE_FIRST:] == ["c1", "c2", "w3"]


def test_a_two_event_question_retrieves_for_each_clause(lihua_index) -> None:
    question = "Did Li Hua ask Adam about the rent before Wolfgang invited him to a concert?"
    with EdgeRAG.open(lihua_index, create=False) as rag:
        found = rag.retrieve(question, "ppr", top_k=8)
        second = rag.retrieve("Wolfgang invited him to a concert", "ppr", top_k=1)
    assert second.chunks[0].doc_id in {c.doc_id for c in found.chunks}
    assert len({c.chunk_id for c in found.chunks}) == len(found.chunks)


def test_filler_terms_seed_nothing(lihua_index) -> None:
    with EdgeRAG.open(lihua_index, create=False) as rag:
        found = rag.retrieve("What is it?", "ppr", top_k=3)
    assert found.entities == [] and found.chunks  # the nearest chunks still seed the walk


def test_titles_match_whole_words_longest_first_and_skip_filler() -> None:
    from edge_rag.retrieve.title_links import TitleIndex

    index = TitleIndex.build([("Pearl Lust", 1), ("Pearl", 2), ("Lambert, Margrave of Tuscany", 3),
                              ("The", 4), ("Twin", 5), ("Twin", 6)])
    assert len(index) == 3  # "The" is filler; "Twin" names two documents, so neither
    assert index.find("Who directed PEARL LUST, and was Lambert Margrave of Tuscany's son?") == [1, 3]
    assert index.find("Pearls of pearl") == [2]
    assert index.find("Twin Peaks") == []
    assert index.find("a pearl lust for the PEARL", capitalised=True) == [2]  # names are capitalised


def test_titled_passages_link_to_the_passages_they_name(rag: EdgeRAG, engine: Engine) -> None:
    passages = {"Pearl Lust": "Pearl Lust\nPearl Lust is a 1936 film directed by Vera Smith.",
                "Vera Smith": "Vera Smith\nVera Smith was a director; her father was Tom Smith.",
                "Harbour": "Harbour\nA harbour is where ships dock."}
    for title, text in passages.items():
        rag.insert_text(text, source=title, metadata={"title": title})
    walk = engine.walk.get()
    assert walk.titles is not None and len(walk.titles) == 3
    first = {c.source: c.id for c in engine.store.chunks([int(i) for i in walk.chunk_ids]).values()}
    film, director = walk.chunk_nodes(np.array([first["Pearl Lust"], first["Vera Smith"]]))
    assert director in walk.indices[walk.indptr[film]:walk.indptr[film + 1]]
    question = "Who is the father of the director of film Pearl Lust?"
    found = rag.retrieve(question, "ppr", top_k=2)
    assert {c.source for c in found.chunks} == {"Pearl Lust", "Vera Smith"}
    titles = lambda: engine.walk.get().titles
    assert names_a_title(question, titles) and not names_a_title("Who docks?", titles)
    with EdgeRAG.open(rag.directory, create=False, planner="margin", planner_margin=0.0) as margin:
        assert margin.retrieve(question, "auto").plan.label == "F"  # a named title always walks


def test_a_comparison_of_named_documents_goes_to_the_named_documents_without_a_walk(rag: EdgeRAG) -> None:
    for title, text in {"Pearl Lust": "Pearl Lust\nPearl Lust is a 1936 film directed by Vera Smith.",
                        "Vera Smith": "Vera Smith\nVera Smith was a director born in 1890.",
                        "Harbour Lights": "Harbour Lights\nHarbour Lights is a 1932 film.",
                        "Ships": "Ships\nA harbour is where ships dock."}.items():
        rag.insert_text(text, source=title, metadata={"title": title})
    question = "Which film came out first, Pearl Lust or Harbour Lights?"
    compared = rag.retrieve(question, "auto", top_k=3)
    assert (compared.plan.label, compared.method) == ("G", "titles")
    assert {c.source for c in compared.chunks[:2]} == {"Pearl Lust", "Harbour Lights"}
    assert "walk" not in compared.timings_ms and len({c.doc_id for c in compared.chunks}) == 3
    assert "walk" in rag.retrieve(question, "ppr").timings_ms  # ppr alone always walks
    bridged = rag.retrieve("Which film has the director born first, Pearl Lust or Harbour Lights?", "auto")
    assert bridged.method == "ppr" and "walk" in bridged.timings_ms  # the answer is in another passage
    with EdgeRAG.open(rag.directory, create=False, planner="margin") as margin:
        assert margin.retrieve(question, "auto").method == "titles"
    untitled = rag.retrieve("Where do ships dock?", "titles", top_k=2)
    vector = rag.retrieve("Where do ships dock?", "vector", top_k=2)
    assert [c.chunk_id for c in untitled.chunks] == [c.chunk_id for c in vector.chunks]  # no title: vector


def test_untitled_documents_add_no_title_links(tmp_path, model_folder) -> None:
    # Files get a title from the reader (issue 42: LiHua's chats their "Time: ..." line); documents
    # inserted as strings without a title in their metadata have none and add nothing.
    with open_both(tmp_path / "index", progress=False) as (rag, engine):
        rag.insert_text("LiHua: Adam, the plumber comes at 5 PM.", source="chat-1")
        rag.insert_text("AdamSmith: Thanks Li Hua, I will be home by then.", source="chat-2")
        assert engine.walk.get().titles is None


def test_full_dates_become_the_graphs_date_names() -> None:
    from edge_rag.questions import iso_dates, query_terms

    assert iso_dates("What song on 20260405, and on 20260901_13:00?") == ["2026-04-05", "2026-09-01"]
    assert iso_dates("After September 19, 2026 or 2026-04-05?") == ["2026-04-05", "2026-09-19"]
    assert iso_dates("In 2026, call 1234567890 or 20261399.") == []
    assert "2026-04-05" in query_terms("What song does Li Hua suggest on 20260405?")[0]


def test_packed_graph_reads_equal_row_reads_across_gaps(rag: EdgeRAG, engine: Engine) -> None:
    """The walk's arrays are read a span of ids at a time as joined text: with spans of 3 ids and
    a deleted document's gap, every column equals a plain row-by-row read, in the same order."""
    for n, text in enumerate(["AnaLee met BoKim at HarborCafe.", "CyDo paints boats with AnaLee.",
                              "EvaRo and BoKim bake bread at MapleHall.", "FinUr sails with CyDo."]):
        rag.insert_text(f"Time: 2026010{n + 1}_10:00\n{text}", source=f"s{n}")
    rag.delete(engine.store.documents()[1].id)
    tables, conn = engine.store.walk, engine.store.conn
    links = tables._packed("chunk_entities", "entity_id", ("chunk_id", "entity_id"), (np.int64,) * 2, span=3)
    columns = ("source_id", "coalesce(weight, score)", "kind = 'similar'")
    relations = tables._packed("relations", "id", columns, (np.int64, np.float32, bool), span=3)
    rows = conn.execute("SELECT chunk_id, entity_id FROM chunk_entities").fetchall()
    assert len(rows) > 3 and [tuple(map(int, r)) for r in zip(*links)] == rows
    rows = conn.execute(f"SELECT {', '.join(columns)} FROM relations").fetchall()
    assert len(rows) > 3 and [int(r[0]) for r in rows] == relations[0].tolist()
    assert np.array_equal(np.array([r[1] for r in rows], dtype=np.float32), relations[1])
    assert [bool(r[2]) for r in rows] == relations[2].tolist()
