"""On-device models run with onnxruntime: the embedder (and, later, the SLM and planner)."""

from .embedder import Embedder
from .folder import ModelFolder

__all__ = ["Embedder", "ModelFolder"]
