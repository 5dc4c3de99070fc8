"""Who may talk to the server and what a request may carry.

Loopback unless told otherwise; any other address needs a token (``--token-file`` or
``EDGE_RAG_TOKEN``); with a token every path but ``/health`` and the chat page needs
``Authorization: Bearer TOKEN``, compared in constant time. Bodies over the limit are refused
(413) before they are read whole. Errors are JSON ``{"error": {"message", "type"}}`` without a
traceback or a file path.

Design: docs/design/serve.md
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from ..errors import EdgeRagError

TOKEN_ENV = "EDGE_RAG_TOKEN"
OPEN_PATHS = ("/health", "/")
MIN_TOKEN_CHARS = 16  # the shortest token accepted (serve.md)
# An absolute path of two parts or more ("/home/pi/index/x"): never shown to a client.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"]+/)+[^\s/'\"]*")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(EdgeRagError):
    """A request body over the server's limit."""


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; any other name or address is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_token(token_file: Path | None) -> str | None:
    """The API token from ``--token-file`` (first line) or ``$EDGE_RAG_TOKEN``, or None."""
    if token_file is not None:
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
    """ASGI middleware: the bearer token on protected paths, then the body size limit."""

    def __init__(self, app: ASGIApp, token: str | None, limit: Callable[[str], int]) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope):
            await send_error(send, 401, "unauthorized", "authentication_error",
                             [(b"www-authenticate", b"Bearer")])
            return
        limit = self.limit(scope["path"])
        if _declared_length(scope) > limit:
            await send_error(send, 413, f"the request body is over {limit:,} bytes", "invalid_request_error")
            return
        await self.app(scope, _capped(receive, limit), send)

    def _allowed(self, scope: Scope) -> bool:
        if self.token is None or scope["path"] in OPEN_PATHS:
            return True
        given = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, value = given.partition(b" ")
        return hmac.compare_digest(value.strip() if scheme.lower() == b"bearer" else b"", self.token)


def _declared_length(scope: Scope) -> int:
    value = dict(scope["headers"]).get(b"content-length", b"0")
    return int(value) if value.isdigit() else 0


def _capped(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises BodyTooLarge once the body passes ``limit`` bytes (chunked bodies
    declare no length)."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise BodyTooLarge(f"the request body is over {limit:,} bytes")
        return message

    return wrapped
