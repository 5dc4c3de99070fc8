"""Run a GroupQueryAttention decoder graph (``edge-rag export slm --graph gqa``) step by step.

The graph (``export/gqa_graph.py``) takes ``input_ids``, ``seqlens_k`` (tokens in the cache after
the call, minus one), ``total_sequence_length`` and one preallocated key and one value buffer per
layer, ``[1, kv_heads, window, head_dim]`` (fp32, or int8 codes where the manifest says
``kv_cache: int8-per-channel``). The same buffer is bound as the layer's past input and its
present output, so GroupQueryAttention appends in place: nothing is copied per step. A
:class:`KVCache` remembers which tokens its buffer holds, so a prompt that starts with the same
tokens prefills only what differs. A batch runs as one cache and one call per row (multi-token
input after a non-empty cache works only at batch size 1). Graphs of exporter version 4 on
return the logits of ``logits_count`` last positions: :meth:`GqaDecoder.check` runs a token and a
few drafted ones in one call (for :mod:`.lookup`); older graphs are decoded one token a call.

Design: docs/design/models.md
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnxruntime as ort


def cache_dtype(manifest: dict) -> type:
    """The KV buffers' element type: int8 where the export quantized the cache
    (``export/kv_cache.py``, manifest ``kv_cache``), else fp32."""
    return np.int8 if str(manifest.get("kv_cache", "fp32")).startswith("int8") else np.float32


class KVCache:
    """One sequence's key/value buffers and the tokens whose keys and values they hold."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, window: int,
                 dtype: type = np.float32) -> None:
        shape = [1, kv_heads, window, head_dim]
        self.window = window
        self.buffers = [ort.OrtValue.ortvalue_from_shape_and_type(shape, dtype)
                        for _ in range(2 * layers)]
        self.ids: list[int] = []
        self.step_binding: ort.IOBinding | None = None
        # Decode-step inputs, bound once as OrtValues sharing these arrays' memory.
        self.step_inputs = (np.zeros((1, 1), dtype=np.int64), np.zeros(1, dtype=np.int32),
                            np.zeros((), dtype=np.int32), np.ones(1, dtype=np.int64))

    def reusable(self, ids: Sequence[int], chunk: int) -> int:
        """Length of the cached prefix a prompt ``ids`` can keep (at least one token stays new).

        Rounded down to a multiple of the prefill chunk: the rest of the prompt then runs in
        the very chunks a fresh prefill would use, so reuse never changes a logit (a 1-token
        and a 200-token matrix product may round differently, enough to flip a sampled token).
        """
        limit = min(len(self.ids), len(ids) - 1)
        same = 0
        while same < limit and self.ids[same] == ids[same]:
            same += 1
        return same - same % chunk


class GqaDecoder:
    """Prefill and decode through a GQA graph with caches that live across calls."""

    def __init__(self, session: ort.InferenceSession, manifest: dict, window: int) -> None:
        self.session = session
        self.layers = int(manifest["num_layers"])
        self.kv_heads = int(manifest["num_kv_heads"])
        self.head_dim = int(manifest["head_dim"])
        self.vocab = int(manifest["vocab_size"])
        self.window = min(window, int(manifest.get("max_positions", window)))
        self.cache_dtype = cache_dtype(manifest)
        self.caches: list[KVCache] = []
        self.reused_tokens = 0
        self.run_options = ort.RunOptions()  # SLM.interrupt sets its terminate flag
        # Exporter version 4 on: logits [batch, logits_count, vocab]; before: [batch, vocab].
        self.counted = "logits_count" in {i.name for i in session.get_inputs()}
        self._logits = np.zeros((1, 1, self.vocab) if self.counted else (1, self.vocab), np.float32)
        self._last = self._logits.reshape(self.vocab)
        self._logits_value = ort.OrtValue.ortvalue_from_numpy(self._logits)

    def reset(self) -> None:
        """Forget every cached prefix (the next prompt is prefilled whole)."""
        for cache in self.caches:
            cache.ids.clear()
        self.reused_tokens = 0

    def prefill(self, encoded: Sequence[Sequence[int]], chunk: int, exact: bool = False) -> np.ndarray:
        """Logits [rows, vocab] after each prompt; the first row's cache keeps a common prefix.

        ``exact`` (greedy decoding) keeps the whole common prefix; otherwise it is rounded down
        to a prefill-chunk boundary so that a seeded sample is reproduced exactly.
        """
        while len(self.caches) < len(encoded):
            self.caches.append(KVCache(self.layers, self.kv_heads, self.head_dim, self.window,
                                       self.cache_dtype))
        del self.caches[max(1, len(encoded)):]  # extra rows' buffers are not kept between calls
        rows = []
        for cache, ids in zip(self.caches, encoded):
            keep = cache.reusable(ids, 1 if exact else chunk)
            self.reused_tokens = keep if cache is self.caches[0] else self.reused_tokens
            del cache.ids[keep:]
            for start in range(keep, len(ids), chunk):
                self._run(cache, list(ids[start:start + chunk]))
            rows.append(self._last.copy())
        return np.stack(rows)

    def step(self, next_ids: Sequence[int]) -> np.ndarray:
        """Logits [rows, vocab] after appending one token to each row's cache."""
        rows = []
        for cache, token in zip(self.caches, next_ids):
            total = self._check(cache, 1)
            ids, seqlens, total_length, _ = cache.step_inputs
            ids[0, 0], seqlens[0], total_length[...] = int(token), total - 1, total
            self.session.run_with_iobinding(self._step_binding(cache), self.run_options)
            cache.ids.append(int(token))
            rows.append(self._last.copy())
        return np.stack(rows)

    def check(self, tokens: Sequence[int]) -> np.ndarray:
        """Logits [len(tokens), vocab] after each of ``tokens``, appended to the first cache in
        one call (a graph with ``logits_count``); :meth:`rewind` drops the ones not kept."""
        cache = self.caches[0]
        total = self._check(cache, len(tokens))
        binding = self._bind_cache(self.session.io_binding(), cache, logits=False)
        self._bind_inputs(binding, list(tokens), total, len(tokens))
        binding.bind_output("logits", "cpu")
        self.session.run_with_iobinding(binding, self.run_options)
        cache.ids.extend(int(t) for t in tokens)
        return binding.get_outputs()[-1].numpy()[0].copy()  # bound last; it dies with the binding

    def rewind(self, tokens: int) -> None:
        """Forget the first cache's last ``tokens`` tokens (the next call overwrites them)."""
        if tokens:
            del self.caches[0].ids[-tokens:]

    def _check(self, cache: KVCache, new: int) -> int:
        total = len(cache.ids) + new
        if total > cache.window:
            raise ValueError(f"{total} tokens exceed the {cache.window}-token cache")
        return total

    def _step_binding(self, cache: KVCache) -> ort.IOBinding:
        # Bound once per cache: a decode step only writes three numbers into bound arrays.
        if cache.step_binding is None:
            binding = self.session.io_binding()
            for name, array in zip(("input_ids", "seqlens_k", "total_sequence_length",
                                    "logits_count")[:4 if self.counted else 3], cache.step_inputs):
                binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(array))
            cache.step_binding = self._bind_cache(binding, cache)
        return cache.step_binding

    def _run(self, cache: KVCache, new: list[int]) -> None:
        total = self._check(cache, len(new))
        binding = self._bind_inputs(self.session.io_binding(), new, total, 1)
        self.session.run_with_iobinding(self._bind_cache(binding, cache), self.run_options)
        cache.ids.extend(new)

    def _bind_inputs(self, binding: ort.IOBinding, new: list[int], total: int,
                     logits: int) -> ort.IOBinding:
        binding.bind_cpu_input("input_ids", np.array([new], dtype=np.int64))
        binding.bind_cpu_input("seqlens_k", np.array([total - 1], dtype=np.int32))
        binding.bind_cpu_input("total_sequence_length", np.array(total, dtype=np.int32))
        if self.counted:
            binding.bind_cpu_input("logits_count", np.array([logits], dtype=np.int64))
        return binding

    def _bind_cache(self, binding: ort.IOBinding, cache: KVCache, logits: bool = True) -> ort.IOBinding:
        for layer in range(self.layers):
            for slot, kind in ((0, "key"), (1, "value")):
                buffer = cache.buffers[2 * layer + slot]
                binding.bind_ortvalue_input(f"past_key_values.{layer}.{kind}", buffer)
                binding.bind_ortvalue_output(f"present.{layer}.{kind}", buffer)
        if logits:
            binding.bind_ortvalue_output("logits", self._logits_value)
        return binding
