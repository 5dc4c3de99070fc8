"""Give back the resident pages of a model's memory-mapped weight file (Linux).

onnxruntime memory-maps an external weight file (``model.onnx_data``) and, for MatMulNBits,
repacks every weight into its own buffer while the session is created. The mapping stays, and
every page that packing read stays resident in this process (and counts in its RSS) although
the packed copy is what runs: measured for Qwen2.5-0.5B 4-bit, 60-90 MiB of the file during
session creation and 59 MiB after it, on top of the packed weights.

:func:`released_pages` runs a thread while a session is created that asks the kernel, every few
milliseconds, to reclaim those pages (``madvise(MADV_PAGEOUT)``), and once more when the session
is ready. The pages are clean copies of the file: a page that is read again (an embedding row,
a scale) is faulted back in, unchanged. A mapping region with any page the process has written
to (``Anonymous`` above 0 in ``/proc/self/smaps``) is left alone.

Why ``MADV_PAGEOUT`` and not ``MADV_DONTNEED``: onnxruntime unmaps parts of the file while it
packs weights, and the address range may be reused by the heap between the read of ``smaps``
and the ``madvise`` call. ``MADV_DONTNEED`` on heap memory zeroes it (this corrupted the heap:
``free(): invalid pointer``, intermittently, under load); ``MADV_PAGEOUT`` only reclaims what
can be reclaimed, and anonymous memory without swap never is. On kernels without it (before
5.4) the pages are released once, after the session is created, with ``MADV_DONTNEED``.

:func:`trim_heap` hands the C heap's free memory back to the system (glibc ``malloc_trim``):
loading a large tokenizer (Qwen2.5's 6 MB ``tokenizer.json``) leaves ~37 MiB free but resident
in the heap, and creating a session leaves its packing buffers' space behind.

:func:`share_heap` keeps threads on the main heap (glibc ``M_ARENA_MAX`` = 1). glibc gives
each new thread a heap arena of its own; the embedder's bulk workers then kept freed
activations in arenas ``malloc_trim`` could not shrink: a 2Wiki build peaked at 379 MiB
instead of 321. With one arena, 3,000 passages built in 248 s at 256 MiB (no slower).

On systems without ``/proc/self/smaps``, ``madvise`` or ``malloc_trim`` these do nothing.
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

MADV_DONTNEED = 4
MADV_PAGEOUT = 21
M_ARENA_MAX = -8
SMAPS = Path("/proc/self/smaps")
INTERVAL_S = 0.02


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
