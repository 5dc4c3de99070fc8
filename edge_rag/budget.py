"""The memory budget of a device profile: estimate what a session will take before loading it.

The estimate adds up, in MiB: ``runtime`` (the interpreter with the core libraries), ``embedder``
(its files and session), ``index`` (SQLite's page cache and memory map, the vector files and the
codes searched exactly in memory, ``ppr``'s walk files and per-query arrays) and ``slm`` (every
file of its folder, the KV cache and activation arena per window token). The constants are fitted
to peak RSS measured by ``python -m benchmarks memory`` and ``python -m benchmarks board_slm``.

With ``memory_policy = "degrade"`` a window that does not fit is halved (down to ``MIN_WINDOW``
tokens, the context budget with it) before giving up; ``"refuse"`` gives up at once. Giving up
raises ``MemoryBudgetExceeded`` naming every part and what to change.

Design: docs/design/budget.md
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
from .store import mapped_files
from .store.vectors import in_memory_bytes

# Sizes in MiB, fitted to measured peak RSS; docs/design/budget.md gives each fit.
MIB = 2**20  # bytes in a MiB
RUNTIME_MB = 108.0  # the interpreter with numpy, onnxruntime, usearch, tokenizers and rapidfuzz
EMBEDDER_WORK_MB = 32.0  # the embedder session's working memory, beside its files
ARENA_MB_PER_TOKEN = 0.13  # an optimum (unfused) SLM graph's activation arena per window token
GQA_WEIGHTS_FACTOR = 1.2  # a GQA SLM folder's bytes times this: repacked weights, tokenizer, session
GQA_ARENA_MB_PER_TOKEN = 0.02  # a GQA graph's activations per window token
MIN_WINDOW = 512  # the smallest window ``degrade`` halves the SLM's to
WALK_BYTES_PER_NODE = 6 * 8  # ppr's dense float64 arrays per graph node (ppr.md)


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
    stamp = mapped_files.current_stamp(index)
    if stamp is None:
        return 0.0
    return (mapped_files.current_bytes(index) + WALK_BYTES_PER_NODE * int(stamp.get("nodes", 0))) / MIB


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
