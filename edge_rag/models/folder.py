"""An exported model folder: ``model.onnx``, ``tokenizer.json`` and ``manifest.json``.

Design: docs/design/models.md
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelNotFound

MANIFEST = "manifest.json"
EXPORT_HINT = "run 'edge-rag export embedder' (needs: pip install 'edge-rag[export]')"


@dataclass(frozen=True)
class ModelFolder:
    """A validated model folder and its manifest."""

    path: Path
    manifest: dict[str, Any]

    @classmethod
    def open(cls, path: Path, hint: str = EXPORT_HINT) -> ModelFolder:
        """Open and check a folder; a missing or incomplete one raises ModelNotFound."""
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise ModelNotFound(f"no exported model at {path}: {hint}")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelNotFound(f"unreadable model manifest {manifest_path}: {exc}") from None
        for name in manifest.get("files", ["model.onnx"]):
            if not (path / name).is_file():
                raise ModelNotFound(f"model folder {path} lacks {name}: {hint}")
        return cls(path, manifest)

    @property
    def name(self) -> str:
        """The model's name as recorded at export."""
        return str(self.manifest.get("name", self.path.name))

    @property
    def onnx_path(self) -> Path:
        """The ONNX graph to load."""
        return self.path / self.manifest.get("model_file", "model.onnx")

    @property
    def identity(self) -> dict[str, str]:
        """What an index records so that it can refuse a different model later."""
        dimension = str(self.manifest.get("dimension", ""))
        return {"name": self.name, "dimension": dimension, "sha256": self.sha256}

    @property
    def sha256(self) -> str:
        """sha256 of the ONNX file, from the manifest (computed at export)."""
        return str(self.manifest.get("sha256") or file_sha256(self.onnx_path))


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
