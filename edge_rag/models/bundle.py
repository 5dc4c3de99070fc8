"""A board's models in one folder: the exported model folders one device profile needs, with a manifest.

The bundle is a models home (``EDGE_RAG_HOME=OUT``): ``OUT/models/<name>/`` for the embedder, the
planner head (only when the profile's planner is ``head``) and the SLM, the profile's TOML beside
them, ``bundle.json`` (sha256 and bytes of every file) and ``SHA256SUMS`` (for ``sha256sum -c`` on a
board without Python tools).

Design: docs/design/models.md
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Settings, find_profile
from ..errors import EdgeRagError
from .folder import MANIFEST, ModelFolder
from .slm import slm_hint

BUNDLE_MANIFEST = "bundle.json"
CHECKSUMS = "SHA256SUMS"
EXPORT_HINTS = {
    "embedder": "run 'edge-rag export embedder'",
    "planner": "run 'edge-rag export planner'",
    "slm": "run 'edge-rag export slm'",
}


@dataclass
class Bundle:
    """What ``make_bundle`` wrote: roles -> model names, and every file's sha256 and bytes."""

    path: Path
    profile: str
    models: dict[str, str]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """Bytes of every file in the bundle (manifests excepted)."""
        return sum(int(f["bytes"]) for f in self.files.values())

    def to_dict(self) -> dict[str, Any]:
        """The content of ``bundle.json``."""
        return {"profile": self.profile, "models": self.models, "files": self.files,
                "total_bytes": self.total_bytes}


def needed_models(settings: Settings) -> dict[str, str]:
    """Role -> model folder name of every model the profile loads at run time.

    The planner head is needed only when ``planner = "head"``; the ``slm`` planner and keyword
    extractor use the SLM, which every profile needs to answer.
    """
    models = {"embedder": settings.embedder}
    if settings.planner == "head":
        models["planner"] = settings.planner_model
    models["slm"] = settings.slm
    return models


def make_bundle(profile: str | Path, out: Path, home: str | None = None, progress: bool = True) -> Bundle:
    """Copy the model folders ``profile`` needs from the models home into the empty folder ``out``."""
    settings = Settings.load(profile, models_home=home)
    models = needed_models(settings)
    folders = {role: _open(settings.home / "models" / name, role) for role, name in models.items()}
    _check_empty(out)
    bundle = Bundle(out, settings.profile, models)
    profile_file = find_profile(profile)
    _copy(profile_file, out / profile_file.name, bundle, profile_file.name)
    for role, folder in folders.items():
        if progress:
            print(f"bundle: copying the {role} {folder.path.name} ...", file=sys.stderr, flush=True)
        for source in _runtime_files(folder):
            relative = f"models/{folder.path.name}/{source.name}"
            _copy(source, out / relative, bundle, relative)
    (out / BUNDLE_MANIFEST).write_text(json.dumps(bundle.to_dict(), indent=2) + "\n", encoding="utf-8")
    sums = "".join(f"{f['sha256']}  {name}\n" for name, f in bundle.files.items())
    (out / CHECKSUMS).write_text(sums, encoding="utf-8")
    return bundle


def _open(path: Path, role: str) -> ModelFolder:
    hint = slm_hint(path.name).split(" (needs")[0] if role == "slm" else EXPORT_HINTS[role]
    return ModelFolder.open(path, f"{hint} on the workstation first")


def _runtime_files(folder: ModelFolder) -> list[Path]:
    """The manifest, the files it lists and the folder's side files (a chat template, ...), but no
    other ONNX graph or weights (such as the fp32 graph a planner export keeps for checking)."""
    listed = {MANIFEST, folder.onnx_path.name, *folder.manifest.get("files", [])}
    return sorted(p for p in folder.path.iterdir() if p.is_file() and not p.name.endswith(".partial")
                  and (p.name in listed or not p.name.endswith((".onnx", ".onnx_data", ".data"))))


def _check_empty(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise EdgeRagError(f"{out} exists and is not an empty folder: give a new folder for the bundle")
    out.mkdir(parents=True, exist_ok=True)


def _copy(source: Path, dest: Path, bundle: Bundle, name: str) -> None:
    """Copy one file, hashing it on the way."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    with open(source, "rb") as reader, open(dest, "wb") as writer:
        for block in iter(lambda: reader.read(1 << 20), b""):
            digest.update(block)
            writer.write(block)
            size += len(block)
    shutil.copymode(source, dest)
    bundle.files[name] = {"sha256": digest.hexdigest(), "bytes": size}


__all__ = ["BUNDLE_MANIFEST", "CHECKSUMS", "Bundle", "make_bundle", "needed_models"]
