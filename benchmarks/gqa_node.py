"""One GroupQueryAttention decode step alone: fp32 vs fp16 KV cache, softmax scale as alpha or folded.

    python -m benchmarks.gqa_node [--heads 9 --kv-heads 3 --head-dim 64 --window 2048]
                                  [--contexts 317 1017] [--rounds 25]

A one-node graph with a model's attention shape (default SmolLM2-135M's) decodes one token
against a cache of N tokens, past and present bound to one buffer as the runtime does, on one
intra-op thread; the fastest of ``--rounds`` rounds of 50 calls is reported per variant. Variants:
``fp32`` (what the exporter writes: ``scale`` = 1/sqrt(head_dim)), ``fp32-scale1`` (the scale
folded into the q weights, ``scale`` = 1, so that MLAS may take its unpacked one-row kernel) and
``fp16`` (an fp16 cache: half the bytes, but onnxruntime's CPU kernel converts it to fp32).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from .common import markdown_table, write_result

VARIANTS = {"fp32": (np.float32, None), "fp32-scale1": (np.float32, 1.0), "fp16": (np.float16, None)}


def session(args: argparse.Namespace, dtype: type, scale: float | None) -> ort.InferenceSession:
    """A session of one GroupQueryAttention node with rotary embedding, cache of ``window``."""
    kind = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    h, kv, d, window = args.heads, args.kv_heads, args.head_dim, args.window
    rotary = [numpy_helper.from_array(np.random.rand(window, d // 2).astype(dtype), n)
              for n in ("cos", "sin")]
    node = helper.make_node("GroupQueryAttention",
                            ["qkv", "", "", "past_k", "past_v", "seqlens_k", "total", "cos", "sin"],
                            ["out", "present_k", "present_v"], domain="com.microsoft", num_heads=h,
                            kv_num_heads=kv, do_rotary=1, scale=scale or float(1 / np.sqrt(d)))
    cache = [1, kv, window, d]
    graph = helper.make_graph(
        [node], "gqa",
        [helper.make_tensor_value_info("qkv", kind, [1, 1, (h + 2 * kv) * d]),
         helper.make_tensor_value_info("past_k", kind, cache),
         helper.make_tensor_value_info("past_v", kind, cache),
         helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
         helper.make_tensor_value_info("total", TensorProto.INT32, [])],
        [helper.make_tensor_value_info("out", kind, [1, 1, h * d]),
         helper.make_tensor_value_info("present_k", kind, cache),
         helper.make_tensor_value_info("present_v", kind, cache)], rotary)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options)


def call_us(sess: ort.InferenceSession, args: argparse.Namespace, dtype: type, total: int) -> float:
    """Microseconds per call, 50 calls on a cache holding ``total`` tokens."""
    cache = [1, args.kv_heads, args.window, args.head_dim]
    arrays = [np.random.rand(*cache).astype(dtype) for _ in range(2)]  # kept alive: the
    past_k, past_v = (ort.OrtValue.ortvalue_from_numpy(a) for a in arrays)  # values share them
    binding = sess.io_binding()
    binding.bind_cpu_input("qkv", np.random.rand(1, 1, (args.heads + 2 * args.kv_heads)
                                                 * args.head_dim).astype(dtype))
    binding.bind_cpu_input("seqlens_k", np.array([total - 1], np.int32))
    binding.bind_cpu_input("total", np.array(total, np.int32))
    for name, value in (("k", past_k), ("v", past_v)):
        binding.bind_ortvalue_input(f"past_{name}", value)
        binding.bind_ortvalue_output(f"present_{name}", value)
    binding.bind_output("out")
    start = time.perf_counter()
    for _ in range(50):
        sess.run_with_iobinding(binding)
    return (time.perf_counter() - start) / 50 * 1e6


def main(argv: list[str] | None = None) -> int:
    """Time every variant at every context, interleaved; print a table, write JSON."""
    args = _parser().parse_args(argv)
    sessions = {name: session(args, dtype, scale) for name, (dtype, scale) in VARIANTS.items()}
    best: dict[tuple[str, int], float] = {}
    for _ in range(args.rounds):
        for name, sess in sessions.items():
            for total in args.contexts:
                us = call_us(sess, args, VARIANTS[name][0], total)
                best[(name, total)] = min(best.get((name, total), float("inf")), us)
    rows = [{"variant": name, "context": total, "us_per_call": round(us, 1)}
            for (name, total), us in best.items()]
    print(markdown_table(["variant", "context", "us_per_call"],
                         [[r["variant"], r["context"], r["us_per_call"]] for r in rows]))
    payload = {"shape": {k: getattr(args, k) for k in ("heads", "kv_heads", "head_dim", "window")},
               "rounds": args.rounds, "stat": "best", "threads": 1, "onnxruntime": ort.__version__,
               "load_average": list(os.getloadavg()), "rows": rows}
    print(f"wrote {write_result(args.output, payload)}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--window", type=int, default=2048, help="KV buffer tokens")
    parser.add_argument("--contexts", type=int, nargs="+", default=[317, 1017])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--output", default="gqa_node", help="results file name, no .json")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
