"""A real ``edge-rag serve`` process on a free loopback port, and a small HTTP client for it."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from .conftest import ROOT, SMALL_SLM

TOKEN = "test-token-0123456789abcdef"


def small_profile(folder: Path) -> Path:
    """A profile TOML that answers with the small test SLM."""
    path = folder / "small.toml"
    path.write_text(f'[runtime]\nthreads = 2\n[models]\nslm = "{SMALL_SLM}"\n', encoding="utf-8")
    return path


def copy_index(index: Path, folder: Path) -> Path:
    """A private copy of a shared index (the server writes to it)."""
    target = folder / "index"
    shutil.copytree(index, target, ignore=shutil.ignore_patterns("*.lock"))
    return target


class Server:
    """``edge-rag serve --json`` in a subprocess; ``url`` once it printed that it is ready."""

    def __init__(self, index: Path, profile: Path, *extra: str, token: str | None = TOKEN,
                 cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        env.pop("EDGE_RAG_TOKEN", None)
        if token:
            env["EDGE_RAG_TOKEN"] = token
        self.token = token
        self.process = subprocess.Popen(
            [sys.executable, "-m", "edge_rag.cli", "serve", "--index", str(index), "--profile",
             str(profile), "--port", "0", "--json", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd or ROOT)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line:
            self.process.wait(30)
            raise RuntimeError(f"the server did not start: {self.process.stderr.read()}")  # type: ignore[union-attr]
        self.url = json.loads(line)["url"]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Signal the server and wait for its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)

    def request(self, method: str, path: str, body: Any = None, token: str | None = "default",
                headers: dict[str, str] | None = None, raw: bytes | None = None) -> Response:
        """One HTTP request; JSON in and out (``raw`` sends bytes as they are)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        sent = {"Content-Type": "application/json", **(headers or {})}
        token = self.token if token == "default" else token
        if token:
            sent["Authorization"] = f"Bearer {token}"
        call = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(call, timeout=300) as reply:
                return Response(reply.status, dict(reply.headers), reply.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, dict(error.headers), error.read())


    def oversized(self, path: str, size: int) -> Response:
        """POST ``size`` bytes, stopping when the server has answered and closed (as it should
        before the body is in)."""
        url = urllib.parse.urlparse(self.url)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        connection.putrequest("POST", path)
        for name, value in (("Content-Type", "application/json"), ("Content-Length", str(size)),
                            ("Authorization", f"Bearer {self.token}")):
            connection.putheader(name, value)
        connection.endheaders()
        piece = b"x" * 65536
        with contextlib.suppress(OSError):
            for _ in range(size // len(piece)):
                connection.send(piece)
        reply = connection.getresponse()
        return Response(reply.status, dict(reply.getheaders()), reply.read())


class Response:
    """Status, headers (lower-case names) and body of a reply."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


def multipart(field: str, filename: str, content: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with one file, and its content type."""
    boundary = f"edge-rag-test-{time.time_ns()}"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    return head + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"
