"""Decoder weights read straight from a GGUF file or a Hugging Face safetensors folder (numpy only).

No torch, no transformers: ``gguf`` reads and dequantizes the GGUF tensors, ``safetensors``
(numpy API) reads a Hugging Face folder. Either way the result is one :class:`Weights` object
whose matrices are in Hugging Face layout (``[out_features, in_features]``), so the graph
writer does not care where they came from.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_rag.errors import EdgeRagError
from edge_rag.models.pages import release_file_pages

# Architectures whose decoder the graph writer covers: RMSNorm, rotary (non-interleaved in HF
# layout), grouped-query attention, SwiGLU. qwen2 adds q/k/v biases.
GRAPH_ARCHITECTURES = ("llama", "qwen2", "mistral")
DEQUANTIZE_ROWS = 4096


@dataclass
class DecoderConfig:
    """The shape of a llama-family decoder."""

    architecture: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    rope_theta: float
    rms_eps: float
    context_length: int
    tied: bool

    def to_dict(self) -> dict:
        """Plain fields for the manifest."""
        return dict(self.__dict__)


@dataclass
class Weights:
    """A decoder's config, a lazy tensor getter (HF names, fp32) and its tokenizer description."""

    config: DecoderConfig
    get: Callable[[str], np.ndarray | None]
    tokenizer_json: str
    chat_template: str = ""
    origin: str = ""
    extra: dict = field(default_factory=dict)

    def layer(self, index: int, part: str) -> np.ndarray | None:
        """``model.layers.{index}.{part}`` or None when the model has no such tensor."""
        return self.get(f"model.layers.{index}.{part}")


# -- GGUF --------------------------------------------------------------------------------

_GGUF_NAMES = {  # GGUF tensor name -> Hugging Face name (per layer: blk.N. -> model.layers.N.)
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}


def read_gguf(path: Path) -> Weights:
    """A GGUF file's decoder, dequantized tensor by tensor on demand."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    fields = {name: _field(f) for name, f in reader.fields.items()
              if not name.startswith("tokenizer.ggml.") or name.endswith((".model", ".pre"))
              or name.endswith("_id")}
    arch = str(fields.get("general.architecture", ""))
    if arch not in GRAPH_ARCHITECTURES:
        raise EdgeRagError(f"{path}: architecture {arch!r} is not covered by the GQA graph writer "
                           f"({', '.join(GRAPH_ARCHITECTURES)}); use --graph optimum")
    tensors = {_hf_name(t.name): t for t in reader.tensors}
    config = _gguf_config(fields, arch, reader, "lm_head.weight" not in tensors)

    def get(name: str) -> np.ndarray | None:
        tensor = tensors.get(name)
        if tensor is None:
            return None
        data = _dequantize(tensor).reshape([int(n) for n in reversed(tensor.shape)])
        release_file_pages(path)  # the mapped bytes just read: the file's pages stay out of RSS
        if arch in ("llama", "mistral") and name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config.heads if "q_proj" in name else config.kv_heads
            data = _unpermute(data, heads)
        return data

    return Weights(config, get, gguf_tokenizer_json(reader), str(fields.get(
        "tokenizer.chat_template", "")), extra={"bos": fields.get("tokenizer.ggml.bos_token_id")})


def _dequantize(tensor) -> np.ndarray:
    """fp32 values of a GGUF tensor, dequantized ``DEQUANTIZE_ROWS`` rows at a time: whole, the
    temporaries of a 151,936-row table took several times its fp32 size (issue 44)."""
    import gguf

    rows = tensor.data if tensor.data.ndim > 1 else tensor.data[None]
    first = gguf.quants.dequantize(rows[:1], tensor.tensor_type)
    out = np.empty((len(rows), *first.shape[1:]), np.float32)
    for start in range(0, len(rows), DEQUANTIZE_ROWS):
        out[start:start + DEQUANTIZE_ROWS] = gguf.quants.dequantize(
            rows[start:start + DEQUANTIZE_ROWS], tensor.tensor_type)
    return out if tensor.data.ndim > 1 else out[0]


def _field(f) -> object:
    try:
        return f.contents()
    except Exception:  # noqa: BLE001 - a field gguf cannot decode is simply not used
        return None


def _hf_name(name: str) -> str:
    if name.startswith("blk."):
        _, layer, rest = name.split(".", 2)
        return f"model.layers.{layer}.{_GGUF_NAMES.get(rest, rest)}"
    return _GGUF_NAMES.get(name, name)


def _gguf_config(fields: dict, arch: str, reader, tied: bool) -> DecoderConfig:
    def key(name: str, default=None):
        value = fields.get(f"{arch}.{name}", default)
        if value is None:
            raise EdgeRagError(f"GGUF lacks {arch}.{name}")
        return value

    heads = int(key("attention.head_count"))
    hidden = int(key("embedding_length"))
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    return DecoderConfig(
        architecture=arch, layers=int(key("block_count")), hidden=hidden,
        intermediate=int(key("feed_forward_length")), heads=heads,
        kv_heads=int(key("attention.head_count_kv", heads)),
        head_dim=int(key("rope.dimension_count", hidden // heads)), vocab=vocab,
        rope_theta=float(key("rope.freq_base", 10000.0)),
        rms_eps=float(key("attention.layer_norm_rms_epsilon", 1e-6)),
        context_length=int(key("context_length", 2048)), tied=tied)


def _unpermute(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's rotary row permutation of q/k (back to Hugging Face's half-split layout)."""
    rows = weight.shape[0]
    return weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:]).swapaxes(1, 2) \
        .reshape(weight.shape)


# -- GGUF tokenizer -> tokenizer.json ----------------------------------------------------------

# Pre-tokenizer regular expressions by the GGUF's ``tokenizer.ggml.pre`` (as the Hugging Face
# tokenizers of these models define them).
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def gguf_tokenizer_json(reader) -> str:
    """A ``tokenizers`` JSON for a GGUF's byte-level BPE vocabulary (``tokenizer.ggml.model`` gpt2)."""
    def strings(name: str) -> list[str]:
        f = reader.fields[name]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    model = _field(reader.fields["tokenizer.ggml.model"])
    if model != "gpt2":
        raise EdgeRagError(f"GGUF tokenizer {model!r} is not supported (byte-level BPE 'gpt2' is)")
    pre = _field(reader.fields["tokenizer.ggml.pre"]) if "tokenizer.ggml.pre" in reader.fields \
        else "default"
    tokens = strings("tokenizer.ggml.tokens")
    merges = strings("tokenizer.ggml.merges")
    types = [int(reader.fields["tokenizer.ggml.token_type"].parts[i][0])
             for i in reader.fields["tokenizer.ggml.token_type"].data]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": kind == 3}
             for i, (t, kind) in enumerate(zip(tokens, types)) if kind in (3, 4)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": True}
    normalizer, pre_tokenizer = None, byte_level
    if pre == "qwen2":
        normalizer = {"type": "NFC"}
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": _QWEN2_SPLIT}, "behavior": "Isolated",
             "invert": False}, dict(byte_level, use_regex=False)]}
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [m.split(" ", 1) for m in merges]},
    }, ensure_ascii=False)


# -- Hugging Face safetensors folder ---------------------------------------------------------------

def read_hf_folder(folder: Path) -> Weights:
    """A Hugging Face folder (config.json, tokenizer.json, *.safetensors) read with numpy only."""
    from safetensors import safe_open

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    arch = config.get("model_type", "")
    if arch not in GRAPH_ARCHITECTURES:
        raise EdgeRagError(f"{folder}: architecture {arch!r} is not covered by the GQA graph "
                           f"writer ({', '.join(GRAPH_ARCHITECTURES)}); use --graph optimum")
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise EdgeRagError(f"{folder}: no *.safetensors weights")
    where = {}
    for path in files:
        with safe_open(str(path), framework="numpy") as handle:
            where.update(dict.fromkeys(handle.keys(), path))  # noqa: SIM118 - not a dict

    def get(name: str) -> np.ndarray | None:
        if name not in where:
            return None
        with safe_open(str(where[name]), framework="numpy") as handle:
            return handle.get_tensor(name).astype(np.float32)

    heads = int(config["num_attention_heads"])
    shape = DecoderConfig(
        architecture=arch, layers=int(config["num_hidden_layers"]),
        hidden=int(config["hidden_size"]), intermediate=int(config["intermediate_size"]),
        heads=heads, kv_heads=int(config.get("num_key_value_heads", heads)),
        head_dim=int(config.get("head_dim") or config["hidden_size"] // heads),
        vocab=int(config["vocab_size"]), rope_theta=float(config.get("rope_theta", 10000.0)),
        rms_eps=float(config.get("rms_norm_eps", 1e-6)),
        context_length=int(config.get("max_position_embeddings", 2048)),
        tied=bool(config.get("tie_word_embeddings", False)) or "lm_head.weight" not in where)
    tokenizer_config = folder / "tokenizer_config.json"
    template = json.loads(tokenizer_config.read_text()).get("chat_template", "") \
        if tokenizer_config.is_file() else ""
    if not template and (folder / "chat_template.jinja").is_file():
        template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    return Weights(shape, get, (folder / "tokenizer.json").read_text(encoding="utf-8"),
                   template or "")
