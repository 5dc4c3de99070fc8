"""A dialogue on a real index: follow-ups made standalone without the SLM, history that changes
nothing for a question that stands alone, ``ppr``'s memory of the previous turn, ``Conversation``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edge_rag import EdgeRAG
from edge_rag.engine import Engine
from edge_rag.plan.dialogue import Exchange, resolve, resolve_turn, turns

from .conftest import SMALL_SLM

PLUMBER = "Who arranged for a plumber to fix the water tap at Li Hua's place in January?"
FOLLOW_UP = "When does he confirm the plumber will arrive?"


def said(question: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


@pytest.fixture(scope="module")
def engine(lihua_index: Path):
    with Engine.open(lihua_index, create=False, progress=False) as opened:
        yield opened


def test_the_messages_become_turns_and_answers_lose_their_citations() -> None:
    history = [{"role": "system", "content": "Be brief."}, *said("Who?", 'Adam Smith [1] — "Adam: hi"'),
               {"role": "user", "content": "Why?"}]
    assert turns(history) == [Exchange("Who?", "Adam Smith"), Exchange("Why?")]


def test_a_pronoun_becomes_the_one_person_of_the_previous_turn(engine: Engine) -> None:
    heard = resolve(FOLLOW_UP, said(PLUMBER, "Adam Smith [1]"), engine.known_names)
    assert heard.follow_up and "pronoun" in heard.cues
    # Li Hua and Adam Smith are both people of the previous turn: the topic goes along instead.
    assert heard.resolved.startswith(FOLLOW_UP) and "plumber to fix the water tap" in heard.resolved
    alone = resolve_turn("What house rule does she mention?", Exchange("What did Jennifer suggest?"),
                         engine.known_names)
    assert alone.resolved == "What house rule does Jennifer mention?"


def test_what_about_x_replaces_the_person_of_the_previous_question(engine: Engine) -> None:
    heard = resolve("What about Wolfgang?", said("What is Li Hua's favorite movie?", "Inception"),
                    engine.known_names)
    assert heard.resolved == "What is Wolfgang's favorite movie?" and heard.cues == ("about",)


def test_and_on_a_day_replaces_the_time_of_the_previous_question(engine: Engine) -> None:
    before = said("What does Li Hua do on Saturday?", "He cooks.")
    heard = resolve("And on Sunday?", before, engine.known_names)
    assert heard.resolved == "What does Li Hua do on Sunday?"


def test_a_relative_day_is_counted_from_the_previous_turn(engine: Engine) -> None:
    before = said("Whom did Li Hua meet on 20260130?", "Adam")
    heard = resolve("What did Li Hua cook three days later?", before, engine.known_names)
    assert heard.resolved == "What did Li Hua cook on 20260202?"


def test_an_ellipsis_carries_the_previous_question(engine: Engine) -> None:
    heard = resolve("Who with?", said("When is Li Hua's dinner?", "At 7 pm [1]"), engine.known_names)
    assert heard.cues == ("ellipsis",)
    assert heard.resolved == "Who with? (Li Hua's dinner: At 7 pm)"


@pytest.mark.parametrize("question", ["What house rule does Adam mention?",
                                      "What did Li Hua and Wolfgang plan for the weekend?",
                                      "Who wished Li Hua a happy Lunar New Year?"])
def test_a_question_that_stands_alone_is_not_bent(engine: Engine, question: str) -> None:
    heard = resolve(question, said(PLUMBER, "Adam Smith"), engine.known_names)
    assert not heard.follow_up and heard.resolved == question


def test_without_history_or_a_previous_turn_nothing_changes(engine: Engine) -> None:
    assert engine.understand("Who with?", None) is None
    assert resolve("Who with?", [], engine.known_names).resolved == "Who with?"


def test_history_none_retrieves_byte_for_byte_as_before(lihua_index: Path) -> None:
    with EdgeRAG.open(lihua_index, create=False, progress=False) as rag:
        for method in ("auto", "ppr", "vector"):
            plain = rag.retrieve(PLUMBER, method=method)
            for history in (None, []):
                again = rag.retrieve(PLUMBER, method=method, history=history)
                ranked = [(c.chunk_id, c.score) for c in again.chunks]
                assert ranked == [(c.chunk_id, c.score) for c in plain.chunks]
        assert "resolved" not in (plain.to_dict()["plan"] or {})


def test_a_new_question_after_history_retrieves_as_alone(lihua_index: Path) -> None:
    question = "What house rule does Adam mention?"
    with EdgeRAG.open(lihua_index, create=False, progress=False) as rag:
        alone = rag.retrieve(question)
        after = rag.retrieve(question, history=said(PLUMBER, "Adam Smith"))
    assert [c.chunk_id for c in after.chunks] == [c.chunk_id for c in alone.chunks]
    assert after.plan is not None and not after.plan.follow_up


def test_a_follow_up_retrieves_the_previous_turn_s_chat_with_its_plan_resolved(lihua_index: Path) -> None:
    with EdgeRAG.open(lihua_index, create=False, progress=False) as rag:
        found = rag.retrieve(FOLLOW_UP, history=said(PLUMBER, "Adam Smith [1]"), top_k=5)
        bare = rag.retrieve(FOLLOW_UP, top_k=5)
    assert found.plan is not None and found.plan.follow_up and found.plan.resolved == found.question
    assert found.to_dict()["plan"]["resolved"] == found.question and "dialogue" in found.timings_ms
    assert any("20260106_1500" in c.source for c in found.chunks)
    assert bare.plan is not None and not bare.plan.follow_up


def test_ask_with_history_none_answers_as_before(lihua_index: Path, slm) -> None:
    with EdgeRAG.open(lihua_index, create=False, progress=False, slm=SMALL_SLM, answer_max_tokens=12) as rag:
        plain = rag.ask(PLUMBER)
        again = rag.ask(PLUMBER, history=None)
    assert again.text == plain.text and again.to_dict()["plan"] == plain.to_dict()["plan"] | {
        "latency_ms": again.to_dict()["plan"]["latency_ms"]}
    assert [s.chunk_id for s in again.sources] == [s.chunk_id for s in plain.sources]


def test_a_conversation_keeps_its_turns_and_resets(lihua_index: Path, slm) -> None:
    with EdgeRAG.open(lihua_index, create=False, progress=False, slm=SMALL_SLM, answer_max_tokens=12) as rag:
        talk = rag.conversation()
        first = talk.ask(PLUMBER)
        second = talk.ask(FOLLOW_UP)
        assert [t.question for t in talk.turns] == [PLUMBER, FOLLOW_UP]
        assert talk.turns[0].resolved == PLUMBER and talk.turns[1].resolved != FOLLOW_UP
        assert second.retrieval is not None and second.retrieval.plan is not None
        assert second.retrieval.plan.follow_up and second.to_dict()["plan"]["follow_up"] is True
        assert talk.messages[1] == {"role": "assistant", "content": first.text}
        assert talk.turns[1].answer.sources
        talk.reset()
        assert talk.turns == [] and talk.messages == []
        fresh = talk.ask(FOLLOW_UP)
        assert fresh.retrieval is not None and fresh.retrieval.plan is not None
        assert not fresh.retrieval.plan.follow_up


def test_cli_ask_json_reads_the_history_file(lihua_index: Path, tmp_path: Path, capsys, monkeypatch,
                                             slm) -> None:
    from edge_rag.cli import main

    monkeypatch.setenv("EDGE_RAG_PROFILES", str(tmp_path))
    (tmp_path / "tiny.toml").write_text(f'slm = "{SMALL_SLM}"\nfocus_max_new_tokens = 12\n')
    history = tmp_path / "history.json"
    history.write_text(json.dumps(said(PLUMBER, "Adam Smith [1]")))
    assert main(["ask", FOLLOW_UP, "--index", str(lihua_index), "--profile", "tiny", "--json",
                 "--history", str(history)]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["follow_up"] is True and plan["resolved"].startswith(FOLLOW_UP)
    history.write_text('{"messages": "not a list"}')
    assert main(["retrieve", FOLLOW_UP, "--index", str(lihua_index), "--history", str(history)]) == 1
    assert "history must be a list" in capsys.readouterr().err


def test_cli_chat_keeps_the_dialogue_until_new(lihua_index: Path, tmp_path: Path, slm) -> None:
    env = {**os.environ, "EDGE_RAG_PROFILES": str(tmp_path)}
    (tmp_path / "talk.toml").write_text(f'slm = "{SMALL_SLM}"\nfocus_max_new_tokens = 12\n')
    said_in = f"{PLUMBER}\n{FOLLOW_UP}\n/new\n{FOLLOW_UP}\n"
    done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "chat", "--index", str(lihua_index),
                           "--profile", "talk"], input=said_in, capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("sources:") == 3 and done.stdout.count("understood as: ") == 1
    assert "(new conversation)" in done.stderr


def test_the_answer_is_asked_the_short_form_with_the_previous_turn_on_its_own_line() -> None:
    from edge_rag.plan.dialogue import Resolution, split_topic
    from edge_rag.prompts import focused_user

    heard = Resolution("Who with?", "Who with? (Anna's dinner (at home): 7 PM)", ("ellipsis",))
    assert heard.asked == "Who with?" and split_topic(heard.resolved)[1] == "Anna's dinner (at home): 7 PM"
    assert split_topic("Who directed Film (1999)?") == ("Who directed Film (1999)?", "")
    user = focused_user("Who with?", "[1] chat", "Anna's dinner: 7 PM")
    assert user.endswith("\n\nEarlier in this conversation: Anna's dinner: 7 PM\nQuestion: Who with?")
    assert focused_user("Who with?", "[1] chat") == "Sources:\n[1] chat\n\nQuestion: Who with?"
