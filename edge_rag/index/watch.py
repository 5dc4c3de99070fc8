"""``edge-rag sync --watch``: sync again whenever the folder changes (watchdog, the ``[watch]`` extra).

File events only mark the folder dirty; a sync runs once no event came for ``debounce`` seconds
(an editor's save, a copy of many files, is one sync, not hundreds). Events inside the index
directory (when it lives in the folder) are ignored. Runs until ``stop`` is set or Ctrl-C.

Design: docs/design/sync.md
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .formats import require

IGNORED_EVENTS = ("opened", "closed_no_write")


def watch(folder: Path, run: Callable[[], Any], ignore: Path | None = None, debounce: float = 1.0,
          stop: threading.Event | None = None) -> None:
    """Call ``run`` now, then after every burst of changes under ``folder``."""
    observers = require("watchdog.observers", "watch", "sync --watch", "watchdog")
    events = require("watchdog.events", "watch", "sync --watch", "watchdog")
    dirty, stop = threading.Event(), stop or threading.Event()
    skip = str(ignore.resolve()) if ignore is not None else None

    class Dirty(events.FileSystemEventHandler):  # type: ignore[name-defined]
        def on_any_event(self, event: Any) -> None:
            paths = [str(getattr(event, "src_path", "")), str(getattr(event, "dest_path", "") or "")]
            if event.event_type in IGNORED_EVENTS or (skip and all(p.startswith(skip) for p in paths if p)):
                return
            dirty.set()

    observer = observers.Observer()
    observer.schedule(Dirty(), str(folder), recursive=True)
    observer.start()
    try:
        run()
        while not stop.is_set():
            if dirty.wait(0.2) and _quiet(dirty, debounce, stop):
                run()
    finally:
        observer.stop()
        observer.join()


def _quiet(dirty: threading.Event, debounce: float, stop: threading.Event) -> bool:
    """Wait until no event came for ``debounce`` seconds; False when stopped meanwhile."""
    while dirty.is_set() and not stop.is_set():
        dirty.clear()
        stop.wait(debounce)
    return not stop.is_set()
