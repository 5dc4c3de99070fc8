"""The memory budget of a device profile: estimate what a session will take before loading it.

The estimate adds up, in MiB:

- ``runtime``: the interpreter with numpy, onnxruntime, usearch, tokenizers and rapidfuzz loaded
  (107–108 MiB measured after ``import edge_rag`` on x86-64 Linux, Python 3.11);
- ``embedder``: its ONNX file plus the session's working memory (measured: +55 MiB for the 22 MiB
  int8 MiniLM after the first query);
- ``slm``: every file of the SLM folder (weights are memory-mapped or copied; counting them whole
  keeps the estimate on the safe side), plus per window token the KV cache (2 · layers · KV heads ·
  head size · 4 bytes) and the activation arena, fitted to peak RSS measured at 300- and
  1,000-token prompts (SmolLM2-135M: 403 → 529 MiB; Qwen2.5-0.5B: 943 → 1,031 MiB). A GQA graph
  (manifest ``graph = "gqa"``) preallocates its KV buffers for the whole window and has no
  [heads, window, total] score tensors of the unfused graph: its weights count
  ``GQA_WEIGHTS_FACTOR`` times (onnxruntime repacks MatMulNBits weights and keeps the tied
  embedding codes for the Gather) plus a smaller arena per window token. Fitted to
  ``benchmarks.memory`` (issue 15): Qwen2.5-0.5B 4-bit, 384 MiB folder, peaks at 769-773 MiB
  whatever the window (1,536-2,048): the KV buffers are allocated for the window but only
  the pages a prompt reaches are touched; SmolLM2-135M 4-bit/8-bit-embedding (99 MiB) on the
  Pi Zero profile peaks at 415 MiB, hence a fixed ``GQA_SESSION_MB`` besides;
- ``index``: the SQLite page cache and memory map plus the USearch files, which queries map and
  touch. The graph retrievers' transient working set is not a term of its own (dual on
  2WikiMultihopQA: +165 MiB over vector, next to 162 MiB of USearch files).

For the optimum graphs the estimate is on the safe side for Qwen2.5-0.5B (1.45-1.70x the
measured peak) but not for SmolLM2-135M with the graph retrievers (the Pi Zero profile measured
up to 741 MiB against 626); for the GQA graphs (the defaults) it is 1.0-1.3x with ``vector``.
``python -m benchmarks.memory`` measures every profile against this estimate.

With ``memory_policy = "degrade"`` a window that does not fit is halved (down to 512 tokens, the
context budget with it) before giving up; ``"refuse"`` gives up at once. Giving up raises
``MemoryBudgetExceeded`` naming every part and what to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .config import Settings
from .errors import MemoryBudgetExceeded, ModelNotFound
from .models.folder import ModelFolder

MIB = 2**20
RUNTIME_MB = 108.0
EMBEDDER_WORK_MB = 32.0
ARENA_MB_PER_TOKEN = 0.13
GQA_WEIGHTS_FACTOR = 1.3
GQA_ARENA_MB_PER_TOKEN = 0.02
GQA_SESSION_MB = 40.0  # tokenizer, session and buffers that do not grow with the model
MIN_WINDOW = 512


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


def estimate_memory(settings: Settings, index: Path | None = None, with_slm: bool = True) -> MemoryEstimate:
    """The estimate for a session with these settings (see the module docstring)."""
    models = settings.home / "models"
    parts = {"runtime": RUNTIME_MB,
             "embedder": _folder_mb(models / settings.embedder) + EMBEDDER_WORK_MB,
             "index": settings.sqlite_cache_mb + settings.sqlite_mmap_mb
                      + (_usearch_mb(index) if index else 0.0)}
    if with_slm:
        parts["slm"] = slm_mb(models / settings.slm, settings.slm_context_tokens)
    return MemoryEstimate({k: round(v, 1) for k, v in parts.items()}, float(settings.memory_budget_mb))


def slm_mb(folder: Path, window: int) -> float:
    """Files, KV cache and activation arena of an SLM folder at a window of ``window`` tokens."""
    manifest = _manifest(folder)
    shape = [manifest.get(k, 0) for k in ("num_layers", "num_kv_heads", "head_dim")]
    kv_bytes = 2 * shape[0] * shape[1] * shape[2] * 4
    if manifest.get("graph") == "gqa":
        return GQA_SESSION_MB + _folder_mb(folder) * GQA_WEIGHTS_FACTOR \
            + window * (kv_bytes / MIB + GQA_ARENA_MB_PER_TOKEN)
    return _folder_mb(folder) + window * (kv_bytes / MIB + ARENA_MB_PER_TOKEN)


def fit_to_budget(settings: Settings, index: Path | None = None, with_slm: bool = True) -> Settings:
    """The settings, degraded if the policy allows, that fit the budget; else MemoryBudgetExceeded."""
    estimate = estimate_memory(settings, index, with_slm)
    while not estimate.fits and with_slm and settings.memory_policy == "degrade" \
            and settings.slm_context_tokens // 2 >= MIN_WINDOW:
        window = settings.slm_context_tokens // 2
        settings = settings.replace(slm_context_tokens=window,
                                    context_token_budget=min(settings.context_token_budget, window // 2),
                                    answer_max_tokens=min(settings.answer_max_tokens, window // 4))
        estimate = estimate_memory(settings, index, with_slm)
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


def _usearch_mb(index: Path) -> float:
    return sum(p.stat().st_size for p in index.glob("*.usearch")) / MIB if index.is_dir() else 0.0


def _manifest(folder: Path) -> dict:
    # A missing SLM is reported by the loader with its export hint; here it only weighs nothing.
    try:
        return ModelFolder.open(folder).manifest
    except ModelNotFound:
        return {}
