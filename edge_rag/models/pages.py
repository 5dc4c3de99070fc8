"""Give back the memory a model leaves resident but does not use (Linux, glibc).

:func:`released_pages`: onnxruntime memory-maps an external weight file and repacks every
MatMulNBits weight into its own buffer, yet every page packing read stays resident. While a
session is created a thread asks the kernel to reclaim those clean file pages
(``madvise(MADV_PAGEOUT)``), and once more when it is ready; a region with a written page is left
alone. Not ``MADV_DONTNEED``: the range may be reused by the heap between reading ``smaps`` and
the call, and ``MADV_DONTNEED`` on heap memory zeroes it (it corrupted the heap under load);
kernels without ``MADV_PAGEOUT`` release once, after the session is created.
:func:`trim_heap` hands the C heap's free memory back (``malloc_trim``). :func:`share_heap` keeps
threads on the main heap arena (``M_ARENA_MAX`` = 1), so the embedder's workers' freed
activations stay within ``malloc_trim``'s reach. Without ``/proc/self/smaps``, ``madvise`` or
``malloc_trim`` these do nothing.
Design: docs/design/models.md
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

# Linux's madvise advice and glibc's mallopt parameter (their headers; models.md).
MADV_DONTNEED = 4  # drop the pages (heap memory is zeroed)
MADV_PAGEOUT = 21  # reclaim the pages that can be reclaimed (Linux 5.4 on)
M_ARENA_MAX = -8  # the most heap arenas glibc gives threads
SMAPS = Path("/proc/self/smaps")
INTERVAL_S = 0.02  # seconds between page releases while a session is created (models.md)


def release_file_pages(path: Path, advice: int | None = None) -> int:
    """Drop this process's resident pages of ``path``'s clean mappings; the bytes advised.

    ``advice``: ``MADV_PAGEOUT`` where the kernel has it, else ``MADV_DONTNEED`` (only safe
    while no other thread maps or unmaps memory).
    """
    madvise = _madvise()
    if madvise is None or not SMAPS.exists():
        return 0
    advice = advice or (MADV_PAGEOUT if _has_pageout() else MADV_DONTNEED)
    released = 0
    for start, end in _clean_regions(str(path.resolve())):
        if madvise(start, end - start, advice) == 0:
            released += end - start
    return released


@contextmanager
def released_pages(path: Path, interval_s: float = INTERVAL_S) -> Iterator[None]:
    """Keep releasing ``path``'s pages while the body runs (a session being created), and after."""
    if _madvise() is None or not path.is_file():
        yield
        return
    if not _has_pageout():  # no race-free advice: release once, after the body
        yield
        release_file_pages(path, MADV_DONTNEED)
        return
    done = threading.Event()

    def loop() -> None:
        while not done.wait(interval_s):
            release_file_pages(path, MADV_PAGEOUT)

    worker = threading.Thread(target=loop, name="edge-rag-release-pages", daemon=True)
    worker.start()
    try:
        yield
    finally:
        done.set()
        worker.join()
        release_file_pages(path, MADV_PAGEOUT)


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc only; elsewhere nothing)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def share_heap() -> None:
    """Let threads started from now on allocate from the main heap arena (glibc only; a
    ``MALLOC_ARENA_MAX`` set in the environment is left to rule)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt") and "MALLOC_ARENA_MAX" not in os.environ:
        libc.mallopt(M_ARENA_MAX, 1)


def _clean_regions(path: str) -> list[tuple[int, int]]:
    """(start, end) of each mapping of ``path`` without privately written pages."""
    regions, current = [], None
    with open(SMAPS, encoding="utf-8", errors="replace") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                current = fields[0] if len(fields) >= 6 and fields[5] == path else None
            elif current and fields[0] == "Anonymous:":
                if int(fields[1]) == 0:
                    start, end = (int(x, 16) for x in current.split("-"))
                    regions.append((start, end))
                current = None
    return regions


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


@cache
def _has_pageout() -> bool:
    """Whether this kernel knows ``MADV_PAGEOUT`` (Linux 5.4+), tried on a page of our own."""
    import mmap

    madvise = _madvise()
    if madvise is None:
        return False
    page = mmap.mmap(-1, mmap.PAGESIZE)
    view = ctypes.c_char.from_buffer(page)
    supported = madvise(ctypes.addressof(view), mmap.PAGESIZE, MADV_PAGEOUT) == 0
    del view
    page.close()
    return supported


@cache
def _madvise():  # noqa: ANN202 - a ctypes function or None
    libc = _libc()
    function = getattr(libc, "madvise", None) if libc is not None else None
    if function is None:
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function
