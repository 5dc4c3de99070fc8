"""Constraint logic without a model: every valid prefix can be finished into a valid output."""

import json

from hypothesis import given
from hypothesis import strategies as st

from edge_rag.models.constraints import JsonObject, OneOf, Records

JSON = JsonObject((("answer", None), ("confidence", ("high", "low"))), max_string=10)
RECORDS = Records((("entity", 3), ("relation", 4)), max_field=10, max_records=4)
LABELS = OneOf(("yes", "no", "maybe"))
ALPHABET = '{}":, abcdefhilgnoyst<|>\nDONEentityrelation?'


def _walk(constraint, choices: list[int]) -> str:
    text = ""
    for choice in choices:
        options = [c for c in ALPHABET if constraint.accepts_prefix(text + c)]
        if not options:
            break
        text += options[choice % len(options)]
    return text


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=80))
def test_every_valid_prefix_finishes_validly(choices):
    for constraint in (JSON, RECORDS, LABELS):
        text = _walk(constraint, choices)
        assert constraint.accepts_prefix(text)
        assert constraint.is_complete(text + constraint.finish(text)), text


def test_json_subset():
    assert JSON.is_complete('{"answer": "7 am", "confidence": "high"}')
    assert json.loads('{"answer": "", "confidence": "low"}')
    assert not JSON.accepts_prefix('{"answer": 7')
    assert not JSON.accepts_prefix('{"answer": "' + "x" * 11)
    assert JSON.finish('{"answer": "7') == '", "confidence": "high"}'


def test_records():
    assert RECORDS.is_complete("entity<|>Bob<|>person<|>a baker\n<|DONE|>")
    assert not RECORDS.accepts_prefix("entity<|>Bob<|>person<|>a<|>b")
    assert not RECORDS.accepts_prefix("thing<|>")
    assert RECORDS.finish("entity<|>Bob") == "<|>?<|>?\n<|DONE|>"


def test_labels():
    assert LABELS.accepts_prefix("ma") and not LABELS.accepts_prefix("x")
    assert LABELS.finish("ma") == "ybe"


def test_records_numeric_fields_take_only_short_numbers():
    records = Records((("relation", 3),), numeric=(("relation", 2),))
    assert records.accepts_prefix("relation<|>a<|>b<|>1")
    assert records.is_complete("relation<|>a<|>b<|>10\n<|DONE|>")
    assert not records.accepts_prefix("relation<|>a<|>b<|>strong")
    assert not records.accepts_prefix("relation<|>a<|>b<|>100")
    assert records.is_complete("relation<|>a<|>b" + records.finish("relation<|>a<|>b"))
