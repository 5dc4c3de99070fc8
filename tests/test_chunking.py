"""Token chunking: budgets hold, lines stay whole, streaming gives the same chunks."""

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from edge_rag.index import Chunker

LINE = "Speaker{}: message number {} about the garden party and the cake."
TEXT = "\n".join(LINE.format(i % 3, i) for i in range(60))


def _chunker(embedder, size=40, overlap=10):
    return Chunker(embedder.tokenizer, size, overlap)


def test_chunks_respect_the_token_budget(embedder):
    chunks = list(_chunker(embedder).chunks([TEXT]))
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.n_tokens <= 40
        assert embedder.count_tokens(chunk.text) <= 40


def test_lines_are_kept_whole_and_nothing_is_lost(embedder):
    chunks = list(_chunker(embedder).chunks([TEXT]))
    lines = {line for chunk in chunks for line in chunk.text.split("\n")}
    assert lines == set(TEXT.split("\n"))


def test_consecutive_chunks_overlap(embedder):
    chunks = list(_chunker(embedder, size=60, overlap=20).chunks([TEXT]))
    for first, second in zip(chunks, chunks[1:]):
        assert first.text.split("\n")[-1] == second.text.split("\n")[0]


def test_a_line_longer_than_the_budget_is_split(embedder):
    long_line = " ".join(f"w{i}" for i in range(400))
    chunks = list(_chunker(embedder).chunks([long_line]))
    assert len(chunks) > 3
    assert all(c.n_tokens <= 40 for c in chunks)
    assert chunks[0].text.startswith("w0") and chunks[-1].text.endswith("w399")


def test_blank_text_gives_no_chunks(embedder):
    assert list(_chunker(embedder).chunks(["\n  \n\t\n"])) == []


@hsettings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(TEXT)), max_size=8))
def test_block_boundaries_do_not_change_chunks(embedder, cuts):
    points = sorted(set(cuts))
    blocks = [TEXT[a:b] for a, b in zip([0, *points], [*points, len(TEXT)])]
    chunker = _chunker(embedder)
    assert list(chunker.chunks(blocks)) == list(chunker.chunks([TEXT]))
