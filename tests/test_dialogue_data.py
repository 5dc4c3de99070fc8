"""The two-turn LiHua-World dialogue sets (issue 59, ``benchmarks/data/README.md``) are well formed.

The shape checks need only the files; the checks against the dev questions and the chats skip,
with a reason, where ``../shared/datasets`` is absent.
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import LIHUA_QUERIES, LIHUA_ZIP, document_timestamp, half, normalise_evidence

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"
FOLLOW_UPS = DATA / "dialogues_lihua.jsonl"
SWITCHES = DATA / "topic_switch_lihua.jsonl"
KINDS = {"pronoun", "ellipsis", "what_about", "time", "demonstrative"}
MIN_FOLLOW_UPS, MIN_SWITCHES, MIN_NULL_FOLLOW_UPS = 90, 40, 12
needs_data = pytest.mark.skipif(not (LIHUA_QUERIES.is_file() and LIHUA_ZIP.is_file()),
                                reason=f"LiHua-World dev data not found under {LIHUA_QUERIES.parent}")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def targets(rows: list[dict[str, Any]]) -> list[str]:
    return [row["turn2"]["resolves_to"] for row in rows]


@pytest.fixture(scope="module")
def follow_ups() -> list[dict[str, Any]]:
    return load(FOLLOW_UPS)


@pytest.fixture(scope="module")
def switches() -> list[dict[str, Any]]:
    return load(SWITCHES)


@pytest.fixture(scope="module")
def dev() -> dict[str, dict[str, Any]]:
    return json.loads(LIHUA_QUERIES.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def chats() -> dict[str, str]:
    """Each conversation's text by its ``Time:`` header."""
    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        texts = [archive.read(n).decode("utf-8") for n in archive.namelist() if n.endswith(".txt")]
    return {document_timestamp(text): text for text in texts}


@pytest.mark.parametrize("path, prefix", [(FOLLOW_UPS, "f"), (SWITCHES, "s")])
def test_rows_have_every_field(path: Path, prefix: str) -> None:
    rows = load(path)
    for row in rows:
        where = f"{path.name} {row.get('id')}"
        assert set(row) == {"id", "turn1", "turn2", "kind", "note"}, where
        assert row["id"].startswith(prefix) and row["note"].strip(), where
        turn1, turn2 = row["turn1"], row["turn2"]
        assert {"question", "answer", "evidence", "quote"} <= set(turn1), where
        assert turn1["question"].strip() and turn1["answer"].strip() and turn1["quote"], where
        assert normalise_evidence(turn1["evidence"]) == [turn1["evidence"]], where
        assert set(turn2) == {"question", "resolves_to", "resolved"}, where
    assert len({row["id"] for row in rows}) == len(rows), f"{path.name}: duplicate ids"


def test_counts_meet_the_minimums(follow_ups: list[dict[str, Any]], switches: list[dict[str, Any]]) -> None:
    assert len(follow_ups) >= MIN_FOLLOW_UPS and len(switches) >= MIN_SWITCHES
    kinds = Counter(row["kind"] for row in follow_ups)
    assert set(kinds) == KINDS, kinds
    assert min(kinds.values()) >= 0.08 * len(follow_ups), f"a kind is too rare: {kinds}"
    assert {row["kind"] for row in switches} == {"switch"}


def test_turn2_targets_are_never_reused(follow_ups: list[dict[str, Any]],
                                        switches: list[dict[str, Any]]) -> None:
    repeated = [k for k, n in Counter(targets(follow_ups) + targets(switches)).items() if n > 1]
    assert not repeated, f"dev questions used twice as a turn-2 target: {repeated}"


def test_follow_ups_leave_something_out_and_switches_do_not(follow_ups: list[dict[str, Any]],
                                                          switches: list[dict[str, Any]]) -> None:
    for row in follow_ups:
        assert row["turn2"]["question"] != row["turn2"]["resolved"], row["id"]
        assert len(row["turn2"]["question"]) < len(row["turn2"]["resolved"]) + 20, row["id"]
    for row in switches:
        assert row["turn2"]["question"] == row["turn2"]["resolved"], row["id"]


@needs_data
def test_targets_are_dev_questions_verbatim(follow_ups: list[dict[str, Any]], switches: list[dict[str, Any]],
                                            dev: dict[str, dict[str, Any]]) -> None:
    for row in follow_ups + switches:
        target = row["turn2"]["resolves_to"]
        assert target in dev, f"{row['id']}: {target} is not a dev id"
        assert row["turn2"]["resolved"] == dev[target]["question"], row["id"]
        if row["turn1"].get("dev_id"):
            assert row["turn1"]["question"] == dev[row["turn1"]["dev_id"]]["question"], row["id"]


@needs_data
def test_sets_cover_both_halves_and_null_questions(follow_ups: list[dict[str, Any]],
                                                   switches: list[dict[str, Any]],
                                                   dev: dict[str, dict[str, Any]]) -> None:
    for rows in (follow_ups, switches):
        halves = Counter(half(t) for t in targets(rows))
        assert min(halves["A"], halves["B"]) >= 0.4 * len(rows), halves
    null = [t for t in targets(follow_ups) if dev[t]["type"] == "Null"]
    assert len(null) >= MIN_NULL_FOLLOW_UPS
    assert {half(t) for t in null} == {"A", "B"}


@needs_data
def test_turn1_answers_are_quoted_from_their_chat(follow_ups: list[dict[str, Any]],
                                                  switches: list[dict[str, Any]],
                                                  chats: dict[str, str]) -> None:
    for row in follow_ups + switches:
        turn1 = row["turn1"]
        assert turn1["evidence"] in chats, f"{row['id']}: no conversation at {turn1['evidence']}"
        for quote in turn1["quote"]:
            assert quote in chats[turn1["evidence"]], f"{row['id']}: {quote!r} is not in that chat"


@needs_data
def test_switches_change_conversation(switches: list[dict[str, Any]], dev: dict[str, dict[str, Any]]) -> None:
    for row in switches:
        target = dev[row["turn2"]["resolves_to"]]
        assert row["turn1"]["evidence"] not in normalise_evidence(target["evidence"]), row["id"]
