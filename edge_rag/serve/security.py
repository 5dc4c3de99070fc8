"""Who may talk to the server and what a request may carry.

Loopback unless told otherwise; any other address needs a token (``--token-file`` or
``EDGE_RAG_TOKEN``, a file other users cannot read); with a token every path but ``/health`` and
the chat page needs ``Authorization: Bearer TOKEN``, compared in constant time, and ``/health``
without it says only that the server is up. No web page can drive the server: a ``Host`` that is
not loopback, the address listened on or an ``--allow-host`` name is refused (DNS rebinding), as
is an ``Origin`` that is not the server's own or a ``--cors-origin`` (403, before anything is
read); a POST carries ``application/json`` (an upload ``multipart/form-data``), else 415, so a
page's form or ``text/plain`` request never reaches a route. Bodies over the limit are refused
(413) before they are read whole, and a body must arrive within the request's time limit (408).
Errors are JSON ``{"error": {"message", "type"}}`` without a traceback or a file path.
Design: docs/design/serve.md
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EdgeRagError
from ..store.cipher import check_private

TOKEN_ENV = "EDGE_RAG_TOKEN"
OPEN_PATHS = ("/health", "/")
MIN_TOKEN_CHARS = 16  # the shortest token accepted (serve.md)
JSON = "application/json"
MULTIPART = "multipart/form-data"
UPLOAD_PATH = "/v1/documents"
WILDCARDS = ("0.0.0.0", "::", "")
# An absolute path of two parts or more ("/home/pi/index/x"): never shown to a client.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"]+/)+[^\s/'\"]*")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(EdgeRagError):
    """A request body over the server's limit."""


class SlowBody(EdgeRagError):
    """A request body that did not arrive within the request's time limit."""


@dataclass
class Rules:
    """What the guard lets through: the token, the names a ``Host`` may give besides loopback
    (``--allow-host`` and the address listened on), the origins besides the server's own
    (``--cors-origin``), the body limit of a path and the time a body may take."""

    token: str | None = None
    hosts: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    limit: Callable[[str], int] = lambda path: 1 << 20
    body_seconds: float = 120.0


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; any other name or address is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_token(token_file: Path | None, insecure: bool = False) -> str | None:
    """The API token from ``--token-file`` (first line; a file other users cannot read unless
    ``insecure``) or ``$EDGE_RAG_TOKEN``, or None."""
    if token_file is not None:
        check_private(token_file, "token file", insecure)
        try:
            lines = token_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise EdgeRagError(f"cannot read the token file: {exc.__class__.__name__}") from None
        token = lines[0].strip() if lines else ""
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token and token_file is not None:
        raise EdgeRagError("the token file is empty")
    if token and len(token) < MIN_TOKEN_CHARS:
        raise EdgeRagError(f"the token is shorter than {MIN_TOKEN_CHARS} characters: use a long random "
                           "one (python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return token or None


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token."""
    if not is_loopback(host) and token is None:
        raise EdgeRagError(f"refusing to listen on {host} without a token: give --token-file FILE or "
                           f"set {TOKEN_ENV} (or listen on 127.0.0.1)")


def clean_message(message: str) -> str:
    """An error message fit for a client: one line, no absolute paths."""
    return ABSOLUTE_PATH.sub("<path>", " ".join(message.split()))[:500]


def error_body(message: str, kind: str) -> bytes:
    """The OpenAI-style JSON error."""
    return json.dumps({"error": {"message": clean_message(message), "type": kind}}).encode()


async def send_error(send: Send, status: int, message: str, kind: str,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer a request with a JSON error straight from ASGI middleware."""
    body = error_body(message, kind)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware: the ``Host`` and ``Origin`` (403), the bearer token on protected paths
    (401), the content type of a POST (415), then the body size limit (413) and time (408). It
    tells the app whether the request showed the token (``request.state.authorized``)."""

    def __init__(self, app: ASGIApp, rules: Rules) -> None:
        self.app = app
        self.rules = rules
        self.token = rules.token.encode() if rules.token else None
        self.hosts = {h.lower().strip("[]") for h in rules.hosts if h not in WILDCARDS}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, message, kind, extra = refusal
            await send_error(send, status, message, kind, extra)
            return
        scope.setdefault("state", {})["authorized"] = self._authorized(headers)
        limit = self.rules.limit(scope["path"])
        deadline = time.monotonic() + self.rules.body_seconds
        await self.app(scope, _capped(receive, limit, deadline), send)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str, str, Any] | None:
        host = headers.get(b"host", b"").decode("latin-1")
        if host and not self._host_allowed(host):
            return 403, "this Host is not served: start the server with --allow-host NAME", "forbidden", None
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and origin != f"http://{host}" and origin not in self.rules.origins:
            return 403, "requests from other web pages are refused (see --cors-origin)", "forbidden", None
        if scope["path"] not in OPEN_PATHS and not self._authorized(headers):
            return 401, "unauthorized", "authentication_error", [(b"www-authenticate", b"Bearer")]
        if scope["method"] == "POST" and not _content_allowed(scope["path"], headers):
            return 415, (f"a POST carries {JSON}" + (f" or {MULTIPART}" if scope["path"] == UPLOAD_PATH
                                                     else "")), "invalid_request_error", None
        limit = self.rules.limit(scope["path"])
        if _declared_length(headers) > limit:
            return 413, f"the request body is over {limit:,} bytes", "invalid_request_error", None
        return None

    def _host_allowed(self, host: str) -> bool:
        name = _host_name(host)
        return is_loopback(name) or name in self.hosts

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        if self.token is None:
            return True
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        return hmac.compare_digest(value.strip() if scheme.lower() == b"bearer" else b"", self.token)


def _host_name(host: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:8765`` -> ``::1``), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _content_allowed(path: str, headers: dict[bytes, bytes]) -> bool:
    kind = headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()
    return kind == JSON or (path == UPLOAD_PATH and kind == MULTIPART)


def _declared_length(headers: dict[bytes, bytes]) -> int:
    value = headers.get(b"content-length", b"0")
    return int(value) if value.isdigit() else 0


def _capped(receive: Receive, limit: int, deadline: float) -> Receive:
    """``receive`` that raises BodyTooLarge once the body passes ``limit`` bytes (chunked bodies
    declare no length), and SlowBody when it has not arrived by ``deadline`` (once it is in,
    waiting for the client to leave has no deadline)."""
    seen, complete = 0, False

    async def wrapped() -> Message:
        nonlocal seen, complete
        if complete:
            return await receive()
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            raise SlowBody("the request body did not arrive within the time limit") from None
        complete = not message.get("more_body", False)
        seen += len(message.get("body", b""))
        if seen > limit:
            raise BodyTooLarge(f"the request body is over {limit:,} bytes")
        return message

    return wrapped
