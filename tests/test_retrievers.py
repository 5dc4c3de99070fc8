"""The graph retrievers' formulas (eqs. 10, 16, 22–27) on a hand-built graph, worked out by hand,
and every method end to end on real LiHua-World conversations."""

from __future__ import annotations

import numpy as np
import pytest

from edge_rag import EdgeRAG, UnknownMethod
from edge_rag.engine import Engine
from edge_rag.retrieve import GraphReader
from edge_rag.retrieve.base import IndexView
from edge_rag.retrieve.dual import top_up
from edge_rag.retrieve.keywords import NameMatcher, rule_keywords
from edge_rag.retrieve.local import select_relations
from edge_rag.retrieve.topology import score_relations

from .conftest import open_both

# Entities: 1 A person, 2 B person, 3 C time, 4 D location, 5 A2 person, 6 E concept, 7 F person.
ENTITIES = [(1, "A", "person"), (2, "B", "person"), (3, "C", "time"), (4, "D", "location"),
            (5, "A2", "person"), (6, "E", "concept"), (7, "F", "person")]
# (id, kind, source, target, weight ω_r, score s_r)
RELATIONS = [(1, "structural", 1, 2, 0.8, None), (2, "structural", 1, 3, 0.5, None),
             (3, "structural", 2, 4, 0.6, None), (4, "similar", 1, 5, None, 0.7),
             (5, "structural", 5, 6, 0.4, None), (6, "similar", 1, 7, None, 0.9)]


@pytest.fixture()
def graph(rag: EdgeRAG, engine: Engine) -> GraphReader:
    """The hand-built graph in a real index's SQLite file."""
    with engine.store.write():
        engine.store.conn.executemany("INSERT INTO entities(id, name, type) VALUES (?, ?, ?)", ENTITIES)
        engine.store.conn.executemany(
            "INSERT INTO relations(id, kind, source_id, target_id, weight, score) VALUES (?, ?, ?, ?, ?, ?)",
            RELATIONS)
    view = IndexView(rag.settings, engine.store, engine.embedder, engine.vectors())
    return GraphReader(view, lambda: engine.vectors("entity"), lambda: engine.vectors("relation"))


def _scores(graph: GraphReader, use_weights: bool = True) -> dict[int, float]:
    found = score_relations(graph, {1}, ("time",), hops=2, use_weights=use_weights)
    return {r.id: round(r.rank, 4) for r in found}


def test_topology_scores_all_three_cases_by_hand(graph: GraphReader) -> None:
    scores = _scores(graph)
    # Case 1 (eq. 22), structural touching the query entity A: S_R = ω_r; S_E counts A (and C,
    # a predicted answer of type time).
    assert scores[1] == 0.8 + 1
    assert scores[2] == 0.5 + 2
    # Case 2 (eq. 23), similar A–A2 whose tail A2 has another relation (ω 0.4): 0.7 · 0.4.
    assert scores[4] == round(0.7 * 0.4 + 1, 4)
    # Case 2, similar A–F whose tail has no other relation: s_r times the mean w of A's others
    # (r1 0.8, r2 0.5, r4 0.7).
    assert scores[6] == round(0.9 * (0.8 + 0.5 + 0.7) / 3 + 1, 4)
    # Case 3 (eq. 24), two hops: B–D via A–B is 0.8 · 0.6; A2–E via A–A2 is 0.7 · 0.4.
    assert scores[3] == round(0.8 * 0.6, 4)
    assert scores[5] == round(0.7 * 0.4, 4)


def test_without_weights_topology_ranks_by_counts(graph: GraphReader) -> None:
    scores = _scores(graph, use_weights=False)
    assert scores == {1: 2.0, 2: 3.0, 3: 1.0, 4: 2.0, 5: 1.0, 6: 2.0}


def test_local_alpha_split_takes_floor_similar_and_ceil_structural(graph: GraphReader) -> None:
    zero = np.zeros(graph.view.embedder.dim, dtype=np.float32)  # no text match: rank by weight
    around_a = graph.one_hop([1])
    half = select_relations(graph, zero, around_a, k=4, alpha=0.5, use_weights=True)
    assert [r.id for r in half] == [6, 4, 1, 2]  # ⌊2⌋ similar by s_r, ⌈2⌉ structural by ω_r
    quarter = select_relations(graph, zero, around_a, k=3, alpha=0.25, use_weights=True)
    assert [r.id for r in quarter] == [1, 2]  # ⌊0.75⌋ = 0 similar, ⌈2.25⌉ = 3 structural (2 exist)
    spill = select_relations(graph, zero, around_a, k=3, alpha=0.7, use_weights=True)
    assert [r.id for r in spill] == [6, 4, 1]  # ⌊2.1⌋ = 2 similar, ⌈0.9⌉ = 1 structural


def test_dual_tops_up_k_minus_n_similar_edges(graph: GraphReader) -> None:
    relations = graph.relations([1, 4, 6])
    mixed = top_up([relations[1]], [relations[4], relations[6]], k=2, use_weights=True)
    assert [r.id for r in mixed] == [1, 6]  # n = 1 structural, k − n = 1 similar: the best, s 0.9
    assert [r.id for r in top_up([relations[1]], [relations[4], relations[6]], 3, True)] == [1, 6, 4]


@pytest.mark.parametrize("method", ["local", "dual", "topology", "lr", "dr", "tr"])
def test_every_graph_method_retrieves_cited_chunks(lihua_index, method: str) -> None:
    with EdgeRAG.open(lihua_index, create=False) as rag:
        found = rag.retrieve("What time does Li Hua check in with Adam about moving in?", method, top_k=5)
    assert 1 <= len(found.chunks) <= 5 and all(c.source and c.doc_id for c in found.chunks)
    assert len({c.chunk_id for c in found.chunks}) == len(found.chunks)
    assert found.entities and found.relations and "chunks" in found.timings_ms
    scores = [c.score for c in found.chunks]
    assert scores == sorted(scores, reverse=True)


def test_graph_methods_on_an_index_without_a_graph_return_no_chunks(tmp_path, model_folder) -> None:
    with EdgeRAG.open(tmp_path / "index", extractor="none", progress=False) as rag:
        rag.insert_text("LiHua: the keys are under the mat.", source="keys")
        assert rag.retrieve("Where are the keys?", "topology").chunks == []
        with pytest.raises(UnknownMethod):
            rag.retrieve("Where are the keys?", "telepathy")


def test_rule_keywords_find_graph_names_in_other_spellings() -> None:
    names = NameMatcher(["YurikoYamamoto", "Central Park", "LiHua"])
    found = rule_keywords("Where did yuriko yamamoto and Li Hua meet?", names)
    assert {"YurikoYamamoto", "LiHua"} <= set(found.low)
    assert found.answer_types == ("location", "name")
    assert "meet" in found.high


def test_the_open_index_reloads_entity_names_after_an_insert(tmp_path, model_folder) -> None:
    with open_both(tmp_path / "index", progress=False) as (rag, engine):
        rag.insert_text("Time: 20260101_10:00\nLiHua: I met MarcoPolo at the harbour.", source="one")
        first = engine.names.get()
        assert engine.names.get() is first and "MarcoPolo" in first.names
        rag.insert_text("Time: 20260102_10:00\nLiHua: ZoeQuinn brought the cake.", source="two")
        assert "ZoeQuinn" in engine.names.get().names



def test_chunk_support_is_shared_among_a_busy_items_chunks(tmp_path, model_folder) -> None:
    with open_both(tmp_path / "index", extractor="none", progress=False,
                      graph_support_weight=1.0, graph_support_spread=0.5) as (rag, engine):
        for text in ("Ana bakes bread.", "Ana runs at dawn.", "Ana paints boats.", "Ana sings."):
            rag.insert_text(text, source=text)
        c1, c2, c3, c4 = [row[0] for row in engine.store.conn.execute("SELECT id FROM chunks ORDER BY id")]
        with engine.store.write():
            engine.store.conn.execute("INSERT INTO entities(id, name, type) VALUES (1, 'Ana', 'person'), "
                                   "(2, 'bread', 'concept')")
            engine.store.conn.execute("INSERT INTO relations(id, kind, source_id, target_id, weight) "
                                   "VALUES (1, 'structural', 1, 2, 0.5)")
            engine.store.conn.executemany("INSERT INTO chunk_entities VALUES (?, 1)",
                                       [(c,) for c in (c1, c2, c3, c4)])
            engine.store.conn.execute("INSERT INTO relation_chunks VALUES (1, ?)", (c1,))
        view = IndexView(rag.settings, engine.store, engine.embedder, engine.vectors())
        reader = GraphReader(view, lambda: engine.vectors("entity"), lambda: engine.vectors("relation"))
        query = engine.embedder.embed_one("What does Ana do?")
        found = {c.chunk_id: c.score for c in reader.chunks(query, {1: 1.0}, {1: 2.0}, [], top_k=4)}
        cosine = reader._similarity("chunk", query, [c1, c2, c3, c4])
    # Ana links 4 chunks: 1/√4 = 0.5 each; the relation links c1 alone: 2/√1. Support c1 2.5, others
    # 0.5, divided by the largest (2.5), times β = 1, plus the cosine.
    expected = {c1: 1.0 + cosine[c1], c2: 0.2 + cosine[c2], c3: 0.2 + cosine[c3], c4: 0.2 + cosine[c4]}
    assert found == pytest.approx(expected, abs=1e-5)
