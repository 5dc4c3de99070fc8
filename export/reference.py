"""The fp32 reference of an export check, run one layer at a time: never a whole fp32 model.

An export is checked by the greedy answers of its quantized graph and of the fp32 graph of the
same weights to the fixed check questions (``slm.CHECKS``). Holding the fp32 graph whole took
most of an export's memory: Qwen2.5-0.5B peaked at 8.5 GB, the 1.5B at 22.1 GiB (issue 44).
Here the fp32 reference gives the same greedy answers without it:

- while the quantized graph is written, every fp32 tensor it reads is also saved to a ``.npy``
  file (:class:`TensorFiles`); the fp32 model is then on disk, not in memory;
- the reference runs all check sequences through one layer at a time: the layer's fp32 graph is
  written by the same :class:`~.gqa_graph.GraphWriter` (``bits`` 32: the very operators of the
  fp32 reference graph), run by onnxruntime over every sequence, and dropped; the final norm and
  the LM head (vocabulary rows in slices) run in numpy from the mapped files;
- greedy decoding one token a pass would take 24 passes, so the quantized model drafts: a pass
  runs prompt + accepted tokens + the quantized model's greedy continuation, keeps the draft up
  to the first token where fp32's choice differs, and takes fp32's token there. Every token kept
  is fp32's own greedy choice, so the answers are exactly fp32's; a pass costs one read of the
  weights, and the passes are as many as the drafts' disagreements (2-4 here).

Measured (``python -m benchmarks export_memory``, a shared 2-core machine): the Qwen2.5-0.5B 4-bit export
peaks at 1.26 GiB (the whole-graph check was killed by the 8 GiB watchdog), the 1.5B at 3.04 GiB
(22.1 GiB before), with the same files as before (byte for byte for the 0.5B) and the same
verdict. The writer's GGUF dequantization and block quantization also go a few thousand rows at
a time (``weights.py``, ``quantize.py``): whole, a 151,936-row table's temporaries took several
times its fp32 size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .weights import Weights

HEAD_ROWS = 16384  # LM head rows per product: [positions, 16384] logits at a time
POSITIONS = 1024  # rotary table rows of a layer graph: longer than any check sequence


class TensorFiles:
    """fp32 tensors saved as ``.npy`` files while a graph is written, read back mapped."""

    def __init__(self, weights: Weights, folder: Path) -> None:
        self.source, self.folder = weights, folder
        folder.mkdir(parents=True, exist_ok=True)
        self.saved: set[str] = set()

    def teeing(self) -> Weights:
        """``source`` whose every tensor read is also saved (the quantized graph's writer reads it)."""
        def get(name: str) -> np.ndarray | None:
            array = self.source.get(name)
            if array is not None and name not in self.saved:
                np.save(self._path(name), array.astype(np.float32, copy=False))
                self.saved.add(name)
            return array
        return self._with(get)

    def reading(self) -> Weights:
        """The saved tensors, memory-mapped (their pages go when the arrays do)."""
        def get(name: str) -> np.ndarray | None:
            return np.load(self._path(name), mmap_mode="r") if name in self.saved else None
        return self._with(get)

    def _with(self, get: Callable[[str], np.ndarray | None]) -> Weights:
        w = self.source
        return Weights(w.config, get, w.tokenizer_json, w.chat_template, w.origin, w.extra)

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.npy"


class LayerwiseReference:
    """The fp32 decoder over a few sequences, one layer graph in memory at a time."""

    def __init__(self, weights: Weights, threads: int = 0) -> None:
        self.w, self.c, self.threads = weights, weights.config, threads
        self.passes = 0

    def greedy(self, prompts: Sequence[list[int]], draft: Callable[[list[int], int], list[int]],
               max_new: int, stops: set[int]) -> list[list[int]]:
        """fp32's greedy continuation (stop token excluded) of each prompt, ``max_new`` at most.

        ``draft(ids, n)``: up to ``n`` guessed next tokens (the quantized model's greedy ones).
        """
        accepted: list[list[int]] = [[] for _ in prompts]
        active = list(range(len(prompts)))
        while active:
            drafts = [draft(list(prompts[i]) + accepted[i], max_new - len(accepted[i])) for i in active]
            sequences = [list(prompts[i]) + accepted[i] + d for i, d in zip(active, drafts)]
            firsts = [len(prompts[i]) + len(accepted[i]) - 1 for i in active]
            chosen = self.argmax(sequences, firsts)
            for i, guess, tokens in zip(active, drafts, chosen):
                _accept(accepted[i], guess, tokens, max_new, stops)
            active = [i for i in active if not _finished(accepted[i], max_new, stops)]
        return [ids[:-1] if ids and ids[-1] in stops else ids for ids in accepted]

    def argmax(self, sequences: Sequence[list[int]], firsts: Sequence[int]) -> list[list[int]]:
        """fp32's most likely next token at each position from ``firsts[i]`` to the end."""
        self.passes += 1
        table = self.w.get("model.embed_tokens.weight")
        assert table is not None
        hidden = [np.asarray(table[np.array(s)], np.float32)[None] for s in sequences]
        residual = list(hidden)
        del table
        for layer in range(self.c.layers):
            hidden, residual = self._layer(layer, hidden, residual)
        return self._head(hidden, residual, firsts)

    def _layer(self, index: int, hidden: list[np.ndarray], residual: list[np.ndarray]
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        import onnxruntime as ort

        from edge_rag.models.session import session_options

        model, outputs = layer_graph(self.w, index)
        session = ort.InferenceSession(model.SerializeToString(), session_options(self.threads),
                                       providers=["CPUExecutionProvider"])
        del model
        results = [session.run(outputs, self._feeds(index, x, r)) for x, r in zip(hidden, residual)]
        return [x for x, _ in results], [r for _, r in results]

    def _feeds(self, index: int, x: np.ndarray, residual: np.ndarray) -> dict[str, np.ndarray]:
        length = x.shape[1]
        past = np.zeros((1, self.c.kv_heads, 0, self.c.head_dim), np.float32)  # a first prompt
        return {"hidden": x, "residual": residual, "seqlens_k": np.array([length - 1], np.int32),
                "total_sequence_length": np.array(length, np.int32),
                f"past_key_values.{index}.key": past, f"past_key_values.{index}.value": past.copy()}

    def _head(self, hidden: list[np.ndarray], residual: list[np.ndarray],
              firsts: Sequence[int]) -> list[list[int]]:
        weight = self.w.get("model.norm.weight")
        normed = [_rms_norm((x + r)[0, first:], weight, self.c.rms_eps)
                  for x, r, first in zip(hidden, residual, firsts)]
        rows = np.concatenate(normed)
        head = self.w.get("lm_head.weight")
        head = self.w.get("model.embed_tokens.weight") if head is None else head
        assert head is not None
        best = np.full(len(rows), -np.inf, np.float32)
        choice = np.zeros(len(rows), np.int64)
        for start in range(0, head.shape[0], HEAD_ROWS):
            logits = rows @ np.asarray(head[start:start + HEAD_ROWS]).T
            top = logits.argmax(axis=1)
            value = logits[np.arange(len(rows)), top]
            better = value > best
            best[better], choice[better] = value[better], top[better] + start
        del head
        splits = np.cumsum([len(n) for n in normed])[:-1]
        return [[int(t) for t in part] for part in np.split(choice, splits)]


def layer_graph(weights: Weights, index: int):
    """The fp32 graph of decoder layer ``index`` alone (inputs ``hidden`` and ``residual``, the
    layer's KV inputs, ``seqlens_k``, ``total_sequence_length``) and its two output names."""
    from onnx import TensorProto, helper

    from .gqa_graph import MS, OPSET, GraphWriter

    c = weights.config
    writer = GraphWriter(weights, 32, progress=lambda _: None)
    writer.rotary_caches(POSITIONS)
    out, residual = writer.layer(index, "hidden", "residual")
    f32 = TensorProto.FLOAT
    state = ["batch", "sequence", c.hidden]
    kv = ["batch", c.kv_heads, "max_length", c.head_dim]
    inputs = [helper.make_tensor_value_info("hidden", f32, state),
              helper.make_tensor_value_info("residual", f32, state),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]),
              helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
              helper.make_tensor_value_info(f"past_key_values.{index}.key", f32, kv),
              helper.make_tensor_value_info(f"past_key_values.{index}.value", f32, kv)]
    outputs = [helper.make_tensor_value_info(name, f32, state) for name in (out, residual)]
    graph = helper.make_graph(writer.nodes, f"layer-{index}", inputs, outputs, writer.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    return model, [out, residual]


def _rms_norm(x: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    scale = 1.0 / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + eps)
    return (x * scale * (1.0 if weight is None else np.asarray(weight))).astype(np.float32)


def _accept(accepted: list[int], guess: list[int], chosen: list[int], max_new: int,
            stops: set[int]) -> None:
    """Append fp32's tokens while they agree with the draft, and its first differing one."""
    for j, token in enumerate(chosen):
        accepted.append(token)
        if _finished(accepted, max_new, stops) or j >= len(guess) or token != guess[j]:
            return


def _finished(ids: list[int], max_new: int, stops: set[int]) -> bool:
    return len(ids) >= max_new or bool(ids and ids[-1] in stops)


def verify_layerwise(weights: Weights, quantized_dir: Path, max_new: int = 24) -> list[tuple[str, str]]:
    """Check ``quantized_dir`` against the fp32 ``weights`` (saved tensors) on the fixed
    questions, as ``slm.verify_against_fp32`` does with a whole fp32 graph; the answer pairs."""
    from edge_rag.models.slm import SLM, GenerationConfig

    from . import log
    from .slm import CHECK_QUESTIONS, judge_agreement

    log(f"checking {quantized_dir.name} against fp32, one layer at a time, on "
        f"{len(CHECK_QUESTIONS)} fixed questions ...")
    slm = SLM.from_path(quantized_dir, context_tokens=1024)
    config = GenerationConfig(max_new_tokens=max_new)
    quantized = [slm.generate(slm.chat(q), config).text.strip() for q in CHECK_QUESTIONS]
    prompts = [slm.tokenizer.encode(slm.chat(q), add_special_tokens=False).ids for q in CHECK_QUESTIONS]
    reference = LayerwiseReference(weights)
    ids = reference.greedy(prompts, lambda p, n: quantized_greedy(slm, p, n), max_new, slm.stop_ids)
    pairs = [(slm.tokenizer.decode(i, skip_special_tokens=True).strip(), q) for i, q in zip(ids, quantized)]
    log(f"fp32 answers in {reference.passes} layer-by-layer passes")
    judge_agreement(pairs, quantized_dir)
    return pairs


def quantized_greedy(slm, ids: list[int], count: int) -> list[int]:
    """Up to ``count`` greedy tokens of an exported GQA model after ``ids`` (a stop token ends them)."""
    decoder = slm._gqa
    logits = decoder.prefill([ids], slm.prefill_chunk, exact=True)[0]
    tokens: list[int] = []
    while len(tokens) < count:
        tokens.append(int(np.argmax(logits)))
        if tokens[-1] in slm.stop_ids or len(tokens) == count:
            break
        logits = decoder.step([tokens[-1]])[0]
    return tokens
