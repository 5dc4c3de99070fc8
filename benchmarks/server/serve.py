"""Serve: concurrent clients against a local ``edge-rag serve`` for a fixed time.

    python -m benchmarks serve [--profile dev] [--seconds 60] [--chat 4] [--retrieve 8] [--queue 2]
                               [--overhead 200]

One run, on loopback, over a copy of the LiHua-World index:

1. the ``ask`` peak RSS of the profile, measured as the ``memory`` benchmark does (a fresh process
   answering two questions);
2. the server's retrieve overhead: ``--overhead`` distinct questions, each retrieved once by the
   library in this process and once through ``POST /v1/retrieve`` (keep-alive connection; which
   goes first alternates), p50 against p50;
3. the load: ``--chat`` clients asking questions (every other one streamed) and ``--retrieve``
   clients retrieving, all at once for ``--seconds``; a 503 must carry ``Retry-After`` (the
   client waits that long, at most 2 s, and goes on); every request started is answered. An
   error is any other status, a stream that does not end with ``[DONE]``, an answer without
   sources;
4. SIGTERM during a streamed answer: the exit code, the seconds to exit, and whether the index
   opens clean (SQLite integrity check, a retrieval).

Reported per endpoint: requests, errors, 503s, p50/p95 latency; the server's peak RSS (VmHWM)
against the ``ask`` peak + 60 MiB, the retrieve overhead against 5 ms. Writes ``serve.json`` and
``serve.md``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.core.datasets import DATASETS, open_index
from benchmarks.core.measure import percentiles
from benchmarks.core.options import options
from benchmarks.core.paths import RESULTS, ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings

RSS_MARGIN_MB = 60
OVERHEAD_LIMIT_MS = 5.0
MAX_RETRY_WAIT = 2.0


def main(argv: list[str] | None = None) -> int:
    """Run every phase; print and write the tables."""
    args = _parser().parse_args(argv)
    dataset = DATASETS["lihua"]
    with open_index(dataset, args.profile, progress=False) as rag:
        source = rag.directory
    questions = [q["question"] for q in dataset.queries()]
    with tempfile.TemporaryDirectory(prefix="edge-rag-serve-") as work:
        index = Path(work) / "index"
        shutil.copytree(source, index, ignore=shutil.ignore_patterns("*.lock"))
        result = run(args, index, questions)
    table = _table(result)
    print(table)
    (RESULTS / "serve.md").write_text(table + "\n", encoding="utf-8")
    print(f"wrote {write_result('serve', result, Settings.load(args.profile))}")
    return 0 if result["acceptance"]["met"] else 1


def run(args: argparse.Namespace, index: Path, questions: list[str]) -> dict[str, Any]:
    """The four phases against one server process."""
    _say("ask peak RSS (the memory benchmark's child)")
    ask_peak = _ask_peak(args.profile)
    server = _start(index, args.profile, args.queue)
    try:
        _say(f"retrieve overhead over {args.overhead} questions")
        overhead = _overhead(server["url"], index, args.profile, questions[: args.overhead])
        _say(f"load: {args.chat} chat + {args.retrieve} retrieve clients for {args.seconds:.0f} s")
        endpoints = _load(server["url"], questions, args)
        peak = _vm_hwm(server["process"].pid)
        _say("SIGTERM during a streamed answer")
        shutdown = _sigterm(server, questions[0])
    finally:
        if server["process"].poll() is None:
            server["process"].kill()
    shutdown["index_clean"] = _index_clean(index, args.profile, questions[0])
    errors = sum(e["errors"] for e in endpoints.values())
    limit = round(ask_peak + RSS_MARGIN_MB, 1)
    checks = {"errors_besides_503": errors == 0, "peak_rss_within_ask_plus_60": peak <= limit,
              "retrieve_overhead_p50_within_5ms": overhead["overhead_p50_ms"] <= OVERHEAD_LIMIT_MS,
              "sigterm_exit_0_within_5s": shutdown["exit_code"] == 0 and shutdown["seconds"] <= 5,
              "index_clean": shutdown["index_clean"]}
    return {"profile": args.profile, "seconds": args.seconds, "chat_clients": args.chat,
            "load_average_1min": round(os.getloadavg()[0], 1),  # other work on the machine shows here
            "retrieve_clients": args.retrieve, "queue": args.queue, "endpoints": endpoints,
            "server_peak_rss_mb": round(peak, 1), "ask_peak_rss_mb": round(ask_peak, 1),
            "rss_limit_mb": limit, "retrieve_overhead": overhead, "shutdown": shutdown,
            "acceptance": {**checks, "met": all(checks.values())}}


def _ask_peak(profile: str) -> float:
    command = [sys.executable, "-m", "benchmarks.slm.memory", "--child", "--dataset", "lihua",
               "--profiles", profile, "--methods", "vector", "--questions", "2"]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
    return float(json.loads(done.stdout)["peak_rss_mb"])


def _start(index: Path, profile: str, queue: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "edge_rag.cli", "serve", "--index", str(index), "--profile", profile,
               "--host", "127.0.0.1", "--port", "0", "--json", "--queue", str(queue)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = process.stdout.readline() if process.stdout else ""
    if not line:
        raise SystemExit(f"the server did not start (exit {process.wait()})")
    return {"process": process, "url": json.loads(line)["url"]}


class Client:
    """A keep-alive HTTP connection to the server."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.connection = http.client.HTTPConnection(host, int(port), timeout=600)

    def post(self, path: str, body: dict[str, Any]) -> http.client.HTTPResponse:
        """Send a JSON POST; the caller reads the reply."""
        self.connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        return self.connection.getresponse()


def _overhead(url: str, index: Path, profile: str, questions: list[str]) -> dict[str, Any]:
    client, library, server = Client(url), [], []  # type: Client, list[float], list[float]
    with EdgeRAG.open(index, profile, create=False) as rag:
        rag.retrieve("warm up", method="vector")
        client.post("/v1/retrieve", {"question": "warm up"}).read()
        for number, question in enumerate(questions):
            calls = [(library, lambda q=question: rag.retrieve(q, method="vector")),
                     (server, lambda q=question: client.post("/v1/retrieve", {"question": q}).read())]
            for times, call in calls if number % 2 else calls[::-1]:  # either goes first as often
                start = time.perf_counter()
                call()
                times.append((time.perf_counter() - start) * 1000)
    lib, srv = percentiles(library, 2), percentiles(server, 2)
    return {"questions": len(questions), "library_ms": lib, "server_ms": srv,
            "overhead_p50_ms": round(srv["p50"] - lib["p50"], 2)}


def _load(url: str, questions: list[str], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    records: dict[str, list[tuple[str, float]]] = {"chat": [], "chat stream": [], "retrieve": []}
    deadline = time.monotonic() + args.seconds
    threads = [threading.Thread(target=_chat_client, args=(url, questions, i, deadline, records))
               for i in range(args.chat)]
    threads += [threading.Thread(target=_retrieve_client, args=(url, questions, i, deadline, records))
                for i in range(args.retrieve)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {name: _summary(rows) for name, rows in records.items()}


def _chat_client(url: str, questions: list[str], number: int, deadline: float,
                 records: dict[str, list[tuple[str, float]]]) -> None:
    client, turn = Client(url), 0
    while time.monotonic() < deadline:
        question = questions[(number * 97 + turn) % len(questions)]
        stream = turn % 2 == 1
        turn += 1
        start = time.perf_counter()
        outcome = _ask(client, question, stream)
        records["chat stream" if stream else "chat"].append((outcome, (time.perf_counter() - start) * 1000))
        if outcome.startswith("503:"):
            time.sleep(min(MAX_RETRY_WAIT, float(outcome[4:])))
        elif outcome != "ok":
            client = Client(url)


def _ask(client: Client, question: str, stream: bool) -> str:
    try:
        reply = client.post("/v1/chat/completions", {"stream": stream,
                                                     "messages": [{"role": "user", "content": question}]})
        body = reply.read().decode()
    except (OSError, http.client.HTTPException) as exc:
        return f"error: {exc}"
    if reply.status == 503:
        retry = reply.getheader("Retry-After")
        return f"503:{retry}" if retry and retry.isdigit() else "error: 503 without Retry-After"
    if reply.status != 200:
        return f"error: {reply.status}"
    return "ok" if _answered(body, stream) else "error: incomplete answer"


def _answered(body: str, stream: bool) -> bool:
    if not stream:
        data = json.loads(body)
        return bool(data["choices"][0]["message"]["content"] and data["sources"])
    events = [line[6:] for line in body.splitlines() if line.startswith("data: ")]
    if not events or events[-1] != "[DONE]":
        return False
    last = json.loads(events[-2])
    return "error" not in last and bool(last["choices"][0]["finish_reason"] and last["sources"])


def _retrieve_client(url: str, questions: list[str], number: int, deadline: float,
                     records: dict[str, list[tuple[str, float]]]) -> None:
    client, turn = Client(url), 0
    while time.monotonic() < deadline:
        question = questions[(number * 53 + turn) % len(questions)]
        turn += 1
        start = time.perf_counter()
        try:
            reply = client.post("/v1/retrieve", {"question": question, "method": "vector"})
            chunks = json.loads(reply.read())["chunks"] if reply.status == 200 else None
            outcome = "ok" if chunks else f"error: {reply.status}"
        except (OSError, http.client.HTTPException, ValueError) as exc:
            outcome, client = f"error: {exc}", Client(url)
        records["retrieve"].append((outcome, (time.perf_counter() - start) * 1000))


def _summary(rows: list[tuple[str, float]]) -> dict[str, Any]:
    answered = [ms for outcome, ms in rows if outcome == "ok"]
    errors = [outcome for outcome, _ in rows if outcome.startswith("error")]
    return {"requests": len(rows), "answered": len(answered), "errors": len(errors),
            "rejected_503": sum(outcome.startswith("503:") for outcome, _ in rows),
            "error_kinds": sorted(set(errors))[:5], "ms": percentiles(answered, 1)}


def _vm_hwm(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _sigterm(server: dict[str, Any], question: str) -> dict[str, Any]:
    client = Client(server["url"])
    reply = client.post("/v1/chat/completions", {"stream": True,
                                                 "messages": [{"role": "user", "content": question}]})
    reply.readline()  # the stream has begun
    start = time.monotonic()
    server["process"].send_signal(signal.SIGTERM)
    code = server["process"].wait(60)
    return {"exit_code": code, "seconds": round(time.monotonic() - start, 2)}


def _index_clean(index: Path, profile: str, question: str) -> bool:
    with sqlite3.connect(index / "index.sqlite") as db:
        intact = db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with EdgeRAG.open(index, profile, create=False) as rag:
        return intact and bool(rag.retrieve(question, method="vector").chunks)


def _table(result: dict[str, Any]) -> str:
    rows = [[name, e["requests"], e["answered"], e["errors"], e["rejected_503"], e["ms"]["p50"],
             e["ms"]["p95"]]
            for name, e in result["endpoints"].items()]
    overhead, shutdown = result["retrieve_overhead"], result["shutdown"]
    summary = markdown_table(
        ["server peak RSS MiB", "ask peak RSS MiB", "limit MiB", "retrieve p50 library ms",
         "retrieve p50 server ms", "overhead ms", "SIGTERM exit", "exit s", "index clean"],
        [[result["server_peak_rss_mb"], result["ask_peak_rss_mb"], result["rss_limit_mb"],
          overhead["library_ms"]["p50"], overhead["server_ms"]["p50"], overhead["overhead_p50_ms"],
          shutdown["exit_code"], shutdown["seconds"], shutdown["index_clean"]]])
    return "\n\n".join([markdown_table(["endpoint", "requests", "answered", "errors", "503s", "p50 ms",
                                        "p95 ms"], rows), summary])


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _parser() -> argparse.ArgumentParser:
    shared = options(profile="dev")
    parser = argparse.ArgumentParser(parents=[shared], prog="python -m benchmarks serve",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration (default: %(default)s)")
    parser.add_argument("--chat", type=int, default=4, help="chat clients (default: %(default)s)")
    parser.add_argument("--retrieve", type=int, default=8, help="retrieve clients (default: %(default)s)")
    parser.add_argument("--queue", type=int, default=2,
                        help="the server's --queue: answers waiting behind the running one (default: "
                        "%(default)s, fewer than the chat clients, so that the queue fills)")
    parser.add_argument("--overhead", type=int, default=200,
                        help="questions for the retrieve overhead (default: %(default)s)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
