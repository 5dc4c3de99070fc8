"""The bounded load test, small: readers query while a writer inserts and deletes."""

import json

import pytest

from benchmarks.server import load


@pytest.mark.slow
def test_readers_never_fail_nor_see_half_a_document(tmp_path, model_folder):
    output = tmp_path / "load.json"
    code = load.main(["--seconds", "1", "--readers", "4", "--base", "3", "--methods", "vector,dual",
                      "--min-writes", "3", "--work", str(tmp_path), "--output", str(output)])
    result = json.loads(output.read_text())
    assert code == 0 and result["reader_errors"] == 0 and result["errors"] == [], result["errors"]
    assert result["half_documents_seen"] == 0
    assert result["writer"]["inserts"] >= 2 and result["writer"]["deletes"] >= 1
    assert all(n > 0 for n in result["per_reader_queries"]) and result["snapshot_checks"] > 0
