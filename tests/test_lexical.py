"""BM25 over chunk words (``retrieve/lexical.py``) and its place in ``ppr``."""

from __future__ import annotations

import numpy as np

from edge_rag import EdgeRAG
from edge_rag.engine import Engine
from edge_rag.lexicon import index_terms, stem
from edge_rag.retrieve.lexical import ChunkTerms, TermCounts

TEXTS = ["LiHua: we meet for the music festival tonight.",
         "Wolfgang: music is fun, music every day, music all night.",
         "Adam: the air-conditioner was installed in the basement."]


def test_terms_are_lowered_stems_without_stopwords() -> None:
    assert stem("reminded") == "remind" and stem("sessions") == "session" and stem("bus") == "bus"
    assert index_terms("Did Yuriko remind the group?") == ["yuriko", "remind", "group"]


def test_rare_words_outweigh_repeated_common_ones() -> None:
    terms = ChunkTerms.build(TEXTS)
    scores = terms.scores("Which music festival did they meet for?")
    assert scores.shape == (3,) and int(np.argmax(scores)) == 0
    assert scores[2] == 0.0  # no shared word
    assert int(np.argmax(terms.scores("When were the air conditioners installed?"))) == 2


def test_unknown_words_and_an_empty_corpus_score_nothing() -> None:
    assert not ChunkTerms.build(TEXTS).scores("zeppelin?").any()
    assert ChunkTerms.build([]).scores("music").shape == (0,)


def _counted(texts: list[str], start: TermCounts | None = None) -> ChunkTerms:
    counts = start or TermCounts()
    for text in texts:
        counts.add(text)
    return counts.finish()


def _same_index(a: ChunkTerms, b: ChunkTerms) -> None:
    assert a.size == b.size and dict(a.vocabulary) == dict(b.vocabulary)
    for name in ("indptr", "positions", "weights", "idf", "tf"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert getattr(a, name).dtype == getattr(b, name).dtype, name


def test_counts_resumed_from_an_earlier_index_equal_counting_every_text_again() -> None:
    """An insert keeps every earlier chunk: the earlier term-major postings are merged with the
    new chunks' (no re-sort of them all); a delete drops some: the chunk-major way. Both give
    the index counting every remaining text afresh gives, array for array."""
    more = ["Yuriko: the music festival moved to the basement!", "", "Adam: tonight? fun."]
    earlier = _counted(TEXTS)
    _same_index(_counted(more, TermCounts.resumed(earlier, np.ones(3, dtype=bool))), _counted(TEXTS + more))
    kept = np.array([True, False, True])
    resumed = _counted(more, TermCounts.resumed(earlier, kept))
    fresh = _counted([TEXTS[0], TEXTS[2], *more])
    for question in ("music festival tonight", "air-conditioner basement", "fun every day"):
        assert np.array_equal(resumed.scores(question), fresh.scores(question))
    twice = _counted(more[:1], TermCounts.resumed(_counted(more[1:], TermCounts.resumed(
        earlier, np.ones(3, dtype=bool))), np.ones(5, dtype=bool)))
    _same_index(twice, _counted(TEXTS + more[1:] + more[:1]))


def test_the_walk_graph_indexes_every_chunk_and_ppr_finds_a_rare_word(rag: EdgeRAG, engine: Engine) -> None:
    for i, text in enumerate(TEXTS):
        rag.insert_text(text, source=f"chat{i}")
    walk = engine.walk.get()
    assert walk.lexical is not None and walk.lexical.size == len(walk.chunk_ids)
    found = rag.retrieve("Who went to the music festival?", "ppr", top_k=1)
    assert [c.source for c in found.chunks] == ["chat0"]
