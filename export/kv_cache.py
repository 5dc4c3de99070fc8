"""An 8-bit KV cache for a GQA decoder graph: calibrated per-channel scales, patched in place.

GroupQueryAttention (``kv_cache_bit_width`` 8; onnxruntime 1.32 here, older releases may lack it)
can keep its past keys and values as int8 with one fp32 scale per head and channel
(``PER_CHANNEL``): the kernel writes round(x / scale) and reads codes × scale. The cache is then
a quarter of its fp32 bytes, which is what a decode step reads per context token. It is not
the default: onnxruntime 1.32's CPU kernel takes a slower path for a multi-token call on a
quantized cache, so prefill loses what decode gains. Measured side by side
(``python -m benchmarks slm_speed --variants q4 q4kv8 llama.cpp --repeats 3``, medians, 2 cores,
a noisy day; ``slm_speed_{qwen,smollm2}_kv8.json``):

- Qwen2.5-0.5B q4, 315 / 1,014-token prompt: decode 32.4 / 24.5 → 30.8 / 28.2 tok/s (ratio
  1,000 / 300: 0.76 → 0.92), prefill 190 / 181 → 166 / 127 tok/s; llama.cpp 21.6 / 19.6 decode;
- SmolLM2-135M q4e8, 317 / 1,017: decode 71.3 / 48.3 → 79.2 / 52.4 in one run and 71.9 / 47.2 →
  78.2 / 60.9 in another (llama.cpp 77.5 / 58.8 and 73.6 / 52.8), prefill 415 / 349 → 341 / 273;
  peak RSS at 1,017 tokens 293 → 255 MiB.

An answer (about 315 prompt tokens, a few dozen generated) therefore takes longer with it; a
long generation after a long prompt on a board short of memory is where ``--kv-bits 8`` pays.
Quality (``python -m benchmarks slm_quality``, 256 tokens): SmolLM2 perplexity +7.34 % against fp32
(+6.73 % with the fp32 cache), 9/10 answers; Qwen 10/10 answers at export.

The scales are static, so they are measured: the exported graph runs with an fp32 cache over
fixed calibration prompts (runs of the shipped demo chats followed by a question, and the
check questions), and each head's channel takes the largest |value| seen, times ``MARGIN`` for
values beyond the calibration's. Keys are rotated (RoPE) before they are cached, and a rotation
moves magnitude between channel i and i + head_dim/2 as the position changes, so a key channel's
scale is the larger of its pair's: a position the calibration never reached is covered too.
The patch changes only the graph proto (cache types, two small initializers and three
attributes per layer); the weights file is untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edge_rag.models.folder import MANIFEST, file_sha256

MARGIN = 1.25
QMAX = 127.0
CALIBRATION_CHATS = 3
CALIBRATION_TOKENS = 900
KV_INPUTS = 14  # GroupQueryAttention's k_scale and v_scale are its inputs 12 and 13
DEMO = Path(__file__).parent / "demo" / "LiHua-World"


def calibration_prompts(check_questions: Sequence[str]) -> list[str]:
    """Raw texts to run through the model: ``CALIBRATION_CHATS`` runs of consecutive demo chats,
    starting at evenly spaced files, about ``CALIBRATION_TOKENS`` tokens each (by a
    4-characters-a-token guess) and followed by a question, then the check questions."""
    files = sorted(DEMO.rglob("*.txt"))
    texts = []
    for start in range(0, len(files), max(1, len(files) // CALIBRATION_CHATS)):
        context = ""
        for path in files[start:]:
            if len(context) > 4 * CALIBRATION_TOKENS:
                break
            context += path.read_text(encoding="utf-8", errors="replace") + "\n"
        texts.append(context[: 4 * CALIBRATION_TOKENS] + "\n\nWhat did they agree to do?")
    return texts[:CALIBRATION_CHATS] + list(check_questions)


def calibrate(folder: Path, prompts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per layer, the (key, value) scales [kv_heads, 1, head_dim] of an fp32-cache GQA folder."""
    from edge_rag.models.slm import SLM

    slm = SLM.from_path(folder, context_tokens=2048)
    decoder = slm._gqa
    assert decoder is not None, f"{folder} is not a GQA graph"
    peaks = np.zeros((2 * decoder.layers, decoder.kv_heads, decoder.head_dim), np.float32)
    for prompt in prompts:
        ids = slm.tokenizer.encode(slm.chat(prompt), add_special_tokens=False).ids
        decoder.reset()
        decoder.prefill([ids], slm.prefill_chunk)
        used = len(decoder.caches[0].ids)
        for i, buffer in enumerate(decoder.caches[0].buffers):
            values = np.abs(buffer.numpy()[0, :, :used, :]).max(axis=1)
            peaks[i] = np.maximum(peaks[i], values)
    half = decoder.head_dim // 2
    scales = []
    for layer in range(decoder.layers):
        pair = np.maximum(peaks[2 * layer][:, :half], peaks[2 * layer][:, half:])
        key = np.concatenate([pair, pair], axis=1)
        scales.append((_scale(key), _scale(peaks[2 * layer + 1])))
    return scales


def _scale(peak: np.ndarray) -> np.ndarray:
    """Code step [kv_heads, 1, head_dim] for values up to ``peak`` × ``MARGIN``."""
    return np.maximum(peak * MARGIN / QMAX, 1e-6)[:, None, :].astype(np.float32)


def quantize_cache(model_path: Path, scales: Sequence[tuple[np.ndarray, np.ndarray]]) -> int:
    """Patch ``model_path`` (weights stay in their external file) to an int8 per-channel cache;
    returns the number of attention nodes changed."""
    model = onnx.load(str(model_path), load_external_data=False)
    graph = model.graph
    attention = [n for n in graph.node if n.op_type == "GroupQueryAttention"]
    if len(attention) != len(scales):
        raise ValueError(f"{len(attention)} attention nodes, {len(scales)} scale pairs")
    for layer, (node, (key, value)) in enumerate(zip(attention, scales)):
        names = [f"layers.{layer}.k_scale", f"layers.{layer}.v_scale"]
        graph.initializer.extend(numpy_helper.from_array(a, n) for a, n in zip((key, value), names))
        inputs = list(node.input) + [""] * (KV_INPUTS - 2 - len(node.input)) + names
        del node.input[:]
        node.input.extend(inputs)
        node.attribute.extend([helper.make_attribute("k_quant_type", "PER_CHANNEL"),
                               helper.make_attribute("v_quant_type", "PER_CHANNEL"),
                               helper.make_attribute("kv_cache_bit_width", 8)])
    for info in list(graph.input) + list(graph.output):
        if info.name.startswith(("past_key_values.", "present.")):
            info.type.tensor_type.elem_type = TensorProto.INT8
    onnx.save_model(model, str(model_path))
    return len(attention)


def int8_cache(folder: Path, prompts: Sequence[str], log: Callable[[str], None] = print) -> None:
    """Calibrate ``folder``'s fp32 cache, patch its graph to int8 and note it in the manifest."""
    log(f"calibrating the 8-bit KV cache on {len(prompts)} prompts ...")
    scales = calibrate(folder, prompts)
    layers = quantize_cache(folder / "model.onnx", scales)
    path = folder / MANIFEST
    manifest = json.loads(path.read_text())
    manifest.update(kv_cache="int8-per-channel", sha256=file_sha256(folder / "model.onnx"))
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    log(f"KV cache: int8, one scale per head and channel, {layers} layers")
