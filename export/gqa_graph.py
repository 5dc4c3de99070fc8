"""Write a llama/qwen2 decoder as an ONNX graph of onnxruntime's fused contrib operators.

The graph is written node by node with ``onnx.helper`` from :class:`~.weights.Weights` (numpy):

- embedding: ``GatherBlockQuantized`` over the same 4/8-bit codes as the LM head when the model
  ties them (one copy of the table), fp32 ``Gather`` for the fp32 reference graph;
- per layer: ``(Skip)SimplifiedLayerNormalization`` (RMSNorm with the residual add fused),
  one ``MatMulNBits`` for q, k and v together (with the qwen2 biases), ``GroupQueryAttention``
  with the rotary embedding inside, ``MatMulNBits`` for o, then the SwiGLU MLP with gate and up
  in one ``MatMulNBits``;
- the LM head runs on the last ``logits_count`` positions only (1 for a prefill or a decode
  step, a few to check drafted tokens, see ``edge_rag/models/lookup.py``): logits are
  ``[batch, logits_count, vocab]``; every ``MatMulNBits``, the head's too, computes with int8
  activations (``accuracy_level`` 4).

Inputs: ``input_ids`` int64 [batch, seq]; ``seqlens_k`` int32 [batch] (tokens in the cache after
this call, minus one); ``total_sequence_length`` int32 scalar; ``logits_count`` int64 [1];
``past_key_values.N.key/value`` fp32 [batch, kv_heads, max_len, head_dim]. Outputs: ``logits``
and ``present.N.key/value`` of the same shape as the past: bound to the very same buffer,
GroupQueryAttention writes the new keys/values in place, so the cache is never copied per step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .quantize import Quantized, quantize
from .weights import Weights

MS = "com.microsoft"
OPSET = 21
ACCURACY_LEVEL = 4  # int8 activations in MatMulNBits: the fast path on CPUs without fp16
# The LM head too, since exporter version 5. Versions 2-4 computed a 4-bit head in fp32 (accuracy
# level 1): on the Intel machine of issue 15 it decoded as fast and saved 64 MiB of repacked
# weights. On an AMD EPYC (AVX-512 VNNI) with onnxruntime 1.32 that head took 40 % of a
# Qwen2.5-1.5B decode step, 4x the time per weight of the int8-compute layers; at level 4 decode
# runs 1.2-1.35x faster (both Qwen sizes, 300 and 1000-token prompts) for +0-13 MiB of `ask`'s
# peak RSS (results/slm_speed_head_level.json).
EMBED_BLOCK = 32  # the embedding table and a tied LM head: one row per token, the finest blocks


def fit_block(k: int, block: int) -> int:
    """The largest block size, ``block`` halved until it divides the input size ``k``."""
    while k % block and block > 16:
        block //= 2
    return block


class GraphWriter:
    """Accumulates nodes and initializers; ``bits`` 4 or 8 quantize, 32 writes fp32 MatMuls."""

    def __init__(self, weights: Weights, bits: int, block: int = 32, symmetric: bool = True,
                 embed_bits: int | None = None, progress: Callable[[str], None] = print) -> None:
        self.w, self.c = weights, weights.config
        self.bits, self.block, self.symmetric = bits, block, symmetric
        self.embed_block = EMBED_BLOCK
        self.embed_bits = embed_bits or bits
        self.progress = progress
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._names: set[str] = set()

    # -- primitives -----------------------------------------------------------------------

    def init(self, name: str, array: np.ndarray) -> str:
        """Add an initializer; returns its name."""
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str] | int = 1, name: str = "",
             domain: str = "", **attrs) -> list[str]:
        """Add a node; ``outputs`` as names or a count of fresh names."""
        base = name or f"{op}_{len(self.nodes)}"
        if isinstance(outputs, int):
            outputs = [f"{base}/out{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=base, domain=domain, **attrs))
        return outputs

    def matmul(self, x: str, weight: np.ndarray, name: str, bias: np.ndarray | None = None,
               codes: Quantized | None = None) -> str:
        """x @ weight.T (+ bias) as MatMulNBits (or MatMul + Add in fp32)."""
        n, k = weight.shape if weight is not None else codes.shape
        if self.bits == 32:
            out = self.node("MatMul", [x, self.init(f"{name}.weight_t", weight.T)], name=name)[0]
            if bias is not None:
                out = self.node("Add", [out, self.init(f"{name}.bias", bias)], name=name + "/bias")[0]
            return out
        q = codes or quantize(weight, self.bits, fit_block(k, self.block), self.symmetric)
        inputs = [x, self.init(f"{name}.qweight", q.packed), self.init(f"{name}.scales", q.scales),
                  self.init(f"{name}.zero_points", q.zero_points) if q.zero_points is not None else ""]
        if bias is not None:
            inputs += ["", self.init(f"{name}.bias", bias.astype(np.float32))]
        return self.node("MatMulNBits", inputs, name=name, domain=MS, K=k, N=n, bits=q.bits,
                         block_size=q.block, accuracy_level=ACCURACY_LEVEL)[0]

    # -- the decoder ------------------------------------------------------------------------

    def build(self) -> onnx.ModelProto:
        """The whole decoder graph."""
        c = self.c
        hidden, head = self.embedding()
        residual, x = hidden, None
        for i in range(c.layers):
            x, residual = self.layer(i, hidden if i == 0 else x, residual)
            if (i + 1) % max(1, c.layers // 6) == 0 or i + 1 == c.layers:
                self.progress(f"layer {i + 1}/{c.layers} written")
        normed = self.node("SkipSimplifiedLayerNormalization",
                           [x, residual, self.init("model.norm.weight", self.w.get("model.norm.weight"))],
                           1, name="final_norm", domain=MS, epsilon=c.rms_eps)[0]
        start = self.node("Neg", ["logits_count"], name="last_positions/start")[0]
        last = self.node("Slice", [normed, start, self.init("last.end", np.array([2**62], np.int64)),
                                   self.init("last.axis", np.array([1], np.int64))],
                         name="last_positions")[0]
        head(last)
        self.nodes[-1].output[0] = "logits"
        return self.model()

    def embedding(self) -> tuple[str, Callable[[str], str]]:
        """The token embedding's output and a function writing the LM head on a hidden state."""
        c = self.c
        table = self.w.get("model.embed_tokens.weight")
        if self.bits == 32:
            hidden = self.node("Gather", [self.init("model.embed_tokens.weight", table), "input_ids"],
                               name="embed")[0]
            head_weight = table if c.tied else self.w.get("lm_head.weight")
            return hidden, lambda x: self.matmul(x, head_weight, "lm_head")
        codes = quantize(table, self.embed_bits, self.embed_block, self.symmetric)
        del table
        data = self.init("embed.qweight", codes.packed)  # shared with a tied LM head
        inputs = ["embed.qweight", "input_ids", self.init("embed.scales3", codes.scales[..., None])]
        if codes.zero_points is not None:
            zero = _block_zero_points(codes)
            inputs.append(self.init("embed.zero_points3", zero))
        gathered = self.node("GatherBlockQuantized", inputs, name="embed", domain=MS, gather_axis=0,
                             quantize_axis=2, block_size=codes.block, bits=codes.bits)[0]
        hidden = self.node("Reshape", [gathered, self.init("embed.shape", np.array([0, 0, c.hidden],
                                                                                      np.int64))],
                           name="embed/reshape")[0]
        self.progress(f"embedding {c.vocab}x{c.hidden} quantized to {codes.bits} bits"
                      + (" (tied to the LM head)" if c.tied else ""))
        if c.tied:
            return hidden, lambda x: self._tied_head(x, codes, data)
        return hidden, lambda x: self.matmul(x, self.w.get("lm_head.weight"), "lm_head")

    def _tied_head(self, x: str, codes: Quantized, data: str) -> str:
        c = self.c
        inputs = [x, data, self.init("lm_head.scales", codes.scales),
                  self.init("lm_head.zero_points", codes.zero_points)
                  if codes.zero_points is not None else ""]
        return self.node("MatMulNBits", inputs, name="lm_head", domain=MS, K=c.hidden, N=c.vocab,
                         bits=codes.bits, block_size=codes.block,
                         accuracy_level=ACCURACY_LEVEL)[0]

    def layer(self, i: int, x: str, residual: str) -> tuple[str, str]:
        """One decoder layer; returns (output before the residual add, residual)."""
        c, get = self.c, lambda part: self.w.layer(i, part)
        p = f"layers.{i}"
        attn_norm = self.init(f"{p}.input_layernorm", get("input_layernorm.weight"))
        if i == 0:
            normed = self.node("SimplifiedLayerNormalization", [x, attn_norm], name=f"{p}/attn_norm",
                               axis=-1, epsilon=c.rms_eps, stash_type=1)[0]
        else:
            normed, residual = self.node("SkipSimplifiedLayerNormalization",
                                         [x, residual, attn_norm],
                                         [f"{p}/attn_norm", "", "", f"{p}/residual_attn"],
                                         name=f"{p}/attn_norm", domain=MS, epsilon=c.rms_eps)[::3]
        qkv = np.concatenate([get(f"self_attn.{n}_proj.weight") for n in "qkv"], axis=0)
        biases = [get(f"self_attn.{n}_proj.bias") for n in "qkv"]
        bias = np.concatenate(biases) if all(b is not None for b in biases) else None
        packed = self.matmul(normed, qkv, f"{p}.qkv_proj", bias)
        del qkv
        attn = self.node("GroupQueryAttention",
                         [packed, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value",
                          "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"],
                         [f"{p}/attn", f"present.{i}.key", f"present.{i}.value"], name=f"{p}/attn",
                         domain=MS, num_heads=c.heads, kv_num_heads=c.kv_heads, do_rotary=1,
                         rotary_interleaved=0, local_window_size=-1,
                         scale=float(1 / np.sqrt(c.head_dim)))[0]
        out = self.matmul(attn, get("self_attn.o_proj.weight"), f"{p}.o_proj")
        mlp_norm = self.init(f"{p}.post_attention_layernorm", get("post_attention_layernorm.weight"))
        normed, residual = self.node("SkipSimplifiedLayerNormalization", [out, residual, mlp_norm],
                                     [f"{p}/mlp_norm", "", "", f"{p}/residual_mlp"],
                                     name=f"{p}/mlp_norm", domain=MS, epsilon=c.rms_eps)[::3]
        gate_up = np.concatenate([get("mlp.gate_proj.weight"), get("mlp.up_proj.weight")], axis=0)
        both = self.matmul(normed, gate_up, f"{p}.gate_up_proj")
        del gate_up
        gate, up = self.node("Split", [both, self.init(f"{p}.split", np.array(
            [c.intermediate, c.intermediate], np.int64))], 2, name=f"{p}/split", axis=-1)
        sig = self.node("Sigmoid", [gate], name=f"{p}/sigmoid")[0]
        silu = self.node("Mul", [gate, sig], name=f"{p}/silu")[0]
        prod = self.node("Mul", [silu, up], name=f"{p}/swiglu")[0]
        return self.matmul(prod, get("mlp.down_proj.weight"), f"{p}.down_proj"), residual

    def rotary_caches(self, positions: int) -> None:
        """cos/sin tables [positions, head_dim/2] for GroupQueryAttention's rotary embedding."""
        c = self.c
        inv_freq = 1.0 / (c.rope_theta ** (np.arange(0, c.head_dim, 2, dtype=np.float64) / c.head_dim))
        angles = np.outer(np.arange(positions, dtype=np.float64), inv_freq)
        self.init("cos_cache", np.cos(angles).astype(np.float32))
        self.init("sin_cache", np.sin(angles).astype(np.float32))

    def model(self) -> onnx.ModelProto:
        """Wrap nodes and initializers with the graph's inputs and outputs."""
        c = self.c
        f32, i64, i32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32
        kv_shape = ["batch", c.kv_heads, "max_length", c.head_dim]
        inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch", "sequence"]),
                  helper.make_tensor_value_info("seqlens_k", i32, ["batch"]),
                  helper.make_tensor_value_info("total_sequence_length", i32, []),
                  helper.make_tensor_value_info("logits_count", i64, [1])]
        outputs = [helper.make_tensor_value_info("logits", f32, ["batch", "positions", c.vocab])]
        for i in range(c.layers):
            for kind in ("key", "value"):
                inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", f32, kv_shape))
                outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", f32, kv_shape))
        graph = helper.make_graph(self.nodes, f"{c.architecture}-gqa", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                        helper.make_opsetid(MS, 1)],
                                  producer_name="edge-rag")
        model.ir_version = 10
        return model


def _block_zero_points(codes: Quantized) -> np.ndarray:
    """Per-block zero points as GatherBlockQuantized reads them: [N, blocks, 1], one per byte."""
    from .quantize import unpack_zero_points

    return unpack_zero_points(codes.zero_points, codes.bits, codes.packed.shape[1]) \
        .astype(np.uint8)[..., None]


def write_graph(weights: Weights, out: Path, bits: int, positions: int, symmetric: bool = True,
                embed_bits: int | None = None, progress: Callable[[str], None] = print,
                block: int = 32) -> Path:
    """Write ``out`` (model.onnx + model.onnx_data) for ``weights`` at ``bits`` (4, 8 or 32).

    ``block``: input features per scale in the layers' weights (halved where it does not divide
    a weight's input size); the embedding table and a tied head keep blocks of 32.
    """
    writer = GraphWriter(weights, bits, block, symmetric=symmetric, embed_bits=embed_bits,
                         progress=progress)
    writer.rotary_caches(positions)
    model = writer.build()
    progress(f"saving {len(writer.nodes)} nodes, {len(writer.inits)} initializers ...")
    # Weights in a side file: onnxruntime maps it instead of parsing a large protobuf.
    onnx.save_model(model, str(out), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=out.name + "_data", size_threshold=1024)
    return out
