"""Connections a board can hold: a cap, a deadline for request headers, the open-file limit and
logs that a flood cannot grow.

uvicorn answers 503 to a request once it holds ``serve_connections`` connections
(``limit_concurrency``) and closes an idle keep-alive connection after
``serve_keep_alive_seconds``; on top of that, ``protocol`` closes a connection whose request
headers have not all arrived ``serve_header_seconds`` after it opened (or after its last answer),
and, when a new connection brings the count to the cap, the oldest one still waiting for its
headers, so that connections sending headers slowly never lock out a client that sends them at
once. At start the soft limit on open files is raised to the hard one (up to ``OPEN_FILES``); a
message the event loop or uvicorn logs again and again (an accept error per connection, a 503
per request) is written once a minute with the count of those left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

OPEN_FILES = 65536
LOG_EVERY_SECONDS = 60.0
NOISY_LOGGERS = ("asyncio", "uvicorn.error")


def protocol(header_seconds: float, cap: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header deadline and eviction of the oldest connection still
    waiting for its headers once ``cap`` connections are open."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        """One connection: it must send a request's headers within ``header_seconds``."""

        waiting_since = 0.0
        header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_headers()
            if len(self.connections) >= cap:
                _evict_oldest_waiting(self.connections, self)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
            super().connection_lost(exc)

        def waiting(self) -> bool:
            """No request in progress: between requests, or its headers still coming."""
            return not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete)

        def _await_headers(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
            self.waiting_since = time.monotonic()
            self.header_timer = self.loop.call_later(header_seconds, self._headers_late, self.cycle)

        def _headers_late(self, cycle: Any) -> None:
            if self.cycle is cycle and not self.transport.is_closing():  # no new request began
                self.transport.close()

    return Guarded


def _evict_oldest_waiting(connections: Any, newcomer: Any) -> None:
    """Close the connection that has waited longest for its request headers (not ``newcomer``)."""
    waiting = [c for c in connections if c is not newcomer and getattr(c, "waiting", lambda: False)()]
    if waiting:
        min(waiting, key=lambda c: c.waiting_since).transport.close()


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
