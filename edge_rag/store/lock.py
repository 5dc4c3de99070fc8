"""A per-index writer lock: many readers, one writer at a time.

Design: docs/design/storage.md
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from ..errors import IndexLocked

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's own locking still serialises writes
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "write.lock"


class WriteLock:
    """Exclusive advisory lock on ``DIR/write.lock``; released on exit or process death."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> WriteLock:
        """Take the lock now or raise IndexLocked."""
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                self._fd = None
                raise IndexLocked(f"another process is writing to {self.path.parent}") from None
        return self

    def try_acquire(self) -> bool:
        """Take the lock if free; False when another process holds it."""
        try:
            self.acquire()
        except IndexLocked:
            return False
        return True

    def release(self) -> None:
        """Release the lock (closing the descriptor drops it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriteLock:
        return self.acquire()

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
