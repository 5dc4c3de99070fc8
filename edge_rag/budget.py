"""The memory budget of a device profile: estimate what a session will take before loading it.

The estimate adds up, in MiB:

- ``runtime``: the interpreter with numpy, onnxruntime, usearch, tokenizers and rapidfuzz loaded
  (107–108 MiB measured after ``import edge_rag`` on x86-64 Linux, Python 3.11);
- ``embedder``: its ONNX file plus the session's working memory (measured: +55 MiB for the 22 MiB
  int8 MiniLM after the first query);
- ``slm``: every file of the SLM folder (weights are memory-mapped or copied; counting them whole
  keeps the estimate on the safe side), plus per window token the KV cache (2 · layers · KV heads
  · head size · 4 bytes, 1 for an int8 cache) and the activation arena, fitted to peak RSS
  measured at 300- and 1,000-token prompts (SmolLM2-135M: 403 → 529 MiB; Qwen2.5-0.5B: 943 → 1,031
  MiB). A GQA graph (manifest ``graph = "gqa"``) allocates its KV buffers for the whole window
  (only the pages a prompt reaches are touched) and has no [heads, window, total] score tensors of
  the unfused graph. Since issue 15 the session gives back the file pages of the weights
  onnxruntime repacks (``models/pages.py``), runs without a memory arena and trims the heap after
  each prefill, and exporter versions 2-4 wrote a 4-bit LM head in the compact fp32-compute layout:
  Qwen2.5-0.5B 4-bit with blocks of 64 (355 MiB folder) answers in 577-610 MiB (763-773 before),
  SmolLM2-135M 4-bit/8-bit-embedding (101 MiB) on the Pi Zero profile in 313 MiB. Fitted to those
  five ``python -m benchmarks memory`` runs (0.9 left the Pi 4 profile at exactly 1.00x its peak): the
  folder times ``GQA_WEIGHTS_FACTOR`` (the repacked weights, the tokenizer and the session) plus,
  per window token, the KV bytes and ``GQA_ARENA_MB_PER_TOKEN``. Refitted for the 1.5B (issue 44,
  ``python -m benchmarks board_slm``, 12 answers each with the Pi 5 settings): Qwen2.5-0.5B peaked at 684
  MiB and the 1.5B (1,025 MB folder) at 1,356 MiB, against 633 and 1,289 estimated with 0.95;
  1.2 puts the estimates at 1.05x and 1.13x those peaks. Version 5's int8-compute head costs 0-13
  MiB more: 684 and 1,338 MiB on an AMD EPYC (``board_slm_rpi5.json``), 1.06x and 1.15x;
- ``index``: the SQLite page cache and memory map (at most the database file) plus the USearch
  files, which queries map and touch, and the codes of every kind searched exactly (no file:
  fewer than ``vector_file_min`` vectors), which are read into memory. The graph retrievers'
  transient working set is not a term of its own (dual on 2WikiMultihopQA: +165 MiB over
  vector, next to 162 MiB of USearch files). Since issue 46 ``ppr``'s walk matrix, BM25 postings
  and title table are files the build writes (``walk/``) and queries map: they count whole, like
  the USearch files, plus ``WALK_BYTES_PER_NODE`` for the walk's dense per-query arrays (rank,
  residual, seeds, pushes, fused scores); nothing else of ``ppr`` grows with the corpus in a
  reader's memory (``benchmarks/results/scale.json``).

For the optimum graphs the estimate is on the safe side for Qwen2.5-0.5B (1.45-1.70x the
measured peak) but not for SmolLM2-135M with the graph retrievers (the Pi Zero profile measured
up to 741 MiB against 626); for the GQA graphs (the defaults) it is 1.07-1.13x with ``vector``.
``python -m benchmarks memory`` measures every profile against this estimate.

With ``memory_policy = "degrade"`` a window that does not fit is halved (down to 512 tokens, the
context budget with it) before giving up; ``"refuse"`` gives up at once. Giving up raises
``MemoryBudgetExceeded`` naming every part and what to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import Settings
from .errors import MemoryBudgetExceeded, ModelNotFound
from .models.decoder import cache_dtype
from .models.folder import ModelFolder
from .store import walk_files
from .store.vectors import in_memory_bytes

MIB = 2**20
RUNTIME_MB = 108.0
EMBEDDER_WORK_MB = 32.0
ARENA_MB_PER_TOKEN = 0.13
GQA_WEIGHTS_FACTOR = 1.2
GQA_ARENA_MB_PER_TOKEN = 0.02
MIN_WINDOW = 512
WALK_BYTES_PER_NODE = 6 * 8


@dataclass(frozen=True)
class MemoryEstimate:
    """What a session is expected to take, part by part, against the profile's budget."""

    parts: dict[str, float] = field(default_factory=dict)
    budget_mb: float = 0.0

    @property
    def total_mb(self) -> float:
        """The sum of the parts."""
        return sum(self.parts.values())

    @property
    def fits(self) -> bool:
        """True without a budget, or when the total is within it."""
        return not self.budget_mb or self.total_mb <= self.budget_mb

    def describe(self) -> str:
        """One line: every part and the total against the budget."""
        parts = ", ".join(f"{name} {mb:,.0f}" for name, mb in self.parts.items())
        return f"{parts}; total {self.total_mb:,.0f} MiB of a {self.budget_mb:,.0f} MiB budget"


def estimate_memory(settings: Settings, index: Path | None = None, with_slm: bool = True,
                    store: Any = None) -> MemoryEstimate:
    """The estimate for a session with these settings (see the module docstring); ``store``: an
    encrypted index's open IndexStore (its file cannot be read without the key)."""
    models = settings.home / "models"
    parts = {"runtime": RUNTIME_MB,
             "embedder": _folder_mb(models / settings.embedder) + EMBEDDER_WORK_MB,
             "index": settings.sqlite_cache_mb + _mapped_sqlite_mb(settings, index)
                      + (_vectors_mb(index, settings.vector_dtype, store) if index else 0.0)
                      + (walk_mb(index) if index else 0.0)}
    if with_slm:
        parts["slm"] = slm_mb(models / settings.slm, settings.slm_context_tokens)
    return MemoryEstimate({k: round(v, 1) for k, v in parts.items()}, float(settings.memory_budget_mb))


def slm_mb(folder: Path, window: int) -> float:
    """Files, KV cache and activation arena of an SLM folder at a window of ``window`` tokens."""
    manifest = _manifest(folder)
    shape = [manifest.get(k, 0) for k in ("num_layers", "num_kv_heads", "head_dim")]
    kv_bytes = 2 * shape[0] * shape[1] * shape[2] * np.dtype(cache_dtype(manifest)).itemsize
    if manifest.get("graph") == "gqa":
        return _folder_mb(folder) * GQA_WEIGHTS_FACTOR \
            + window * (kv_bytes / MIB + GQA_ARENA_MB_PER_TOKEN)
    return _folder_mb(folder) + window * (kv_bytes / MIB + ARENA_MB_PER_TOKEN)


def fit_to_budget(settings: Settings, index: Path | None = None, with_slm: bool = True,
                  store: Any = None) -> Settings:
    """The settings, degraded if the policy allows, that fit the budget; else MemoryBudgetExceeded."""
    estimate = estimate_memory(settings, index, with_slm, store)
    while not estimate.fits and with_slm and settings.memory_policy == "degrade" \
            and settings.slm_context_tokens // 2 >= MIN_WINDOW:
        window = settings.slm_context_tokens // 2
        settings = settings.replace(slm_context_tokens=window,
                                    context_token_budget=min(settings.context_token_budget, window // 2),
                                    answer_max_tokens=min(settings.answer_max_tokens, window // 4))
        estimate = estimate_memory(settings, index, with_slm, store)
    if not estimate.fits:
        raise MemoryBudgetExceeded(
            f"profile {settings.profile!r} does not fit its {settings.memory_budget_mb} MiB memory budget: "
            f"{estimate.describe()}. Choose a smaller SLM, a shorter slm_context_tokens, "
            "memory_policy = \"degrade\" or a larger memory_budget_mb")
    return settings


def _folder_mb(folder: Path) -> float:
    if not folder.is_dir():
        return 0.0
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / MIB


def _mapped_sqlite_mb(settings: Settings, index: Path | None) -> float:
    """SQLite maps at most its file: the mmap budget, or the database's size when smaller."""
    database = index / "index.sqlite" if index else None
    if database is None or not database.is_file():
        return float(settings.sqlite_mmap_mb)
    return min(float(settings.sqlite_mmap_mb), database.stat().st_size / MIB)


def walk_mb(index: Path) -> float:
    """``ppr``'s mapped walk files (counted whole) and its per-query node arrays."""
    stamp = walk_files.current_stamp(index)
    if stamp is None:
        return 0.0
    return (walk_files.current_bytes(index) + WALK_BYTES_PER_NODE * int(stamp.get("nodes", 0))) / MIB


def _vectors_mb(index: Path, dtype: str, store: Any = None) -> float:
    """The HNSW files queries map, plus the codes exact search holds in memory."""
    if not index.is_dir():
        return 0.0
    files = sum(p.stat().st_size for p in index.glob("*.usearch"))
    return (files + in_memory_bytes(index, dtype, store)) / MIB


def _manifest(folder: Path) -> dict:
    # A missing SLM is reported by the loader with its export hint; here it only weighs nothing.
    try:
        return ModelFolder.open(folder).manifest
    except ModelNotFound:
        return {}
