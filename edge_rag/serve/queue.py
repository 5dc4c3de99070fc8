"""Work lanes: one worker thread each, a bounded queue in front of it, jobs that can be stopped.

The server has three lanes, each owning its own handle on the index: ``generation`` (the SLM:
one answer at a time), ``retrieval`` (never waits behind an answer) and ``writing`` (inserts and
deletes, under the index's write lock). A full queue refuses at once (``QueueFull``, answered
503 with ``Retry-After``); a job is stopped between two steps when its client left, its deadline
passed or the server is shutting down.

Design: docs/design/serve.md
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import EdgeRagError

STOP_REASONS = ("cancelled", "timeout", "shutdown")


class QueueFull(EdgeRagError):
    """Too many requests are waiting for a lane; try again after ``retry_after`` seconds."""

    def __init__(self, lane: str, retry_after: int) -> None:
        super().__init__(f"the {lane} queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class Stopped(EdgeRagError):
    """A job stopped before it finished: ``reason`` is cancelled, timeout or shutdown."""

    def __init__(self, reason: str) -> None:
        super().__init__({"timeout": "the request took longer than its time limit",
                          "shutdown": "the server is shutting down"}.get(reason, "request cancelled"))
        self.reason = reason


class Job:
    """Work for a lane; what it emits arrives on the event loop that submitted it."""

    def __init__(self, work: Callable[[Job], Any], timeout: float) -> None:
        self.work = work
        self.deadline = time.monotonic() + timeout
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.lane: Lane | None = None
        self.stopped = ""  # why the work stopped early, set by the work itself
        self._loop = asyncio.get_running_loop()
        self._cancelled = False

    def emit(self, kind: str, value: Any = None) -> None:
        """Send an event (``piece``, ``done`` or ``error``) to the waiting request (any thread)."""
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self._loop.call_soon_threadsafe(self.events.put_nowait, (kind, value))

    def cancel(self) -> None:
        """Stop this job at its next step (its client disconnected)."""
        self._cancelled = True

    def stop_reason(self) -> str:
        """Why the job must stop now, or "" to go on (plain flag reads: safe in a signal handler's
        wake)."""
        if self._cancelled:
            return "cancelled"
        if self.lane is not None and self.lane.closing:
            return "shutdown"
        return "timeout" if time.monotonic() > self.deadline else ""

    async def result(self) -> Any:
        """The job's return value, or its exception raised here."""
        while True:
            kind, value = await self.events.get()
            if kind == "done":
                return value
            if kind == "error":
                raise value


class Lane:
    """A worker thread and a bounded queue of jobs waiting for it."""

    def __init__(self, name: str, waiting: int) -> None:
        self.name = name
        self.closing = False
        self.running: Job | None = None
        self.cancelled = 0  # jobs stopped because their client left
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=max(1, waiting))
        self._seconds: deque[float] = deque([1.0], maxlen=8)
        self._thread = threading.Thread(target=self._work, name=f"edge-rag-{name}", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        """Jobs queued behind the running one."""
        return self._queue.qsize()

    def check_room(self) -> None:
        """Raise QueueFull (Stopped while shutting down) unless a job can be queued now."""
        if self.closing:
            raise Stopped("shutdown")
        if self._queue.full():
            raise QueueFull(self.name, self.retry_after())

    def submit(self, job: Job) -> Job:
        """Queue a job, or raise QueueFull (Stopped while shutting down)."""
        if self.closing:
            raise Stopped("shutdown")
        job.lane = self
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFull(self.name, self.retry_after()) from None
        return job

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the queue's length times a recent job's time."""
        typical = sorted(self._seconds)[len(self._seconds) // 2]
        return max(1, round(typical * (self.waiting + 1)))

    def close(self, wait: float = 3.0) -> None:
        """Stop taking jobs, stop the running one at its next step, fail the waiting ones, join."""
        self.closing = True
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.emit("error", Stopped("shutdown"))
        self._queue.put(None)
        self._thread.join(wait)

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            self._run(job)

    def _run(self, job: Job) -> None:
        reason = job.stop_reason()
        if reason:
            self.cancelled += reason == "cancelled"
            job.emit("error", Stopped(reason))
            return
        started, self.running = time.monotonic(), job
        try:
            job.emit("done", job.work(job))
        except BaseException as exc:  # handed to the request, which answers with a JSON error
            job.emit("error", exc)
        finally:
            self.cancelled += job.stopped == "cancelled"
            self.running = None
            self._seconds.append(time.monotonic() - started)
