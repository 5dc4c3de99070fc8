"""Connections a board can hold: a cap, a deadline for request headers, the open-file limit and
logs that a flood cannot grow.

uvicorn answers 503 once ``serve_connections`` requests are in progress and closes a keep-alive
connection idle for ``serve_keep_alive_seconds``. ``protocol`` adds what it lacks against
connections that send their headers slowly or never: a connection counts against that limit only
while a request of it is in progress, is closed when its headers take longer than
``serve_header_seconds``, and at most ``PENDING_PER_CONNECTION`` times ``serve_connections`` may
wait so, fewer than the open files (beyond, the oldest is closed). A request that carries the
token is not refused for the requests of others: a flood without it cannot lock its holder out.
At start the soft limit on open files is raised toward the hard one (up to ``OPEN_FILES``); a
message logged again and again is written once a minute with the count of those left out.

Design: docs/design/serve.md
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

# Connections and logs under a flood (docs/design/serve.md).
OPEN_FILES = 65536  # the soft open-file limit is raised toward the hard one, up to this
PENDING_PER_CONNECTION = 16  # connections still sending headers, per allowed request in progress
RESERVED_FILES = 128  # the index, the models, the lanes' files: never taken by waiting connections
LOG_EVERY_SECONDS = 60.0  # a repeated log message is written at most this often
NOISY_LOGGERS = ("asyncio", "uvicorn.error")


def protocol(header_seconds: float, connections: int, open_files: int = 0,
             token: str | None = None) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header deadline and a cap on connections still waiting for
    their request (``PENDING_PER_CONNECTION`` x ``connections``, below ``open_files`` when it is
    known; the oldest is closed beyond); bytes that carry ``token`` are not held to uvicorn's
    count of requests in progress (the guard checks the token itself, in constant time)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    pending: dict[Any, None] = {}  # connections waiting for a request, oldest first
    secret = token.encode() if token else None
    most = PENDING_PER_CONNECTION * connections
    if open_files:
        most = max(connections, min(most, open_files - RESERVED_FILES))

    class Guarded(H11Protocol):
        """One connection: counted by uvicorn only while a request of it is in progress."""

        header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.connections.discard(self)
            self._await_headers()
            while len(pending) > most:
                next(iter(pending)).transport.close()
                pending.pop(next(iter(pending)))

        def data_received(self, data: bytes) -> None:
            if secret is not None and secret in data:
                self.tasks, self.connections = Unseen(self.tasks), Unseen(self.connections)
            try:
                super().data_received(data)
            finally:
                self.tasks, self.connections = self.server_state.tasks, self.server_state.connections
            if self in pending and self.cycle is not None and not self.cycle.response_complete:
                pending.pop(self, None)  # its request began: now uvicorn's to count and close
                self.connections.add(self)

        def on_response_complete(self) -> None:
            super().on_response_complete()  # may begin a pipelined request at once
            if self.cycle.response_complete and not self.transport.is_closing():
                self.connections.discard(self)  # idle: waits for its next request's headers
                self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            pending.pop(self, None)
            if self.header_timer is not None:
                self.header_timer.cancel()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            pending[self] = None
            if self.header_timer is not None:
                self.header_timer.cancel()
            self.header_timer = self.loop.call_later(header_seconds, self._headers_late, self.cycle)

        def _headers_late(self, cycle: Any) -> None:
            if self.cycle is cycle and not self.transport.is_closing():  # no new request began
                self.transport.close()

    return Guarded


class Unseen(set):
    """A set as uvicorn's limit sees it for a token-holder's request: empty (adding and removing
    still reach the set)."""

    def __init__(self, real: set[Any]) -> None:
        super().__init__()
        self.real = real

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Any:
        return iter(self.real)

    def __contains__(self, item: object) -> bool:
        return item in self.real

    def add(self, item: Any) -> None:
        self.real.add(item)

    def discard(self, item: Any) -> None:
        self.real.discard(item)


def raise_open_files(wanted: int = OPEN_FILES) -> int:
    """Raise this process's soft limit on open files toward its hard limit, where the system
    allows; returns the soft limit now (0 where there is none to read)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return int(resource.getrlimit(resource.RLIMIT_NOFILE)[0])


class OncePerMinute(logging.Filter):
    """Lets a message (by its first line) through once per ``every`` seconds; the next one that
    passes says how many were left out."""

    def __init__(self, every: float = LOG_EVERY_SECONDS) -> None:
        super().__init__()
        self.every = every
        self.last: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = record.getMessage().split("\n", 1)[0][:200]
        now = time.monotonic()
        when, left_out = self.last.get(key, (float("-inf"), 0))
        if now - when < self.every:
            self.last[key] = (when, left_out + 1)
            return False
        self.last[key] = (now, 0)
        if left_out:
            record.msg = f"{record.msg} ({left_out:,} more like it in the last minute not logged)"
        return True


def quiet_floods() -> None:
    """Put ``OncePerMinute`` on the loggers a flood of connections writes to."""
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OncePerMinute) for f in logger.filters):
            logger.addFilter(OncePerMinute())
