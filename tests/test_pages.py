"""Giving back the pages of a memory-mapped weight file and the heap's free memory."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import pytest

from edge_rag.models.pages import release_file_pages, released_pages, trim_heap

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise on Linux only")


def _resident_kib(path: Path) -> int:
    """This process's resident KiB of ``path``'s mappings, from /proc/self/smaps."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
            inside = len(fields) >= 6 and fields[5] == str(path.resolve())
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


@linux
def test_clean_pages_are_released_and_read_back_unchanged(tmp_path: Path) -> None:
    data = tmp_path / "model.onnx_data"
    data.write_bytes(bytes(range(256)) * 4096 * 4)  # 4 MiB
    with open(data, "r+b") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, flags=mmap.MAP_PRIVATE)
        before = sum(mapped[i] for i in range(0, len(mapped), 4096))  # touch every page
        assert _resident_kib(data) >= 4000
        assert release_file_pages(data) == len(mapped)
        assert _resident_kib(data) < 100
        assert sum(mapped[i] for i in range(0, len(mapped), 4096)) == before
        mapped.close()


@linux
def test_written_pages_are_kept(tmp_path: Path) -> None:
    data = tmp_path / "model.onnx_data"
    data.write_bytes(bytes(1 << 20))
    with open(data, "r+b") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, flags=mmap.MAP_PRIVATE)
        mapped[0] = 7  # a private copy: dropping it would lose the write
        assert release_file_pages(data) == 0
        assert mapped[0] == 7
        mapped.close()


def test_released_pages_runs_the_body_and_missing_files_are_fine(tmp_path: Path) -> None:
    ran = []
    with released_pages(tmp_path / "absent.onnx_data"):
        ran.append(1)
    assert ran == [1]
    assert release_file_pages(tmp_path / "absent.onnx_data") == 0
    trim_heap()


@linux
def test_the_advice_keeps_memory_that_a_reused_address_now_holds() -> None:
    # onnxruntime may unmap part of the file and the heap reuse the address before the advice
    # lands: the advice must then leave the heap's bytes alone (MADV_DONTNEED would zero them).
    import ctypes

    from edge_rag.models import pages

    if not pages._has_pageout():
        pytest.skip("kernel without MADV_PAGEOUT: pages are released once, after loading")
    heap = mmap.mmap(-1, 1 << 20)
    heap[:] = b"\x07" * (1 << 20)
    view = ctypes.c_char.from_buffer(heap)
    assert pages._madvise()(ctypes.addressof(view), 1 << 20, pages.MADV_PAGEOUT) == 0
    del view
    assert heap[0] == heap[(1 << 20) - 1] == 7
    heap.close()
