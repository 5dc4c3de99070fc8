"""Issue 61's attack table, row by row, against a real ``edge-rag serve`` on 127.0.0.1 over real
HTTP, with the issue's thresholds. The attacks are ``benchmarks/hostile_server.py``'s (which
measures them into a table); here each one must hold."""

from __future__ import annotations

import logging
import resource
from pathlib import Path

import pytest

from benchmarks import hostile_server as hostile
from edge_rag.serve.connections import OPEN_FILES

from .serve_helpers import copy_index, small_profile

pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def open_server(lihua_index: Path, tmp_path_factory: pytest.TempPathFactory):
    """A server without a token on loopback (the default a board runs) over a copy of the index."""
    folder = tmp_path_factory.mktemp("open")
    server = hostile.Served(copy_index(lihua_index, folder), small_profile(folder), work=folder)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def guarded_server(lihua_index: Path, tmp_path_factory: pytest.TempPathFactory):
    """A server with a token and a short time limit, started with a board's soft limit of 1,024
    open files."""
    folder = tmp_path_factory.mktemp("guarded")
    server = hostile.Served(copy_index(lihua_index, folder), small_profile(folder), "--timeout",
                            str(hostile.TIMEOUT), token=hostile.TOKEN, open_files=1024, work=folder)
    yield server
    assert server.stop() == 0


def _held(row: hostile.Row) -> hostile.Row:
    assert row["held"], row
    return row


def test_a_web_page_can_neither_write_nor_ask_through_a_server_without_a_token(open_server) -> None:
    row = _held(hostile.cross_origin(open_server))
    assert row["statuses"] == [403, 403, 403, 403, 415] and row["documents_written"] == 0


def test_a_rebound_host_name_is_refused_and_reads_nothing(open_server) -> None:
    row = _held(hostile.rebinding(open_server))
    assert row["statuses"] == [403] * 4 and not row["leaked"] and row["localhost_status"] == 200


@pytest.mark.parametrize("attack", ["docx_attack", "zip_attack", "lying_zip_attack", "pdf_attack"])
def test_a_bomb_is_one_refused_upload_in_seconds_and_the_memory_stays(open_server, attack: str) -> None:
    row = _held(getattr(hostile, attack)(open_server))
    assert row["status"] == 400 and row["seconds"] <= hostile.REFUSE_SECONDS
    assert row["rss_growth_mib"] <= hostile.RSS_GROWTH_MIB and row["documents_written"] == 0
    assert "max_inflated_mb" in row["message"] or "cannot read zip member" in row["message"]


def test_a_word_of_two_megabytes_leaves_every_answer_working(open_server) -> None:
    row = _held(hostile.word_of_megabytes(open_server))
    assert row["upload_status"] == 201 and row["answer_statuses"] == [200, 200, 200]
    assert 0 < row["longest_chunk_chars"] <= 2048


def test_a_deleted_phrase_is_in_no_index_file_while_serving_nor_after_kill_9(lihua_index: Path,
                                                                             tmp_path: Path) -> None:
    server = hostile.Served(copy_index(lihua_index, tmp_path), small_profile(tmp_path), work=tmp_path)
    row = _held(hostile.deleted_text(server))
    assert row["written_before"]  # the phrase was on disk before the delete (the write-ahead log)
    assert row["files_holding_while_serving"] == {} and row["files_holding_after_kill"] == {}


def test_an_upload_past_its_time_limit_leaves_the_index_as_it_was(guarded_server) -> None:
    row = _held(hostile.timed_out_upload(guarded_server, hostile.TIMEOUT))
    assert row["status"] == 504 and row["index_as_it_was"] and row["next_insert_status"] == 201


def test_a_health_flood_does_not_refuse_a_token_holders_retrieve(guarded_server) -> None:
    row = _held(hostile.health_flood(guarded_server))
    assert row["retrieve_statuses"] == [200] and row["retrieves"] > 0 and row["health_answered"] > 0


@pytest.mark.slow
def test_slow_connections_leave_health_answering_and_the_log_small(guarded_server) -> None:
    row = _held(hostile.slow_connections(guarded_server))
    assert row["health_answered"] == row["health_probes"] > 10 and row["log_bytes"] < hostile.LOG_BYTES
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # the server's too (it was only lowered softly)
    raised = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    assert row["open_files_limit"] == raised  # from the 1,024 it was started with, where allowed


def test_a_32_character_passphrase_is_derived_not_taken_as_a_raw_key(lihua_index: Path,
                                                                     tmp_path: Path) -> None:
    pytest.importorskip("sqlcipher3")
    row = _held(hostile.derived_key(tmp_path, lihua_index, small_profile(tmp_path)))
    assert row["retrieve_status"] == 200 and row["opens_as"] == {"raw": False, "passphrase": True}


def test_loose_key_and_token_files_and_a_short_passphrase_are_refused(lihua_index: Path,
                                                                      tmp_path: Path) -> None:
    pytest.importorskip("sqlcipher3")
    row = _held(hostile.loose_files(tmp_path, lihua_index, small_profile(tmp_path)))
    outcomes = row["outcomes"]
    assert outcomes["key file 0644"]["stderr"].endswith(f"run chmod 600 {tmp_path / 'key-0644'}")
    assert outcomes["token file 0644"]["stderr"].endswith(f"run chmod 600 {tmp_path / 'token-0644'}")


def test_a_repeated_log_message_is_written_once_a_minute_with_the_count_left_out() -> None:
    from edge_rag.serve.connections import OncePerMinute

    flood = OncePerMinute(every=60.0)
    records = [logging.LogRecord("asyncio", logging.ERROR, __file__, 1,
                                 "socket.accept() out of system resource\nsocket: fd=%d", (n,), None)
               for n in range(1000)]
    passed = [r for r in records if flood.filter(r)]
    assert passed == records[:1]
    flood.last = {key: (when - 61, left) for key, (when, left) in flood.last.items()}
    late = logging.LogRecord("asyncio", logging.ERROR, __file__, 1,
                             "socket.accept() out of system resource\nsocket: fd=%d", (7,), None)
    assert flood.filter(late) and "999 more like it" in late.getMessage()


def test_host_names_are_read_with_their_port_and_brackets() -> None:
    from edge_rag.serve.security import Guard, Rules

    guard = Guard(lambda scope, receive, send: None, Rules(hosts=["pi.local", "192.168.1.5", "0.0.0.0"]))  # type: ignore
    allowed = ["127.0.0.1:8765", "localhost", "[::1]:8765", "127.0.0.2", "PI.local:80", "192.168.1.5:8765"]
    refused = ["rebind.evil.example:8765", "0.0.0.0:8765", "[::2]:1", "localhost.evil.example", "192.168.1.6"]
    assert all(guard._host_allowed(h) for h in allowed)
    assert not any(guard._host_allowed(h) for h in refused)
