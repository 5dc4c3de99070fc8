"""The trained planner head: an int8 ONNX classifier over ``plan_features``, run by onnxruntime.

Design: docs/design/planner.md
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

from ..errors import ModelNotFound
from ..models.folder import ModelFolder
from .features import FEATURE_VERSION

PLANNER_HINT = "run 'edge-rag export planner' (needs: pip install 'edge-rag[export]')"


class PlannerHead:
    """Softmax probabilities over the labels of an exported head."""

    def __init__(self, folder: ModelFolder, embedder_sha256: str) -> None:
        manifest = folder.manifest
        if manifest.get("feature_version") != FEATURE_VERSION:
            raise ModelNotFound(f"planner head at {folder.path} was trained on feature version "
                                f"{manifest.get('feature_version')!r}, this runtime computes "
                                f"{FEATURE_VERSION!r}: {PLANNER_HINT} --force")
        if manifest.get("embedder_sha256") not in (None, embedder_sha256):
            raise ModelNotFound(f"planner head at {folder.path} was trained with another embedder: "
                                f"{PLANNER_HINT} --force")
        self.labels: tuple[str, ...] = tuple(manifest["labels"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder.onnx_path), options,
                                            providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """One row of label probabilities per feature row."""
        rows = np.atleast_2d(features).astype(np.float32)
        return np.asarray(self.session.run(None, {self.input: rows})[0], dtype=np.float32)
