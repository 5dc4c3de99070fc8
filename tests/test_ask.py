"""Index → ask end to end with the real SLM, with every network socket refused."""

import socket

import pytest

from edge_rag import EdgeRAG
from edge_rag.cli import main

from .conftest import SMALL_SLM


@pytest.fixture()
def no_network(monkeypatch):
    """Make any attempt to open a socket fail loudly."""
    def refuse(*args, **kwargs):
        raise AssertionError("edge-rag tried to open a network socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_index_and_ask_offline(tmp_path, lihua_dir, no_network, model_folder, slm):
    with EdgeRAG.open(tmp_path / "index", progress=False, slm=SMALL_SLM,
                      answer_max_tokens=32) as rag:
        assert rag.insert(lihua_dir).ok
        answer = rag.ask("What time does Li Hua check in with Adam about moving in?", top_k=3)
    assert answer.text and answer.method == "vector"
    assert 1 <= len(answer.sources) <= 3
    assert all(s.doc_id and s.source.startswith(str(lihua_dir)) for s in answer.sources)
    assert {"embed", "search", "prefill", "decode"} <= set(answer.timings)


def test_stream_gives_the_same_answer_as_ask(lihua_index, slm):
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, answer_max_tokens=24) as rag:
        question = "Who is Li Hua's landlord?"
        stream = rag.ask(question, stream=True)
        pieces = list(stream)
        whole = rag.ask(question)
    assert "".join(pieces).strip() == stream.answer.text == whole.text
    assert [s.chunk_id for s in stream.answer.sources] == [s.chunk_id for s in whole.sources]
    assert "first_token" in stream.answer.timings


def test_context_is_trimmed_to_the_budget_not_the_question(lihua_index, slm):
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, context_token_budget=64,
                      answer_max_tokens=8) as rag:
        answer = rag.ask("What time does Li Hua check in with Adam?", top_k=10)
    assert len(answer.sources) < 10


def test_ask_without_retrieval(lihua_index, slm):
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, answer_max_tokens=8) as rag:
        answer = rag.ask("What is two plus two?", method="none")
    assert answer.sources == [] and answer.method == "none" and answer.text


def test_cli_ask_json(lihua_index, capsys, slm, monkeypatch):
    monkeypatch.setenv("EDGE_RAG_PROFILES", str(lihua_index.parent))
    (lihua_index.parent / "tiny.toml").write_text(f'slm = "{SMALL_SLM}"\nanswer_max_tokens = 16\n')
    assert main(["ask", "Who is Adam?", "--index", str(lihua_index), "--profile", "tiny",
                 "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"answer", "method", "sources", "timings_ms", "plan"} and data["plan"] is None
    assert set(data["sources"][0]) == {"doc_id", "source", "chunk_id"}
