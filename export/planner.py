"""Planner head export (§3.3): train a small MLP on the labelled dev queries, export ONNX, int8.

    edge-rag export planner [--labels FILE] [--force]

The labels (``planner_labels.jsonl`` next to this module) are made by
``python -m benchmarks planner_labels``: one row per dev query with its label A–F and the cheap
features computed against that data set's index. Here each question is embedded with the default
embedder, the head (features → 64 ReLU → 6 labels A–F, softmax) is trained with cross-entropy against
soft targets — spread evenly over every method that works for the query (the label is the
simplest of them; a one-label target made the head pick the cheap method where a stronger one
was as good, and lose recall to plain dual retrieval) — exported to ONNX, quantized to int8
(dynamic, per channel) and checked: the int8 head must choose the fp32 head's label on at least
95 % of the training queries. The fp32 graph (a few hundred KB) stays in the folder as
``model.fp32.onnx`` so that the check can be repeated.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from edge_rag.errors import EdgeRagError
from edge_rag.models.embedder import Embedder
from edge_rag.models.folder import MANIFEST, ModelFolder, file_sha256
from edge_rag.plan import LABELS
from edge_rag.plan.features import CHEAP_NAMES, FEATURE_VERSION

from . import log as _log
from . import quiet, require_export_extra

LABELS_FILE = Path(__file__).with_name("planner_labels.jsonl")
DEFAULT_NAME = "planner-af2-int8"  # labels A–F, features v2; "planner-int8" heads (A–E) still load
MIN_AGREEMENT = 0.95
HIDDEN = 64
EPOCHS = 300
SEED = 0


def read_labels(path: Path = LABELS_FILE) -> list[dict[str, Any]]:
    """Labelled queries; refuses a file made with other features than this runtime computes."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    stale = {r.get("feature_version") for r in rows} - {FEATURE_VERSION}
    if stale or not rows:
        raise EdgeRagError(f"{path} holds features of version {sorted(map(str, stale))} (or no rows); "
                           "regenerate it: python -m benchmarks planner_labels")
    return rows


def feature_matrix(rows: list[dict[str, Any]], embedder: Embedder) -> np.ndarray:
    """The head's inputs: query embedding then the stored cheap features (see ``plan_features``)."""
    vectors = embedder.embed([r["question"] for r in rows])
    cheap = np.asarray([r["cheap"] for r in rows], dtype=np.float32)
    if cheap.ndim != 2 or cheap.shape[1] != len(CHEAP_NAMES):
        raise EdgeRagError(f"labelled rows need {len(CHEAP_NAMES)} cheap features each: regenerate "
                           "them with python -m benchmarks planner_labels")
    return np.concatenate([vectors.astype(np.float32), cheap], axis=1)


def targets(rows: list[dict[str, Any]]) -> np.ndarray:
    """Soft targets: even over the methods that reach the best recall (retrieval judge), one-hot
    on the label (answer judge), even over every retrieval label when no method reaches any
    evidence (prior judge: such a row tells nothing about which method to use; one-hot on the
    prior's C taught the head to pick local, the weakest method, for LiHua-like questions)."""
    out = np.zeros((len(rows), len(LABELS)), dtype=np.float32)
    for i, row in enumerate(rows):
        works = [row["label"]]
        if row["judge"] == "retrieval":
            best = max(row["recall"].values())
            works = [k for k, v in row["recall"].items() if v >= best - 1e-9]
        elif row["judge"] == "prior":
            works = list(LABELS[1:])
        out[i, [LABELS.index(k) for k in works]] = 1.0 / len(works)
    return out


def train(features: np.ndarray, soft: np.ndarray, seed: int = SEED) -> Any:
    """A two-layer MLP trained with soft-target cross-entropy, full batch, Adam."""
    import torch

    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(features.shape[1], HIDDEN), torch.nn.ReLU(),
                                torch.nn.Dropout(0.2), torch.nn.Linear(HIDDEN, len(LABELS)))
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-3)
    x, t = torch.tensor(features), torch.tensor(soft)
    model.train()
    for _ in range(EPOCHS):
        optimiser.zero_grad()
        (-(t * torch.log_softmax(model(x), dim=1)).sum(dim=1).mean()).backward()
        optimiser.step()
    return model.eval()


def probabilities(model: Any, features: np.ndarray) -> np.ndarray:
    """Label probabilities of a trained (torch) head."""
    import torch

    with torch.no_grad():
        return torch.softmax(model(torch.tensor(features)), dim=1).numpy()


def cross_validate(features: np.ndarray, soft: np.ndarray, folds: int = 5) -> np.ndarray:
    """Out-of-fold probabilities (every query predicted by a head that never saw it)."""
    order = np.random.default_rng(SEED).permutation(len(soft))
    out = np.zeros((len(soft), len(LABELS)), dtype=np.float32)
    for fold in range(folds):
        held = order[fold::folds]
        keep = np.setdiff1d(order, held)
        out[held] = probabilities(train(features[keep], soft[keep]), features[held])
    return out


def export_planner(home: Path, labels_path: Path | None = None, name: str = DEFAULT_NAME,
                   embedder_name: str = "all-MiniLM-L6-v2-int8", force: bool = False) -> Path:
    """Train, export and quantize the head into ``home/models/name``; returns the folder."""
    dest = home / "models" / name
    if not force and (dest / MANIFEST).is_file():
        _log(f"planner already exported at {dest} (use --force to redo)")
        return dest
    require_export_extra()
    rows = read_labels(labels_path or LABELS_FILE)
    embedder = Embedder(ModelFolder.open(home / "models" / embedder_name))
    _log(f"embedding {len(rows)} labelled queries ...")
    features = feature_matrix(rows, embedder)
    labels, soft = np.asarray([LABELS.index(r["label"]) for r in rows]), targets(rows)
    _log("cross-validating (5 folds) ...")
    cv = cross_validate(features, soft).argmax(axis=1)
    _log(f"training on all {len(rows)} queries and exporting ...")
    model = train(features, soft)
    with tempfile.TemporaryDirectory(dir=home) as tmp:
        fp32, int8 = Path(tmp) / "model.fp32.onnx", Path(tmp) / "model.onnx"
        _to_onnx(model, features.shape[1], fp32)
        _quantize(fp32, int8)
        agreement = _agreement(fp32, int8, features)
        if agreement < MIN_AGREEMENT:
            raise EdgeRagError(f"int8 planner agrees with fp32 on {agreement:.1%} of queries "
                               f"(< {MIN_AGREEMENT:.0%}); not exported")
        manifest = {"name": name, "kind": "planner", "labels": list(LABELS),
                    "feature_version": FEATURE_VERSION, "features": ["embedding"] * embedder.dim
                    + list(CHEAP_NAMES), "embedder": embedder.folder.name,
                    "embedder_sha256": embedder.folder.sha256, "hidden": HIDDEN,
                    "quantization": "int8-dynamic-per-channel", "int8_fp32_agreement": round(agreement, 4),
                    "cv_accuracy": round(float((cv == labels).mean()), 4),
                    "cv_works": round(float((soft[np.arange(len(cv)), cv] > 0).mean()), 4),
                    "label_counts": {k: int((labels == i).sum()) for i, k in enumerate(LABELS)},
                    "sha256": file_sha256(int8), "fp32_file": fp32.name, "files": ["model.onnx"]}
        (Path(tmp) / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(tmp, dest)
    # Several methods often find a question's evidence: what counts is choosing one that does.
    _log(f"planner: on held-out folds it picks a method that finds the evidence for "
         f"{manifest['cv_works']:.1%} of questions (the single best label for "
         f"{manifest['cv_accuracy']:.1%}); int8 = fp32 on {agreement:.1%}")
    return dest


def _to_onnx(model: Any, width: int, out: Path) -> None:
    import torch

    class WithSoftmax(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.model(x), dim=-1)

    with quiet():
        torch.onnx.export(WithSoftmax().eval(), (torch.zeros(1, width),), str(out),
                          input_names=["features"], output_names=["probabilities"],
                          dynamic_axes={"features": {0: "batch"}}, opset_version=17, dynamo=False)


def _quantize(fp32: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with quiet():
        quantize_dynamic(str(fp32), str(out), per_channel=True, weight_type=QuantType.QInt8)


def _agreement(fp32: Path, int8: Path, features: np.ndarray) -> float:
    import onnxruntime as ort

    run = lambda path: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"features": features})[0].argmax(axis=1)
    return float((run(fp32) == run(int8)).mean())
