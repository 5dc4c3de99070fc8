"""A small progress line for long work (indexing, graph extraction, embedding).

The runtime may import only the standard library and its six packages, so this replaces
tqdm: one line on standard error, redrawn in place on a terminal at most once per
`interval` seconds; elsewhere (a log file, a pipe) a plain line at most every 30 seconds.

Design: docs/design/api.md
"""

from __future__ import annotations

import sys
import time
from typing import IO


class Progress:
    """Counts units of work and shows `desc: done/total unit, rate/s, postfix` on stderr.

    A disabled progress counts silently, so callers never need two code paths.
    """

    def __init__(self, desc: str, unit: str, total: int | None = None, enabled: bool = True,
                 interval: float = 1.0, stream: IO[str] | None = None):
        self.desc, self.unit, self.total, self.enabled = desc, unit, total, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if self.tty else max(interval, 30.0)
        self.done, self.postfix, self.start = 0, "", time.monotonic()
        self._shown, self._drawn = self.start, False

    def update(self, n: int = 1) -> None:
        """Add `n` finished units; redraw when the interval has passed."""
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._shown >= self.interval:
            self._shown = now
            self._draw(now)

    def set_postfix(self, **values: object) -> None:
        """Show `key=value` pairs after the count (drawn with the next update)."""
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())

    def close(self) -> None:
        """Clear the terminal line (a terminal only; logs keep their last line)."""
        if self._drawn and self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        """The text of the progress line."""
        elapsed = max((now or time.monotonic()) - self.start, 1e-9)
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        text = f"{self.desc}: {count} {self.unit}, {self.done / elapsed:.1f}/s"
        return f"{text}, {self.postfix}" if self.postfix else text

    def _draw(self, now: float) -> None:
        end = "" if self.tty else "\n"
        self.stream.write(("\r\033[K" if self.tty else "") + self.line(now) + end)
        self.stream.flush()
        self._drawn = True
