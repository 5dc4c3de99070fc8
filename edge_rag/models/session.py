"""onnxruntime session options shared by every model, taken from the settings.

Design: docs/design/models.md
"""

from __future__ import annotations

import onnxruntime as ort

from ..config import Settings

PROVIDERS = {"cpu": ["CPUExecutionProvider"],
             "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}
OPTIMIZATION_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def session_options(threads: int = 0, memory_arena: bool = True,
                    optimization: str = "all") -> ort.SessionOptions:
    """Options for one inference session (threads 0 = onnxruntime's default)."""
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = memory_arena
    options.graph_optimization_level = OPTIMIZATION_LEVELS[optimization]
    return options


def settings_session_options(settings: Settings) -> ort.SessionOptions:
    """Session options from the runtime settings."""
    return session_options(settings.intra_op_threads, settings.ort_memory_arena,
                           settings.ort_graph_optimization)


def session_providers(settings: Settings) -> list[str]:
    """The execution providers the settings ask for that this onnxruntime build has, CPU last.

    ``execution_provider = "cuda"`` (the Jetson profile) uses CUDA when onnxruntime-gpu is
    installed and the CPU otherwise, so one profile serves both.
    """
    wanted = PROVIDERS[settings.execution_provider]
    available = set(ort.get_available_providers())
    return [p for p in wanted if p in available] or ["CPUExecutionProvider"]


def new_session(path: str, options: ort.SessionOptions,
                providers: list[str] | None = None) -> ort.InferenceSession:
    """An inference session for a model file (CPU unless other providers are given)."""
    return ort.InferenceSession(path, options, providers=providers or ["CPUExecutionProvider"])
