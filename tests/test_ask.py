"""Index → ask end to end with the real SLM, with every network socket refused."""

import re
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
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, context_token_budget=64, answer_stage="plain",
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


def test_chat_answers_questions_from_stdin_and_reuses_the_system_prompt(lihua_index, slm):
    import os
    import subprocess
    import sys

    env = {**os.environ, "EDGE_RAG_PROFILES": str(lihua_index.parent)}
    (lihua_index.parent / "chat.toml").write_text(f'slm = "{SMALL_SLM}"\nfocus_max_new_tokens = 12\n')
    questions = "What time does Li Hua check in with Adam about moving in?\n\nWho is Adam?\n"
    done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "chat", "--index", str(lihua_index),
                           "--profile", "chat"], input=questions, capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("sources:") == 2 and "[1] " in out
    cached = [int(n) for n in re.findall(r"cached_tokens (\d+)", out)]
    assert len(cached) == 2 and cached[1] > 50  # the fixed system prompt at least


def test_focused_answers_cite_a_source_and_plain_stage_stays_reachable(lihua_index, slm):
    question = "What time does Li Hua check in with Adam about moving in?"
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, focus_max_new_tokens=16) as rag:
        focused = rag.ask(question)
        assert focused.details["stage"] == "focused" and focused.details["form"] == "time"
        assert focused.text == "Insufficient information." or re.search(r"\[\d\]", focused.text)
        assert re.sub(r"[\s\[\]\d,.]", "", focused.text)  # never only citations
        assert focused.timings["prompt_tokens"] <= 400
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, answer_stage="plain",
                      answer_max_tokens=8) as rag:
        plain = rag.ask(question)
    assert plain.timings["prompt_tokens"] > focused.timings["prompt_tokens"] and not plain.details


def test_a_question_whose_terms_the_evidence_lacks_is_abstained_on_without_the_model(lihua_index, slm):
    question = "What brand of titanium snowboard wax did Adam order from Zurich last winter?"
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, focus_max_new_tokens=8) as rag:
        answer = rag.ask(question)
    assert answer.text == "Insufficient information."
    assert answer.details["abstain"] == "terms not in sources"
    assert len(answer.details["unsupported"]) >= 4 and "prefill" not in answer.timings


def test_a_date_the_question_names_brings_that_days_conversations(lihua_index, slm):
    with EdgeRAG.open(lihua_index, create=False, slm=SMALL_SLM, focus_max_new_tokens=8) as rag:
        answer = rag.ask("What did Li Hua talk about on 20260113?", top_k=1)
    assert any("20260113" in source.source for source in answer.sources)
    assert answer.details["abstain"] != "date not in sources"
