"""Where a GQA decode step spends its time: onnxruntime's profiler, per operator type.

    python -m benchmarks.slm_profile [--models smollm2-135m-q4e8] [--contexts 300 1000]
        [--steps 32] [--threads 1]

For each model folder and context length: prefill that many tokens of the paper, then profile
``--steps`` decode steps (``SessionOptions.enable_profiling``) and report, per step, the wall
time, the time inside ``session.run`` and the summed kernel time of each operator type
(MatMulNBits, GroupQueryAttention, ...). What grows with the context is attention over the KV
cache; what does not is the weights (issue 15: decode at 1,000 tokens against 300).
One thread by default, so the split does not depend on how busy the other core is.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time
from pathlib import Path

from edge_rag.config import models_home

from .common import markdown_table, write_result
from .slm_quality import fixed_text

WINDOW = 2048  # the KV buffers' length, as the default profile allocates them


def profile(folder: str, context: int, steps: int, threads: int) -> dict:
    """Profile ``steps`` decode steps of ``folder`` after a ``context``-token prompt."""
    from edge_rag.models.folder import ModelFolder
    from edge_rag.models.session import session_options
    from edge_rag.models.slm import SLM

    options = session_options(threads)
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.gettempdir(), "slm_profile")
    slm = SLM(ModelFolder.open(models_home() / "models" / folder), context_tokens=WINDOW,
              options=options)
    if slm._gqa is None:
        raise SystemExit(f"{folder}: not a GQA graph")
    ids = (slm.tokenizer.encode(fixed_text() * 4).ids * 4)[:context]
    slm._gqa.prefill([ids], slm.prefill_chunk)
    for _ in range(4):  # warm-up steps, outside the window profiled
        slm._gqa.step([ids[-1]])
    since = (time.time_ns() - slm.session.get_profiling_start_time_ns()) / 1000
    start = time.perf_counter()
    for _ in range(steps):
        slm._gqa.step([ids[-1]])
    wall = (time.perf_counter() - start) / steps * 1000
    path = slm.session.end_profiling()
    events = [e for e in json.loads(Path(path).read_text()) if e.get("ts", 0) >= since]
    os.remove(path)
    return _summary(folder, context, threads, wall, events)


def _summary(folder: str, context: int, threads: int, wall: float, events: list[dict]) -> dict:
    runs = [e for e in events if e.get("name") == "model_run"]
    by_op: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] += event["dur"]
    per_step = {op: round(us / len(runs) / 1000, 3) for op, us in by_op.most_common()}
    return {"model": folder, "context": context, "threads": threads, "step_ms": round(wall, 3),
            "session_run_ms": round(sum(e["dur"] for e in runs) / len(runs) / 1000, 3),
            "python_ms": round(wall - sum(e["dur"] for e in runs) / len(runs) / 1000, 3),
            "ops_ms": per_step}


def main(argv: list[str] | None = None) -> int:
    """Profile, print a table, write benchmarks/results/slm_profile.json."""
    args = _parser().parse_args(argv)
    rows = [profile(m, n, args.steps, args.threads) for m in args.models for n in args.contexts]
    ops = sorted({op for row in rows for op in row["ops_ms"]},
                 key=lambda op: -max(row["ops_ms"].get(op, 0) for row in rows))[:4]
    table = [[r["model"], r["context"], r["step_ms"], r["python_ms"],
              *(r["ops_ms"].get(op, 0) for op in ops)] for r in rows]
    print(markdown_table(["model", "context", "step ms", "python ms", *(f"{op} ms" for op in ops)],
                         table))
    print(f"wrote {write_result(args.output, {'steps': args.steps, 'rows': rows})}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-q4e8"],
                        help="GQA model folders (default: %(default)s)")
    parser.add_argument("--contexts", nargs="+", type=int, default=[300, 1000])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", default="slm_profile", help="results file name, no .json")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
