"""Decode speed of GQA model folders under onnxruntime session options, side by side in one process.

    python -m benchmarks.slm_options --folders smollm2-135m-q4e8 smollm2-135m-q8 \\
        --configs default threads=1 session.intra_op.allow_spinning=0 [--contexts 317 1017]

Each (folder, config) is one session; every round prefills the same token ids to each context
length and times ``--steps`` greedy decode steps (``GqaDecoder.step``, the runtime's own loop),
interleaved over all sessions; the fastest round per row is reported (the machine is shared).
A config is ``default`` or comma-separated ``key=value`` items: ``threads`` (intra-op threads),
``optimization`` (disable/basic/extended/all), ``arena`` (0/1, the CPU memory arena; the runtime
runs GQA graphs without one), ``mem_pattern`` (0/1), ``window`` (KV buffer tokens; default the
model's context, capped at its rotary table) and any onnxruntime session config entry
(``session.intra_op.allow_spinning=0``, ``session.dynamic_block_base=4``).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
import onnxruntime as ort

from edge_rag.config import models_home
from edge_rag.models import slm as slm_module
from edge_rag.models.folder import ModelFolder
from edge_rag.models.session import OPTIMIZATION_LEVELS, session_options

from .common import markdown_table, write_result


def parse_config(config: str) -> tuple[ort.SessionOptions, bool, int | None]:
    """Session options, whether to keep the arena, and the KV window of one config string."""
    opts, arena, window = session_options(0), False, None
    for item in filter(None, config.split(",")):
        key, _, value = item.partition("=")
        if key == "default":
            continue
        if key == "threads":
            opts.intra_op_num_threads = int(value)
        elif key == "optimization":
            opts.graph_optimization_level = OPTIMIZATION_LEVELS[value]
        elif key == "arena":
            arena = value == "1"
        elif key == "mem_pattern":
            opts.enable_mem_pattern = value == "1"
        elif key == "window":
            window = int(value)
        else:
            opts.add_session_config_entry(key, value)
    return opts, arena, window


def load(folder: str, config: str) -> slm_module.SLM:
    """The folder's SLM with a config's options (``arena=1`` overrides the runtime's no-arena)."""
    opts, arena, window = parse_config(config)
    real = slm_module.new_session

    def with_arena(path: str, options: ort.SessionOptions,
                   providers: list[str] | None = None) -> ort.InferenceSession:
        options.enable_cpu_mem_arena = arena
        return real(path, options, providers)

    slm_module.new_session = with_arena
    try:
        return slm_module.SLM(ModelFolder.open(models_home() / "models" / folder), options=opts,
                              context_tokens=window)
    finally:
        slm_module.new_session = real


def step_ms(slm: slm_module.SLM, ids: list[int], steps: int) -> float:
    """Mean milliseconds of a greedy decode step after prefilling ``ids``."""
    decoder = slm._gqa
    assert decoder is not None, "slm_options measures GQA graphs only"
    decoder.reset()
    token = int(np.argmax(decoder.prefill([ids], 128, exact=True)[0]))
    start = time.perf_counter()
    for _ in range(steps):
        token = int(np.argmax(decoder.step([token])[0]))
    return (time.perf_counter() - start) * 1000 / steps


def main(argv: list[str] | None = None) -> int:
    """Measure every (folder, config) at every context length, print a table, write JSON."""
    args = _parser().parse_args(argv)
    sessions = {(f, c): load(f, c) for f in args.folders for c in args.configs}
    ids = [int(i) for i in np.random.default_rng(0).integers(100, 20000, max(args.contexts))]
    runs: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        for (folder, config), slm in sessions.items():
            for n in args.contexts:
                ms = step_ms(slm, ids[:n], args.steps)
                runs.append({"folder": folder, "config": config, "context": n, "step_ms": round(ms, 3),
                             "round": round_})
    rows = _best(runs)
    print(markdown_table(["folder", "config", "context", "step_ms", "decode_tps", "vs_shortest"],
                         [[r[k] for k in ("folder", "config", "context", "step_ms", "decode_tps",
                                          "vs_shortest")] for r in rows]))
    payload = {"contexts": args.contexts, "steps": args.steps, "rounds": args.rounds, "stat": "best",
               "onnxruntime": ort.__version__, "load_average": list(os.getloadavg()),
               "rows": rows, "runs": runs}
    print(f"wrote {write_result(args.output, payload)}")
    return 0


def _best(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fastest round per (folder, config, context), with tok/s and the ratio to the shortest."""
    best: dict[tuple, float] = {}
    for r in runs:
        key = (r["folder"], r["config"], r["context"])
        best[key] = min(best.get(key, float("inf")), r["step_ms"])
    rows: list[dict[str, Any]] = []
    shortest: dict[tuple[str, str], float] = {}
    for (folder, config, n), ms in best.items():
        shortest.setdefault((folder, config), ms)
        rows.append({"folder": folder, "config": config, "context": n, "step_ms": ms,
                     "decode_tps": round(1000 / ms, 1),
                     "vs_shortest": round(shortest[(folder, config)] / ms, 2)})
    return rows


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folders", nargs="+", default=["smollm2-135m-q4e8"],
                        help="GQA model folders under the models home")
    parser.add_argument("--configs", nargs="+", default=["default"],
                        help="'default' or comma-separated key=value items (see the module doc)")
    parser.add_argument("--contexts", type=int, nargs="+", default=[317, 1017])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best reported)")
    parser.add_argument("--output", default="slm_options", help="results file name, no .json")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
