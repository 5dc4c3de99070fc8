"""Index → ask end to end with the real SLM, with every network socket refused."""

import re
import socket

import pytest

from edge_rag import EdgeRAG
from edge_rag.cli import main

from .conftest import DIRECTOR, FILM, SMALL_SLM, open_both


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
    assert answer.text and answer.method == answer.retrieval.plan.method  # auto: the planner chose
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
                 "--method", "vector", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"answer", "method", "sources", "timings_ms", "plan", "withheld", "hops", "citations"}
    assert data["plan"] is None and data["withheld"] == [] and data["hops"] == []
    assert set(data["sources"][0]) == {"doc_id", "source", "chunk_id"}
    for cited in data["citations"]:  # the line each cited source stands on: one look to check it
        assert set(cited) == {"n", "doc_id", "source", "line", "text"} and cited["line"] >= 1


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
        assert re.search(r"\[\d\]", focused.text) and "Insufficient" not in focused.text  # answered, cited
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


def _answerer(slm, dated=None):
    from edge_rag.answer import Evidence, FocusedAnswerer

    evidence = Evidence(lambda texts: None, lambda doc_id: [], dated)
    return FocusedAnswerer(slm, evidence, 220, 16, 1.0, abstain_terms=2)


def test_the_days_documents_come_first_retrieved_ones_before_looked_up_ones(slm):
    from edge_rag.retrieve import RetrievedChunk

    def chunk(doc: str) -> RetrievedChunk:
        return RetrievedChunk(hash(doc) % 1000, doc, f"{doc}.txt", "", 0.5)

    answerer = _answerer(slm, lambda wanted: [chunk("may3a"), chunk("may3b")] if (5, 3) in wanted else [])
    retrieved = [chunk("other"), chunk("may3b")]
    chunks, day = answerer._dated("What did Li Hua cook on 20260503?", retrieved)
    assert [c.doc_id for c in chunks] == ["may3b", "may3a", "other"] and day == {"may3a", "may3b"}
    assert answerer._dated("What did Li Hua cook?", retrieved) == (retrieved, set())


def test_terms_named_elsewhere_in_the_retrieved_chat_do_not_make_an_abstention(slm):
    from edge_rag.answer import Prepared
    from edge_rag.answer.evidence_lines import Focus, Line, split_document
    from edge_rag.answer.forms import Form
    from edge_rag.retrieve import RetrievedChunk

    chat = ["Time: 20260105_14:00\nThane: Red Dead Redemption 2 is my favourite.\n"
            "Jareth: I loved the side mission with the widow."]
    doc = split_document(RetrievedChunk(1, "d1", "chat.txt", chat[0], 0.9), chat)
    prepared = Prepared("<|im_start|>user\nHi<|im_end|>\n", Focus([(doc, [Line(0, 1, doc.lines[1])])],
                        [Line(0, 1, doc.lines[1])]), Form("phrase"))
    answerer = _answerer(slm)
    assert answerer._abstain("What side mission in Red Dead Redemption 2 did Jareth love?",
                             [doc], prepared) == ""
    assert "redemption" in prepared.unsupported  # missing from the chosen line alone
    assert answerer._abstain("What zebra did Jareth ride in Red Dead Redemption 2?", [doc],
                             prepared) == "terms not in sources"


def test_a_speakers_name_alone_answers_only_a_who_question(slm):
    from edge_rag.answer import Prepared
    from edge_rag.answer.evidence_lines import Focus, Line
    from edge_rag.answer.forms import Form

    line = Line(0, 0, "ThaneChambers: I've been playing Apex Legends recently.")
    answerer = _answerer(slm)
    name = slm.tokenizer.encode("ThaneChambers", add_special_tokens=False).ids
    cite = slm.tokenizer.encode(" [", add_special_tokens=False).ids[0]
    for kind, may_end in (("phrase", False), ("who", True)):
        mask = answerer._mask(Prepared("", Focus([], [line]), Form(kind)))
        allowed = set(mask.allowed(len(name), name).tolist())
        assert (cite in allowed) is may_end and bool(slm.stop_ids & allowed) is may_end


def test_each_rule_of_the_focused_stage_switches_off_by_name(lihua_index, slm):
    from edge_rag.answer import RULES

    question = "What time does Li Hua check in with Adam about moving in?"
    with open_both(lihua_index, create=False, slm=SMALL_SLM, answer_rules_off=["time"]) as (rag, engine):
        assert engine.answerer.off == {"time"}  # the setting (a profile's list) reaches the stage
        assert not engine.answerer.prepare(question, rag.retrieve(question)).form.starts  # runs free
    with open_both(lihua_index, create=False, slm=SMALL_SLM, focus_max_new_tokens=8) as (rag, engine):
        stage = engine.answerer
        retrieval = rag.retrieve(question)
        assert stage.prepare(question, retrieval).form.starts  # a time from the sources
        prepared = stage.prepare(question, retrieval)
    assert stage._finish("Adam moving in [1]", prepared) == "Insufficient information."  # an echo
    stage.off = frozenset({"echo"})
    assert stage._finish("Adam moving in [1]", prepared).startswith("Adam moving in [1]")
    assert {"echo", "time", "who", "yesno", "quote"} <= set(RULES)


@pytest.mark.parametrize("stage", ["plain", "focused"])
def test_a_stream_capped_for_one_answer_leaves_the_stage_as_it_was(lihua_index, slm, stage):
    # The server caps one request's answer (its max_tokens) without touching the shared stage.
    with open_both(lihua_index, create=False, slm=SMALL_SLM, answer_stage=stage, answer_max_tokens=24,
                      focus_max_new_tokens=24) as (rag, engine):
        question = "Who is Li Hua's landlord?"
        config = engine.answerer.config
        stream = engine.answerer.stream(question, rag.retrieve(question), 2)
        text = "".join(stream)
        assert engine.answerer.config is config and config.max_new_tokens == 24
    if stage == "plain":
        assert 1 <= engine.slm.count_tokens(text) <= 2


@pytest.mark.parametrize("rules_off", [(), ("hops",)])
def test_a_bridge_question_asks_for_the_bridge_first(tmp_path, model_folder, slm, rules_off):
    from edge_rag.index import Document

    with EdgeRAG.open(tmp_path / "index", progress=False, slm=SMALL_SLM, focus_max_new_tokens=12,
                      answer_rules_off=rules_off) as rag:
        assert rag.insert(Document.from_text(FILM, "film.txt"), Document.from_text(DIRECTOR, "quill.txt")).ok
        answer = rag.ask("Where was the director of film Harbor Lights born?", method="vector")
    if rules_off:
        assert answer.hops == []
        return
    # The link is asked alone; its answer starts with a name from its sources (the who form).
    [link] = answer.hops
    assert link["question"] == "Who is the director of film Harbor Lights?"
    assert link["answer"].startswith("Mara Quill")
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", link["answer"])]
    assert all(answer.sources[n - 1].source == "film.txt" for n in cited)  # renumbered into the sources
    assert answer.retrieval and answer.to_dict()["hops"] == [link]
