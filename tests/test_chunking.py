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


def test_a_word_of_megabytes_is_cut_into_chunks_under_the_character_cap(embedder):
    import random

    rng = random.Random(7)
    word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(2 << 20))
    chunker = _chunker(embedder, size=128, overlap=32)
    chunks = list(chunker.chunks(["Before the word.\n", word[: 1 << 20], word[1 << 20 :], "\nAfter it."]))
    assert chunker.max_chars == 128 * 16
    assert all(len(c.text) <= chunker.max_chars and 0 < c.n_tokens <= 128 for c in chunks)
    assert chunks[0].text.startswith("Before the word.\n" + word[:100])
    assert chunks[-1].text.endswith("\nAfter it.") and word[-100:] in chunks[-2].text + chunks[-1].text
    assert len(word) <= sum(len(c.text) for c in chunks) < 2 * len(word)


def test_prose_is_chunked_the_same_under_the_character_cap(embedder):
    capped = list(_chunker(embedder).chunks([TEXT]))
    uncapped = list(Chunker(embedder.tokenizer, 40, 10, max_chars=10**9).chunks([TEXT]))
    assert capped == uncapped
