"""``edge-rag serve`` for real: a server process on loopback with the small SLM, the official
``openai`` client, raw HTTP for the security rules, SIGTERM during a streamed answer."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from benchmarks.index import sample_files as files
from edge_rag import EdgeRAG

from .conftest import DIRECTOR, FILM, ROOT, SMALL_SLM
from .serve_helpers import TOKEN, Server, copy_index, multipart, small_profile

QUESTION = "When does Li Hua check in with Adam about moving in?"
LEAKS = ("Traceback", 'File "', "/tmp/", "/root/", "site-packages", str(ROOT))


@pytest.fixture(scope="module")
def served(lihua_index: Path, tmp_path_factory: pytest.TempPathFactory):
    """One server (token required) over a private copy of the LiHua index."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "tmp").mkdir()  # the server's TMPDIR: uploads must write nothing there
    server = Server(copy_index(lihua_index, folder), small_profile(folder), cwd=folder,
                    env={"TMPDIR": str(folder / "tmp")})
    server.folder = folder  # type: ignore[attr-defined]
    yield server
    assert server.stop() == 0


def _client(server: Server):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=server.url + "/v1", api_key=TOKEN, max_retries=0)


def test_the_openai_client_gets_a_whole_answer_with_sources(served: Server) -> None:
    reply = _client(served).chat.completions.create(
        model=SMALL_SLM, messages=[{"role": "user", "content": QUESTION}])
    assert reply.model == SMALL_SLM and reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content.strip()
    sources = reply.model_extra["sources"]
    assert sources and sources[0]["n"] == 1 and sources[0]["text"].strip()
    assert {"doc_id", "source", "chunk_id"} <= set(sources[0])
    assert "/" not in sources[0]["source"]  # a file's name, never a server path
    assert reply.usage.completion_tokens > 0  # no method named: auto, the planner's choice shown
    assert reply.model_extra["method"] == reply.model_extra["plan"]["method"]


def test_the_openai_client_streams_an_answer_with_sources(served: Server) -> None:
    chunks = list(_client(served).chat.completions.create(
        model=SMALL_SLM, stream=True,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.strip() and len(chunks) > 3
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["sources"][0]["text"]
    assert all(c.model == SMALL_SLM for c in chunks)


def test_the_method_rides_in_an_extra_field_and_models_are_listed(served: Server) -> None:
    client = _client(served)
    reply = client.chat.completions.create(model="any", messages=[{"role": "user", "content": QUESTION}],
                                           extra_body={"method": "ppr", "max_tokens": 4})
    assert reply.model_extra["method"] == "ppr"
    assert [m.id for m in client.models.list()] == [SMALL_SLM]


def test_retrieve_answers_chunks_plan_and_timings(served: Server) -> None:
    asked = {"question": QUESTION, "method": "auto", "top_k": 3}
    found = served.request("POST", "/v1/retrieve", asked).json()
    assert len(found["chunks"]) == 3 and found["chunks"][0]["text"] and found["plan"]["method"]
    assert found["timings_ms"]


def test_documents_are_added_listed_found_and_deleted(served: Server) -> None:
    text = "The lighthouse keeper Oswin Marrow repaints the red lantern every April."
    added = served.request("POST", "/v1/documents", {"text": text, "source": "lighthouse.txt"})
    assert added.status == 201, added.body
    doc_id = added.json()["added"][0]
    listed = served.request("GET", "/v1/documents").json()["data"]
    assert {"doc_id": doc_id, "source": "lighthouse.txt"}.items() <= next(
        d for d in listed if d["doc_id"] == doc_id).items()
    found = served.request("POST", "/v1/retrieve", {"question": "Who repaints the red lantern?", "top_k": 1})
    assert found.json()["chunks"][0]["doc_id"] == doc_id
    assert served.request("DELETE", f"/v1/documents/{doc_id}").json()["chunks_deleted"] == 1
    gone = served.request("DELETE", f"/v1/documents/{doc_id}")
    assert gone.status == 404 and gone.json()["error"]["type"] == "not_found"


def test_an_upload_named_to_climb_out_stays_inside(served: Server) -> None:
    folder: Path = served.folder  # type: ignore[attr-defined]
    before = {p for p in folder.parent.rglob("*")}
    body, kind = multipart("file", "../../x.txt", b"Quillon the ferryman sails at dawn on Tuesdays.")
    added = served.request("POST", "/v1/documents", raw=body, headers={"Content-Type": kind})
    assert added.status == 201, added.body
    doc_id = added.json()["added"][0]
    listed = {d["doc_id"]: d["source"] for d in served.request("GET", "/v1/documents").json()["data"]}
    assert listed[doc_id] == "x.txt"
    created = {p for p in folder.parent.rglob("*")} - before
    assert all(p.is_relative_to(folder / "index") for p in created), created
    assert not (folder.parent.parent / "x.txt").exists() and not (folder.parent / "x.txt").exists()
    served.request("DELETE", f"/v1/documents/{doc_id}")


def _upload(server: Server, name: str, data: bytes):
    body, kind = multipart("file", name, data)
    return server.request("POST", "/v1/documents", raw=body, headers={"Content-Type": kind})


def test_uploads_of_every_format_are_read_in_memory_and_found(served: Server, tmp_path: Path) -> None:
    written = tmp_path / "docs"
    files.write_all(written, messages=3)
    folder: Path = served.folder  # type: ignore[attr-defined]
    before, tmp_before = {p for p in folder.parent.rglob("*")}, set((folder / "tmp").iterdir())
    added, warnings = [], []
    for name in ("report.pdf", "harvest.docx", "ferry.html", "order.eml", "players.csv"):
        reply = _upload(served, name, (written / name).read_bytes())
        assert reply.status == 201, reply.body
        added += reply.json()["added"]
        warnings += reply.json()["warnings"]
    assert warnings == ["e-mail attachments are not read (1 skipped, e.g. order.eml/chapel.png)"]
    assert len(added) == 2 + 1 + 1 + 1 + 3  # two PDF pages, three CSV rows
    for fact in (f for f in files.FACTS if f.format in ("pdf", "docx", "html", "eml", "csv")):
        found = served.request("POST", "/v1/retrieve", {"question": fact.question, "method": "vector",
                                                        "top_k": 1}).json()
        assert found["chunks"][0]["source"] == fact.source, (fact, found["chunks"][0])
    created = {p for p in folder.parent.rglob("*")} - before
    assert all(p.is_relative_to(folder / "index") for p in created), created
    assert not any(word in p.name for p in created for word in ("report", "harvest", "ferry", "order"))
    assert set((folder / "tmp").iterdir()) == tmp_before  # (onnxruntime leaves a .ses there at start)
    for doc_id in added:
        served.request("DELETE", f"/v1/documents/{doc_id}")


def test_an_mbox_upload_and_bad_files_of_a_format_are_one_clear_error(served: Server, tmp_path: Path) -> None:
    files.write_mbox(tmp_path / "letters.mbox", 3)
    mbox = _upload(served, "letters.mbox", (tmp_path / "letters.mbox").read_bytes())
    assert mbox.status == 400 and mbox.json()["error"]["message"] == (
        "letters.mbox: upload an .mbox with `edge-rag index` or `sync` (it is read from a file on disk)")
    files.write_renamed_zip(tmp_path / "photos.docx")
    renamed = _upload(served, "photos.docx", (tmp_path / "photos.docx").read_bytes())
    assert renamed.status == 400 and "not a Word .docx document" in renamed.json()["error"]["message"]
    damaged = _upload(served, "cut.pdf", b"%PDF-1.4\n" + b"garbage" * 50)
    assert damaged.status == 400 and "cut.pdf:" in damaged.json()["error"]["message"]


def test_an_upload_whose_extra_is_missing_names_the_install_command(lihua_index: Path,
                                                                    tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for module in ("pypdf", "docx"):
        (blocked / f"{module}.py").write_text("raise ImportError('blocked for this test')\n")
    files.write_pdf(tmp_path / "report.pdf")
    server = Server(copy_index(lihua_index, tmp_path), small_profile(tmp_path), token=None,
                    env={"PYTHONPATH": f"{ROOT}{os.pathsep}{blocked}"})
    try:
        reply = _upload(server, "report.pdf", (tmp_path / "report.pdf").read_bytes())
        assert reply.status == 415, reply.body
        assert reply.json()["error"] == {"type": "invalid_request_error", "message": (
            "reading PDF files needs pypdf, not installed: pip install 'edge-rag[pdf]'")}
        text = {"text": "Still fine.", "source": "a.txt"}
        assert server.request("POST", "/v1/documents", text).status == 201
    finally:
        assert server.stop() == 0


def test_every_protected_endpoint_wants_the_token(served: Server) -> None:
    calls = [("GET", "/v1/models", None), ("POST", "/v1/chat/completions", {"messages": []}),
             ("POST", "/v1/retrieve", {"question": "x"}), ("GET", "/v1/documents", None),
             ("POST", "/v1/documents", {"text": "x"}), ("DELETE", "/v1/documents/abc", None)]
    for token in (None, "wrong-token-0123456789", TOKEN + "x"):
        for method, path, body in calls:
            reply = served.request(method, path, body, token=token)
            assert reply.status == 401, (method, path, token)
            assert reply.json() == {"error": {"message": "unauthorized", "type": "authentication_error"}}
    cors = served.request("GET", "/health", token=None, headers={"Origin": "http://evil.example"})
    assert cors.status == 403 and "access-control-allow-origin" not in cors.headers  # CORS is off
    assert served.request("GET", "/health", token=None).json() == {"status": "ok"}  # up, nothing more
    health = served.request("GET", "/health").json()
    assert health["ready"] and health["models"]["slm"] == SMALL_SLM and health["index"]["documents"] > 0
    page = served.request("GET", "/", token=None)
    assert page.status == 200 and b"<script>" in page.body and "frame-ancestors" in page.headers[
        "content-security-policy"]


def test_bad_input_gets_json_errors_without_tracebacks_or_paths(served: Server) -> None:
    chat, hi = "/v1/chat/completions", [{"role": "user", "content": "hi"}]
    body, kind = multipart("file", "binary.txt", b"\x00\x01\x02" * 100)
    cases = [
        (413, served.oversized(chat, 10 * 2**20)),
        (413, served.oversized("/v1/documents", 20 * 2**20)),
        (400, served.request("POST", chat, raw=b"{not json")),
        (400, served.request("POST", chat, {"messages": "hi"})),
        (400, served.request("POST", chat, {"messages": [{"role": "user", "content": "x" * 5000}]})),
        (400, served.request("POST", chat, {"messages": hi, "method": "magic"})),
        (400, served.request("POST", chat, {"messages": hi, "max_tokens": -1})),
        (400, served.request("POST", "/v1/retrieve", {"question": ""})),
        (400, served.request("POST", "/v1/retrieve", [1, 2])),
        (400, served.request("POST", "/v1/documents", {"text": "   "})),
        (400, served.request("POST", "/v1/documents", raw=body, headers={"Content-Type": kind})),
        (400, served.request("POST", "/v1/documents", raw=b"--x\r\n", headers={
            "Content-Type": "multipart/form-data; boundary=x"})),
        (404, served.request("GET", "/v1/nothing")),
        (405, served.request("GET", chat)),
    ]
    for status, reply in cases:
        assert reply.status == status, (status, reply.status, reply.body[:300])
        error = reply.json()["error"]
        assert set(error) == {"message", "type"} and error["message"]
        assert not any(leak in reply.body.decode() for leak in LEAKS), reply.body


def test_a_client_that_leaves_stops_its_answer(served: Server) -> None:
    before = served.request("GET", "/health").json()["queues"]["generation"]["cancelled"]
    url = urlparse(served.url)
    for _ in range(3):
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        body = json.dumps({"stream": True, "messages": [{"role": "user", "content": QUESTION}]})
        connection.request("POST", "/v1/chat/completions", body, {"Authorization": f"Bearer {TOKEN}",
                                                                   "Content-Type": "application/json"})
        reply = connection.getresponse()
        assert reply.status == 200 and reply.readline().startswith(b"data: ")
        connection.close()  # gone before the answer
    for _ in range(600):
        queues = served.request("GET", "/health").json()["queues"]["generation"]
        if queues["cancelled"] > before and not queues["running"] and not queues["waiting"]:
            break
        time.sleep(0.1)
    assert queues["cancelled"] > before
    again = _client(served).chat.completions.create(model=SMALL_SLM,
                                                    messages=[{"role": "user", "content": QUESTION}])
    assert again.choices[0].message.content


def test_a_full_queue_answers_503_with_retry_after(lihua_index: Path, tmp_path: Path) -> None:
    server = Server(copy_index(lihua_index, tmp_path), small_profile(tmp_path), "--queue", "1", token=None)
    try:
        replies: list = []
        body = {"messages": [{"role": "user", "content": QUESTION}]}
        ask = lambda: replies.append(server.request("POST", "/v1/chat/completions", body))
        threads = [threading.Thread(target=ask) for _ in range(5)]
        for thread in threads:
            thread.start()
        for _ in range(600):
            if server.request("GET", "/health").json()["queues"]["generation"]["running"]:
                break
            time.sleep(0.05)
        retrieved = server.request("POST", "/v1/retrieve", {"question": QUESTION})
        generation = server.request("GET", "/health").json()["queues"]["generation"]
        for thread in threads:
            thread.join()
        assert retrieved.status == 200 and retrieved.json()["chunks"]
        assert generation["running"] or generation["waiting"]  # retrieved while an answer was generated
        busy = [r for r in replies if r.status == 503]
        assert busy and all(int(r.headers["retry-after"]) >= 1 for r in busy)
        assert all(r.json()["error"]["type"] == "unavailable" for r in busy)
        assert all(r.status == 200 for r in replies if r not in busy) and len(busy) < len(replies)
    finally:
        assert server.stop() == 0


def test_a_bridge_question_is_answered_link_by_link_whole_and_streamed(model_folder, tmp_path: Path) -> None:
    from edge_rag.index import Document

    with EdgeRAG.open(tmp_path / "index", progress=False, slm=SMALL_SLM) as rag:
        assert rag.insert(Document.from_text(FILM, "film.txt"), Document.from_text(DIRECTOR, "quill.txt")).ok
    server = Server(tmp_path / "index", small_profile(tmp_path))
    try:
        question = [{"role": "user", "content": "Where was the director of film Harbor Lights born?"}]
        client = _client(server)
        whole = client.chat.completions.create(model=SMALL_SLM, messages=question,
                                               extra_body={"method": "vector"})
        streamed = list(client.chat.completions.create(model=SMALL_SLM, messages=question, stream=True,
                                                       extra_body={"method": "vector"}))
    finally:
        assert server.stop() == 0
    # As in EdgeRAG.ask: the link is asked first, on its own retrieval; its answer is a name from
    # the film's passage.
    [link] = whole.model_extra["hops"]
    assert link["question"] == "Who is the director of film Harbor Lights?"
    assert link["answer"].startswith("Mara Quill")
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", link["answer"])]
    assert cited and all(whole.model_extra["sources"][n - 1]["source"] == "film.txt" for n in cited)
    assert streamed[-1].model_extra["hops"] == [link]
    text = "".join(c.choices[0].delta.content or "" for c in streamed)
    # The finished answer is the whole one; a stream whose finish cut what it had sent (a claim no
    # source holds: "Tallinn, Turkey") ends with the finished answer on a line of its own.
    assert streamed[-1].model_extra["answer"] == whole.choices[0].message.content
    assert text == whole.choices[0].message.content or text.endswith("\n" + whole.choices[0].message.content)
    assert "Turkey" not in whole.choices[0].message.content


def test_sigterm_during_a_streamed_answer_exits_0_and_the_index_opens_clean(lihua_index: Path,
                                                                             tmp_path: Path) -> None:
    index = copy_index(lihua_index, tmp_path)
    server = Server(index, small_profile(tmp_path), token=None)
    url = urlparse(server.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    connection.request("POST", "/v1/chat/completions",
                       json.dumps({"stream": True, "messages": [{"role": "user", "content": QUESTION}]}),
                       {"Content-Type": "application/json"})
    reply = connection.getresponse()
    assert reply.readline().startswith(b"data: ")
    assert server.stop(signal.SIGTERM, timeout=30) == 0
    rest = reply.read().decode()
    assert rest.rstrip().endswith("data: [DONE]") and "Traceback" not in rest
    with sqlite3.connect(index / "index.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with EdgeRAG.open(index, create=False) as rag:
        assert rag.retrieve(QUESTION, top_k=1).chunks


def test_it_refuses_to_listen_beyond_loopback_without_a_token(lihua_index: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "edge_rag.cli", "serve", "--index", str(lihua_index),
               "--host", "0.0.0.0"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1 and "without a token" in done.stderr
    short = tmp_path / "token"
    short.write_text("short\n")
    short.chmod(0o600)
    done = subprocess.run([*command, "--token-file", str(short)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 1 and "shorter than" in done.stderr


def test_importing_edge_rag_does_not_load_the_server_stack() -> None:
    code = ("import edge_rag, edge_rag.cli, sys; "
            "assert not {'starlette', 'uvicorn', 'python_multipart'} & set(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_the_extra_serve_names_the_install_command() -> None:
    code = ("import sys; sys.modules['uvicorn'] = None\n"
            "from edge_rag.serve import require_extra\n"
            "from edge_rag.errors import MissingExtra\n"
            "try:\n    require_extra()\nexcept MissingExtra as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'edge-rag[serve]'" in out


def test_a_chat_request_is_read_into_a_question() -> None:
    from edge_rag.serve.chat import BadRequest, read_chat

    asked = read_chat({"messages": [
        {"role": "user", "content": "Who fixed the heating in the flat?"},
        {"role": "assistant", "content": "Hollis did. [1]"},
        {"role": "user", "content": [{"type": "text", "text": "When did he come?"}]}],
        "max_tokens": 500, "method": "auto", "stream": True}, max_tokens=32)
    assert asked.question == "When did he come?" and asked.stream and asked.method == "auto"
    assert asked.history == [{"role": "user", "content": "Who fixed the heating in the flat?"},
                             {"role": "assistant", "content": "Hollis did. [1]"}]  # read after these
    assert asked.max_tokens == 32  # capped by the profile
    alone = read_chat({"messages": [{"role": "user", "content": "When does Adam move in on Saturday?"}]}, 32)
    assert alone.history == [] and not alone.stream
    with pytest.raises(BadRequest):
        read_chat({"messages": [{"role": "system", "content": "hi"}]}, 32)


def test_a_chunked_body_over_the_limit_is_refused_while_it_streams_in(served: Server) -> None:
    url = urlparse(served.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    pieces = (b"x" * 65536 for _ in range(40))  # 2.5 MiB, no Content-Length
    with contextlib.suppress(OSError):  # the server may answer and close before the body is in
        connection.request("POST", "/v1/retrieve", pieces, {"Authorization": f"Bearer {TOKEN}",
                                                            "Content-Type": "application/json"},
                           encode_chunked=True)
    reply = connection.getresponse()
    assert reply.status == 413 and json.loads(reply.read())["error"]["type"] == "invalid_request_error"


def test_a_lane_runs_one_job_at_a_time_refuses_when_full_and_stops_late_jobs() -> None:
    import asyncio

    from edge_rag.serve.queue import Job, Lane, QueueFull, Stopped

    async def scenario() -> None:
        lane, gate = Lane("test", waiting=1), threading.Event()
        first = lane.submit(Job(lambda job: gate.wait(30) and "first", timeout=60))
        while lane.running is None:
            await asyncio.sleep(0.01)
        late = lane.submit(Job(lambda job: "late", timeout=0))  # its deadline passes while it waits
        with pytest.raises(QueueFull) as full:
            lane.submit(Job(lambda job: "third", timeout=60))
        assert full.value.retry_after >= 1
        gate.set()
        assert await first.result() == "first"
        with pytest.raises(Stopped) as stopped:
            await late.result()
        assert stopped.value.reason == "timeout"
        lane.close()

    asyncio.run(scenario())


def test_a_rules_next_question_is_not_retrieved_for_a_stopped_job() -> None:
    import asyncio

    from edge_rag.serve.chat import stopping
    from edge_rag.serve.queue import Job, Stopped

    asked: list[str] = []

    def retrieve(question: str):
        asked.append(question)
        return question

    async def scenario() -> None:
        live, cancelled = Job(lambda job: None, timeout=60), Job(lambda job: None, timeout=60)
        cancelled.cancel()  # its client left while a link was answered
        assert stopping(live, retrieve)("Who is the director of film X?")
        with pytest.raises(Stopped):
            stopping(cancelled, retrieve)("When was Y released?")
        assert cancelled.stopped == "cancelled"

    asyncio.run(scenario())
    assert asked == ["Who is the director of film X?"]


def test_an_encrypted_index_is_served_with_its_key_file_and_refused_without(lihua_index: Path,
                                                                           tmp_path: Path) -> None:
    index = copy_index(lihua_index, tmp_path)
    key_file = tmp_path / "key"
    key_file.write_text("a long passphrase for the served index\n", encoding="utf-8")
    key_file.chmod(0o600)
    EdgeRAG.change_key(index, None, key_file.read_bytes().rstrip(b"\n"))
    command = [sys.executable, "-m", "edge_rag.cli", "serve", "--index", str(index), "--port", "0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1
    assert done.stderr == "edge-rag: error: index is encrypted: wrong or missing key\n"
    server = Server(index, small_profile(tmp_path), "--key-file", str(key_file))
    try:
        reply = server.request("POST", "/v1/retrieve", {"question": QUESTION, "top_k": 1})
        assert reply.status == 200 and reply.json()["chunks"]
    finally:
        assert server.stop() == 0


def test_the_openai_client_sends_a_conversation_and_a_follow_up_is_resolved(served: Server) -> None:
    first = "Who arranged for a plumber to fix the water tap at Li Hua's place in January?"
    client = _client(served)
    reply = client.chat.completions.create(model=SMALL_SLM, messages=[{"role": "user", "content": first}])
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": first},
                {"role": "assistant", "content": reply.choices[0].message.content},
                {"role": "user", "content": "When does he confirm the plumber will arrive?"}]
    follow = client.chat.completions.create(model=SMALL_SLM, messages=messages)
    plan = follow.model_extra["plan"]
    assert plan["follow_up"] is True and "plumber to fix the water tap" in plan["resolved"]
    assert follow.choices[0].message.content.strip() and follow.model_extra["sources"]
    alone = client.chat.completions.create(model=SMALL_SLM, messages=messages[-1:])
    assert "resolved" not in alone.model_extra["plan"]  # no history: read alone, as before
    found = served.request("POST", "/v1/retrieve", {"question": messages[-1]["content"],
                                                   "history": messages[:-1]}).json()
    assert found["plan"]["resolved"] == plan["resolved"]
    bad = served.request("POST", "/v1/retrieve", {"question": "Who with?", "history": "not a list"})
    assert bad.status == 400 and "messages" in bad.json()["error"]["message"]
