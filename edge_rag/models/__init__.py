"""On-device models run with onnxruntime: the embedder, the SLM and its decoder.

Design: docs/design/models.md
"""

from .embedder import Embedder
from .folder import ModelFolder

__all__ = ["Embedder", "ModelFolder"]
