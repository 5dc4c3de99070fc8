"""SLM speed and memory side by side: load, prefill, decode, TTFT, peak RSS.

    python -m benchmarks slm_speed [--models qwen2.5-coder-0.5b qwen2.5-coder-1.5b]
        [--variants q4 llama.cpp] [--prompt-tokens 300 1000] [--new-tokens 64]

Variants: ``int8`` (optimum graph), ``q8``/``q4`` (GQA graph, ``edge-rag export slm --bits``),
``fp32``, ``pytorch`` (the GGUF in transformers, [export] extra) and ``llama.cpp``: the same
GGUF through llama-cpp-python built on this machine (``pip install 'edge-rag[llama]'`` compiles
llama.cpp for this CPU, about 9 minutes on 2 cores), the speed bar: ``decode_vs_llama`` and
``prefill_vs_llama`` divide a row's speed by llama.cpp's at the same prompt length in the same
run. (The prebuilt node-llama-cpp binaries used before issue 44 run llama.cpp about 1.7x
slower than this native build, which made edge-rag look 2.2x faster instead of 1.2-1.4x.) On a
virtual machine that advertises AMX without running it (this one: llama.cpp's AMX kernels die of
SIGILL on ``tilezero``) build without it: ``CMAKE_ARGS="-DCMAKE_C_FLAGS='-mno-amx-tile
-mno-amx-int8 -mno-amx-bf16' -DCMAKE_CXX_FLAGS='...the same...'" pip install --no-cache-dir
--force-reinstall 'edge-rag[llama]'``; everything else stays native (AVX-512, VNNI).
Any other variant names a model folder ``MODEL-VARIANT``. Each (model, variant) runs in its own
process so that peak RSS is its own; within it the prompt lengths run shortest first, and the
prompt text is built with the tokenizer alone. ``--repeats N`` measures the whole set N times,
interleaved, and reports medians (the machine may be shared). ``VARIANT@COMMIT`` runs a model
folder with the runtime (``edge_rag/``) of an earlier commit of this repository, so that an A/B
of the runtime on the same folder happens in one run: ``--variants q4 q4@2965484``.

``decode_tps`` decodes one token a call (``draft_tokens`` 0), as llama.cpp's figure does. On a
graph that checks drafted tokens (exporter version 4 on) the same prompt is decoded again with
prompt lookup (``edge_rag/models/lookup.py``, the runtime's default for greedy decoding):
``decode_tps_lookup``, the drafted tokens ``accepted`` and whether the text was the same.

The memory bus bounds decoding: one step reads every weight once (all but the embedding rows it
does not look up). ``read_mb`` is what a step of the row's model file reads, ``read_gbs`` that
times ``decode_tps``; ``bus_gbs`` is the fastest this machine streams memory (``--bus-threads``
threads of numpy reductions over disjoint parts of a 1 GiB array, the best of 5 passes, measured
once per run) and ``ceiling_tps`` = ``bus_gbs`` / ``read_mb``, the decode speed no runtime reading
those bytes once per token can pass.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import replace
from pathlib import Path

from benchmarks.core.datasets import LIHUA_ZIP
from benchmarks.core.measure import peak_rss_mb
from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from benchmarks.core.runtime import child_env, runtime_at
from edge_rag.config import models_home

MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
LLAMA_HINT = ("the llama.cpp variant needs llama-cpp-python built for this CPU: "
              "pip install 'edge-rag[llama]' (compiles llama.cpp, about 9 minutes on 2 cores)")


def measure(model: str, variant: str, prompt_tokens: int, new_tokens: int, threads: int = 0) -> dict:
    """Run inside a child process: load the model, prefill a long prompt, decode greedily."""
    from edge_rag.models.slm import SLM, GenerationConfig

    folder = models_home() / "models" / f"{model}-{variant}"
    start = time.perf_counter()
    slm = SLM.from_path(folder, threads=threads)
    load_s = time.perf_counter() - start
    prompt = summary_prompt(slm, prompt_tokens)
    slm.generate(slm.chat("Hi"), GenerationConfig(max_new_tokens=2))  # warm-up
    stream_start = time.perf_counter()
    if slm._gqa is not None:
        slm._gqa.reset()
    first = next(iter(slm.stream(prompt, GenerationConfig(max_new_tokens=1, ignore_eos=True))))
    ttft_ms = (time.perf_counter() - stream_start) * 1000
    if slm._gqa is not None:
        slm._gqa.reset()  # measure a whole prefill, not the prefix the TTFT run left behind
    slm._prefix = None  # the optimum graph's prefix cache likewise
    config = GenerationConfig(max_new_tokens=new_tokens, ignore_eos=True)
    drafting = getattr(slm._gqa, "counted", False)  # a graph that checks prompt-lookup drafts
    if drafting:
        config, lookup = replace(config, draft_tokens=0), config
    result = slm.generate(prompt, config)
    extra = {}
    if drafting:  # the same greedy text with drafts checked in one call (edge_rag/models/lookup.py)
        slm._gqa.reset()
        drafted = slm.generate(prompt, lookup)
        extra = {"decode_tps_lookup": round((drafted.new_tokens - 1) / (drafted.decode_ms / 1000), 1),
                 "accepted": drafted.accepted_tokens, "same_text": drafted.text == result.text}
    size = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("model.onnx"))
    return {**extra, "model": model, "variant": variant, "file_mb": round(size / 2**20, 1),
            "read_mb": None if (read := onnx_read_mb(folder)) is None else round(read, 1),
            "load_s": round(load_s, 2), "prompt_tokens": result.prompt_tokens,
            "prefill_tps": round(result.prompt_tokens / (result.prefill_ms / 1000), 1),
            "decode_tps": round((result.new_tokens - 1) / (result.decode_ms / 1000), 1),
            "ttft_ms": round(ttft_ms, 1), "first_piece": first,
            "peak_rss_mb": round(peak_rss_mb(), 1), "runtime": _runtime_origin()}


def _runtime_origin() -> str:
    """Where the ``edge_rag`` that ran came from: this checkout, or an earlier commit's copy."""
    import edge_rag

    path = Path(edge_rag.__file__).resolve().parent.parent
    return "this checkout" if path == ROOT else path.name


def measure_llama_cpp(model: str, prompt_tokens: int, new_tokens: int, threads: int = 0) -> dict:
    """The same measurement with llama.cpp (llama-cpp-python, built here) on the packaged GGUF."""
    import numpy as np
    from edge_rag_export.slm import PACKAGED, assemble_gguf
    from llama_cpp import Llama

    work = models_home() / "work"
    work.mkdir(parents=True, exist_ok=True)
    gguf = assemble_gguf(PACKAGED[model], work)
    prompt = summary_prompt(PromptText(_folder(model)), prompt_tokens)  # the same prompt text
    threads = threads or os.cpu_count() or 1
    start = time.perf_counter()
    llm = Llama(model_path=str(gguf), n_ctx=2048, n_threads=threads, n_threads_batch=threads,
                n_batch=512, verbose=False)
    load_s = time.perf_counter() - start
    ids = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    llm.eval(llm.tokenize(b"Hi", add_bos=False))  # warm-up
    llm.reset()
    start = time.perf_counter()
    llm.eval(ids)
    prefill_s = time.perf_counter() - start
    start = time.perf_counter()
    import llama_cpp

    vocab = llm.n_vocab()
    for _ in range(new_tokens - 1):  # greedy, from the last position's logits (``scores`` is not
        # filled without logits_all, and only has n_batch rows)
        last = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(vocab,))
        llm.eval([int(np.argmax(last))])
    decode_s = time.perf_counter() - start

    return {**_timed_row(model, "llama.cpp", gguf, load_s, len(ids), prefill_s, decode_s, new_tokens,
                         peak_rss_mb()), "read_mb": round(gguf_read_mb(gguf), 1),
            "runtime": f"llama-cpp-python {llama_cpp.__version__} (built here), {threads} threads"}


def onnx_read_mb(folder: Path) -> float | None:
    """MiB of weights one decode step of an exported graph reads: every initializer but those a
    Gather picks rows from (the token embeddings: one row a token). None without ``onnx`` (a
    device with the runtime alone: its rows have no roofline)."""
    import numpy as np

    try:
        import onnx
    except ImportError:
        return None

    model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    gathered = {name for node in model.graph.node if node.op_type.startswith("Gather") for name in node.input}
    total = 0
    for tensor in model.graph.initializer:
        if tensor.name not in gathered:
            external = {entry.key: entry.value for entry in tensor.external_data}
            item = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
            total += int(external.get("length", 0)) or item * int(np.prod(tensor.dims))
    return total / 2**20


def gguf_read_mb(path: Path) -> float:
    """MiB one llama.cpp decode step reads from a GGUF: every tensor but the token embeddings,
    unless they are the output layer too (tied, as in Qwen2.5's small models: read whole)."""
    import gguf

    sizes = {t.name: int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors}
    if "output.weight" in sizes:
        sizes.pop("token_embd.weight", None)
    return sum(sizes.values()) / 2**20


def bus_gbs(threads: int, mib: int = 1024, passes: int = 5) -> float:
    """GB/s this machine streams from memory: ``threads`` threads each reducing its part of a
    ``mib`` MiB array (numpy releases the GIL), the best of ``passes``."""
    import threading

    import numpy as np

    words = np.ones(mib * 2**20 // 8, dtype=np.uint64)
    parts = np.array_split(words, threads)
    best = float("inf")
    for _ in range(passes + 1):  # the first pass faults the pages in
        workers = [threading.Thread(target=np.bitwise_or.reduce, args=(part,)) for part in parts]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        best = min(best, time.perf_counter() - start)
    return words.nbytes / best / 1e9


class PromptText:
    """The prompt-building parts of an exported SLM (tokenizer, ChatML) without its graph, so that
    a llama.cpp process's peak RSS is llama.cpp's own."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        from edge_rag.models.slm import SLM

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.chat = lambda user: SLM.chat(self, user)  # type: ignore[arg-type]

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


def _timed_row(model: str, variant: str, gguf: Path, load_s: float, prompt_tokens: int,
               prefill_s: float, decode_s: float, new_tokens: int, peak_mb: float) -> dict:
    """One result row of a runner timed outside edge-rag (llama.cpp, PyTorch) on a GGUF file."""
    return {"model": model, "variant": variant, "file_mb": round(gguf.stat().st_size / 2**20, 1),
            "load_s": round(load_s, 2), "prompt_tokens": prompt_tokens,
            "prefill_tps": round(prompt_tokens / prefill_s, 1),
            "decode_tps": round((new_tokens - 1) / decode_s, 1),
            "ttft_ms": round(prefill_s * 1000, 1), "peak_rss_mb": round(peak_mb, 1)}


def _folder(model: str) -> Path:
    models = models_home() / "models"
    return next(p for p in (models / f"{model}-{v}" for v in ("q4e8", "q4", "q8", "int8")) if p.is_dir())


def measure_pytorch(model: str, prompt_tokens: int, new_tokens: int) -> dict:
    """The same measurement with PyTorch (needs the [export] extra): the GGUF loaded in fp32."""
    import torch
    from edge_rag_export.slm import PACKAGED, assemble_gguf
    from transformers import AutoModelForCausalLM

    from edge_rag.models.slm import SLM

    work = models_home() / "work"
    work.mkdir(parents=True, exist_ok=True)
    gguf = assemble_gguf(PACKAGED[model], work)
    start = time.perf_counter()
    network = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                   dtype=torch.float32).eval()
    load_s = time.perf_counter() - start
    slm = SLM.from_path(_folder(model))  # for its tokenizer only
    ids = slm.tokenizer.encode(slm.chat(_context(slm, prompt_tokens) + "\n\nSummarise."),
                               add_special_tokens=False).ids
    del slm
    with torch.inference_mode():
        start = time.perf_counter()
        out = network(torch.tensor([ids]), use_cache=True)
        prefill_s = time.perf_counter() - start
        past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        start = time.perf_counter()
        for _ in range(new_tokens - 1):
            out = network(token, past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        decode_s = time.perf_counter() - start
    return _timed_row(model, "pytorch fp32", gguf, load_s, len(ids), prefill_s, decode_s, new_tokens,
                      peak_rss_mb())


def summary_prompt(slm, tokens: int) -> str:
    """The chat prompt of every decode-speed measurement: ``tokens`` tokens of LiHua-World
    conversations, then a request to summarise them."""
    return slm.chat(_context(slm, tokens) + "\n\nSummarise the conversation.")


def _context(slm, tokens: int) -> str:
    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".txt"))
        text = ""
        for name in names:
            text += archive.read(name).decode("utf-8") + "\n"
            if slm.count_tokens(text) >= tokens:
                break
    ids = slm.tokenizer.encode(text, add_special_tokens=False)
    return text[: ids.offsets[tokens - 1][1]]


def main(argv: list[str] | None = None) -> int:
    """Measure every requested model and variant, print a table, write JSON."""
    args = _parser().parse_args(argv)
    if args.child:
        model, variant = args.child
        rows = [measure_pytorch(model, n, args.new_tokens) if variant == "pytorch"
                else measure_llama_cpp(model, n, args.new_tokens, args.llama_threads)
                if variant == "llama.cpp"
                else measure(model, variant, n, args.new_tokens, args.threads)
                for n in sorted(args.prompt_tokens)]
        print(json.dumps(rows))
        return 0
    if "llama.cpp" in args.variants and importlib.util.find_spec("llama_cpp") is None:
        print(f"slm_speed: {LLAMA_HINT}", file=sys.stderr)
        return 2
    runs = [(m, v) for m in args.models for v in args.variants if _available(m, v, args)]
    args.bus_gbs = round(bus_gbs(args.bus_threads or os.cpu_count() or 1), 1)
    measured: list[dict] = []
    for repeat in range(args.repeats):
        for model, variant in runs:
            print(f"[{time.strftime('%H:%M:%S')}] {model}-{variant} (run {repeat + 1}/{args.repeats}) ...",
                  file=sys.stderr, flush=True)
            for row in _child(model, variant, args):
                measured.append({**row, "repeat": repeat})
        _report(measured, args)  # after every repeat: a long run stopped early still leaves results
    return 0


def _report(measured: list[dict], args: argparse.Namespace) -> None:
    """Medians over the repeats so far, the ratios to llama.cpp, the table and the JSON."""
    rows = _medians(measured, args.stat)
    _add_ratios(rows)
    _add_roofline(rows, args.bus_gbs)
    headers = ["model", "variant", "prompt_tokens", "file_mb", "load_s", "prefill_tps",
               "decode_tps", "decode_vs_llama", "prefill_vs_llama", "decode_vs_shortest",
               "decode_tps_lookup", "lookup_vs_llama", "read_mb", "read_gbs", "ceiling_tps",
               "ttft_ms", "peak_rss_mb", "repeats"]
    print(markdown_table(headers, [[r.get(h, "") for h in headers] for r in rows]))
    payload = {"prompt_tokens": args.prompt_tokens, "new_tokens": args.new_tokens,
               "repeats": max(r["repeat"] for r in measured) + 1 if measured else 0,
               "stat": args.stat, "threads": args.threads, "load_average": list(os.getloadavg()),
               "bus_gbs": args.bus_gbs, "bus_threads": args.bus_threads or os.cpu_count(),
               "rows": rows,
               "runs": measured}
    name = args.output or "slm_speed_p" + "_".join(str(n) for n in sorted(args.prompt_tokens))
    print(f"wrote {write_result(name, payload, None)}", flush=True)


def _available(model: str, variant: str, args: argparse.Namespace) -> bool:
    """Whether a variant can run here (says why not on stderr)."""
    if variant == "pytorch" and importlib.util.find_spec("torch") is None:
        print("skip pytorch: the [export] extra is not installed", file=sys.stderr)
        return False
    if variant == "llama.cpp":
        return True
    variant = variant.partition("@")[0]
    if variant != "pytorch" and not (models_home() / "models" / f"{model}-{variant}").is_dir():
        print(f"skip {model}-{variant}: not exported", file=sys.stderr)
        return False
    return True


def _medians(measured: list[dict], stat: str = "median") -> list[dict]:
    """One row per (model, variant, prompt length): the median of every speed over the repeats.

    ``stat="best"``: the fastest repeat instead (the least disturbed by other jobs on shared
    cores; peak RSS stays the median).
    """
    groups: dict[tuple, list[dict]] = {}
    for row in measured:
        groups.setdefault((row["model"], row["variant"], row["prompt_tokens"]), []).append(row)
    rows = []
    for group in groups.values():
        row = {k: v for k, v in group[0].items() if k != "repeat"}
        for key in ("load_s", "prefill_tps", "decode_tps", "decode_tps_lookup", "ttft_ms",
                    "peak_rss_mb"):
            if key in row:
                pick = {"prefill_tps": max, "decode_tps": max, "decode_tps_lookup": max,
                        "ttft_ms": min, "load_s": min}
                choose = pick.get(key, statistics.median) if stat == "best" else statistics.median
                row[key] = round(choose(r[key] for r in group), 2)
        row["repeats"] = len(group)
        rows.append(row)
    return rows


def _add_ratios(rows: list[dict]) -> None:
    """decode_vs_shortest (lookup_vs_shortest): decode speed (with prompt lookup) at this prompt
    length / at the shortest one measured; decode_vs_llama, prefill_vs_llama (lookup_vs_llama):
    this row's speed / llama.cpp's on the same model and prompt length."""
    bar = {(r["model"], r.get("prompt_tokens")): r for r in rows if r["variant"] == "llama.cpp"}
    for row in rows:
        llama = bar.get((row["model"], row.get("prompt_tokens")))
        if llama is not None and row is not llama:
            for speed, ratio in (("decode_tps", "decode_vs_llama"), ("prefill_tps", "prefill_vs_llama"),
                                 ("decode_tps_lookup", "lookup_vs_llama")):
                if row.get(speed) and llama.get(speed.replace("_lookup", "")):
                    row[ratio] = round(row[speed] / llama[speed.replace("_lookup", "")], 2)
    for speed, ratio in (("decode_tps", "decode_vs_shortest"), ("decode_tps_lookup", "lookup_vs_shortest")):
        first: dict[tuple[str, str], float] = {}
        for row in rows:
            key = (row["model"], row["variant"])
            if "prompt_tokens" in row and row.get(speed):
                first.setdefault(key, row[speed])
                row[ratio] = round(row[speed] / first[key], 2)


def _add_roofline(rows: list[dict], bus: float) -> None:
    """read_gbs: the bytes a decode step reads times decode_tps; ceiling_tps: the memory bus's
    rate over those bytes (``bus_gbs``), the speed no runtime that reads them once a token passes."""
    for row in rows:
        if row.get("read_mb") and row.get("decode_tps"):
            row["read_gbs"] = round(row["read_mb"] * 2**20 * row["decode_tps"] / 1e9, 1)
            row["ceiling_tps"] = round(bus * 1e9 / (row["read_mb"] * 2**20), 1)


def _child(model: str, variant: str, args: argparse.Namespace) -> list[dict]:
    folder_variant, _, commit = variant.partition("@")
    command = [sys.executable, "-m", "benchmarks.slm.slm_speed", "--child", model, folder_variant,
               "--prompt-tokens", *map(str, args.prompt_tokens), "--new-tokens", str(args.new_tokens),
               "--llama-threads", str(args.llama_threads), "--threads", str(args.threads)]
    # With a commit, run from that commit's runtime folder (first on sys.path); these benchmarks run it.
    cwd = runtime_at(commit) if commit else None
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=child_env(cwd),
                            cwd=cwd).stdout
    rows = json.loads(output.strip().splitlines()[-1])  # one row per prompt length
    return [{**row, "variant": variant} for row in rows]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--variants", nargs="+", default=["q4", "llama.cpp"],
                        help="int8 (optimum graph), q8/q4 (GQA graph), fp32 (model folders), "
                        "pytorch (the GGUF in transformers), llama.cpp (llama-cpp-python); "
                        "VARIANT@COMMIT: that folder with the runtime of an earlier commit")
    parser.add_argument("--prompt-tokens", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1, help="interleaved repeats (medians)")
    parser.add_argument("--threads", type=int, default=0,
                        help="onnxruntime intra-op threads (default 0: one per core)")
    parser.add_argument("--stat", choices=("median", "best"), default="median",
                        help="per row: the median over the repeats, or the fastest repeat "
                        "(cores shared with other jobs)")
    parser.add_argument("--output", default="", help="results file name, no .json "
                        "(default: slm_speed_pN_M)")
    parser.add_argument("--bus-threads", type=int, default=0,
                        help="threads of the memory-bus probe (default 0: one per core)")
    parser.add_argument("--llama-threads", type=int, default=0,
                        help="llama.cpp threads for prefill and decode (default 0: one per core)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
