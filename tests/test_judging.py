"""The benchmarks' judges: containment without its artifacts, and the committed LLM verdicts."""

from __future__ import annotations

import json

import pytest

from benchmarks.core import verdicts
from benchmarks.core.containment import contains


@pytest.mark.parametrize(("answer", "gold", "right"), [
    ("Wolfgang Schulz [1]", "WolfgangSchulz", True),
    ("WolfgangSchulz [1]", "Wolfgang Schulz", True),
    ("At 6 PM, the concert on March 7th [1]", "20260307_18:00", True),
    ("7 March 2026, 18:00 [2]", "20260307_18:00", True),
    ("7 March 2026, 17:00 [2]", "20260307_18:00", False),
    ("It's about nutrition [1]", "no", False),
    ("Yes, he asked about his opinion on The Last of Us [1]", "No", False),
    ("No, he did not [1]", "No", True),
    ("Li Hua’s car [1]", "Li Hua's car", True),
    ("Phil Foden's goal was a stunner [1]", "Phil Foden", True),
    ("from 2pm to 3pm [1]", "2 PM to 3 PM", True),
    ("5:30 PM works [1]", "Around 5:30", True),
    ("at 19:00 [1]", "7 pm", True),
    ("On 12 August 2026 at 6 PM [1]", "20260812 6PM", True),
    ("LiHua, Chae and Yuriko [1]", "LiHua & Chae & Yuriko", True),
    ("LiHua and Chae [1]", "LiHua & Chae & Yuriko", False),
    ("February 2, 1345 [1]", "2 February 1345", True),
    ("2 February 1346 [1]", "2 February 1345", False),
])
def test_containment_reads_names_dates_times_words_and_quotes_as_a_person_would(answer, gold, right) -> None:
    assert contains(answer, gold) is right


def test_a_null_question_is_right_only_when_the_answer_abstains() -> None:
    assert contains("Insufficient information.", "", "Null")
    assert not contains("Blue [1]", "", "Null")


def test_verdicts_are_stored_by_answer_text_and_looked_up_for_a_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(verdicts, "STORE", tmp_path)
    monkeypatch.setattr(verdicts, "PENDING", tmp_path / "pending")
    judged = tmp_path / "run.in.jsonl"
    rows = [{"id": "1", "answer": "Yes [1]", "type": "Multi", "correct": True},
            {"id": "2", "answer": "Blue [1]", "type": "Null", "correct": False},
            {"id": "3", "answer": "5 PM [1]", "type": "Single", "correct": False}]
    questions = {r["id"]: {"question": "q?", "answer": "g"} for r in rows}
    lines = verdicts.judge_input(rows[:2], questions)
    judged.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "run.out.jsonl").write_text('{"i": 0, "correct": true}\n{"i": 1, "correct": false}\n')
    assert verdicts.add("lihua", verdicts.read_judged(tmp_path / "run.out.jsonl"), "llm") == 2
    assert verdicts.add("lihua", verdicts.read_judged(tmp_path / "run.out.jsonl"), "llm") == 0
    summary = verdicts.llm_summary(rows, "lihua")
    assert (summary["judged"], summary["unjudged"], summary["all"]) == (2, 1, 0.5)
    assert summary["agreement"]["share"] == 1.0 and rows[2]["llm"] is None
    written = verdicts.write_pending("lihua-run", verdicts.judge_input(rows[2:], questions))
    assert json.loads(written[0].read_text())["answer_sha"] == verdicts.answer_sha("5 PM [1]")


def test_a_judge_output_for_another_answer_is_refused(tmp_path) -> None:
    line = verdicts.judge_input([{"id": "1", "answer": "Yes [1]", "type": "Multi"}],
                                {"1": {"question": "q?", "answer": "Yes"}})[0]
    (tmp_path / "x.in.jsonl").write_text(json.dumps(line) + "\n")
    (tmp_path / "x.out.jsonl").write_text('{"i": 0, "answer_sha": "0000", "correct": true}\n')
    with pytest.raises(ValueError, match="another answer"):
        verdicts.read_judged(tmp_path / "x.out.jsonl")
