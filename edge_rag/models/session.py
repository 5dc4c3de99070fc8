"""onnxruntime session options shared by every model, taken from the settings."""

from __future__ import annotations

import onnxruntime as ort

from ..config import Settings

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


def new_session(path: str, options: ort.SessionOptions) -> ort.InferenceSession:
    """A CPU inference session for a model file."""
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
