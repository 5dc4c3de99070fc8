"""SLM speed and memory, fp32 vs int8 ONNX (and PyTorch): load, prefill, decode, TTFT, peak RSS.

    python -m benchmarks.slm_speed [--models smollm2-135m qwen2.5-coder-0.5b] [--new-tokens 64]

Each (model, variant) runs in its own process so that peak RSS is its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import zipfile

from edge_rag.config import models_home

from .common import LIHUA_ZIP, markdown_table, peak_rss_mb, write_result

LLAMA_CPP = {  # ../shared/MODELS.md, same machine kind, ~300-token prompt, 2 threads
    "smollm2-135m": {"file_mb": 98, "prefill_tps": 173, "decode_tps": 64.9, "peak_rss_mb": 224},
    "qwen2.5-coder-0.5b": {"file_mb": 491, "prefill_tps": 90, "decode_tps": 22.5, "peak_rss_mb": 716},
}


def measure(model: str, variant: str, prompt_tokens: int, new_tokens: int) -> dict:
    """Run inside a child process: load the model, prefill a long prompt, decode greedily."""
    from edge_rag.models.slm import SLM, GenerationConfig

    folder = models_home() / "models" / f"{model}-{variant}"
    start = time.perf_counter()
    slm = SLM.from_path(folder, threads=0)
    load_s = time.perf_counter() - start
    prompt = slm.chat(_context(slm, prompt_tokens) + "\n\nSummarise the conversation.")
    slm.generate(slm.chat("Hi"), GenerationConfig(max_new_tokens=2))  # warm-up
    stream_start = time.perf_counter()
    first = next(iter(slm.stream(prompt, GenerationConfig(max_new_tokens=1, ignore_eos=True))))
    ttft_ms = (time.perf_counter() - stream_start) * 1000
    result = slm.generate(prompt, GenerationConfig(max_new_tokens=new_tokens, ignore_eos=True))
    size = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("model.onnx"))
    return {"model": model, "variant": variant, "file_mb": round(size / 2**20, 1),
            "load_s": round(load_s, 2), "prompt_tokens": result.prompt_tokens,
            "prefill_tps": round(result.prompt_tokens / (result.prefill_ms / 1000), 1),
            "decode_tps": round((result.new_tokens - 1) / (result.decode_ms / 1000), 1),
            "ttft_ms": round(ttft_ms, 1), "first_piece": first,
            "peak_rss_mb": round(peak_rss_mb(), 1)}


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
    slm = SLM.from_path(models_home() / "models" / f"{model}-int8")  # for its tokenizer only
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
    return {"model": model, "variant": "pytorch fp32", "file_mb": round(gguf.stat().st_size / 2**20, 1),
            "load_s": round(load_s, 2), "prompt_tokens": len(ids),
            "prefill_tps": round(len(ids) / prefill_s, 1),
            "decode_tps": round((new_tokens - 1) / decode_s, 1),
            "ttft_ms": round(prefill_s * 1000, 1), "peak_rss_mb": round(peak_rss_mb(), 1)}


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
        if variant == "pytorch":
            print(json.dumps(measure_pytorch(model, args.prompt_tokens, args.new_tokens)))
        else:
            print(json.dumps(measure(model, variant, args.prompt_tokens, args.new_tokens)))
        return 0
    rows = []
    for model in args.models:
        for variant in args.variants:
            if variant == "pytorch" and importlib.util.find_spec("torch") is None:
                print("skip pytorch: the [export] extra is not installed", file=sys.stderr)
                continue
            if variant != "pytorch" and not (models_home() / "models" / f"{model}-{variant}").is_dir():
                print(f"skip {model}-{variant}: not exported", file=sys.stderr)
                continue
            print(f"measuring {model}-{variant} ...", file=sys.stderr, flush=True)
            rows.append(_child(model, variant, args))
    for model in args.models:
        rows.append({"model": model, "variant": "llama.cpp (MODELS.md)", **LLAMA_CPP[model]})
    headers = ["model", "variant", "file_mb", "load_s", "prefill_tps", "decode_tps", "ttft_ms",
               "peak_rss_mb"]
    print(markdown_table(headers, [[r.get(h, "") for h in headers] for r in rows]))
    payload = {"prompt_tokens": args.prompt_tokens, "new_tokens": args.new_tokens, "rows": rows}
    print(f"wrote {write_result(f'slm_speed_p{args.prompt_tokens}', payload)}")
    return 0


def _child(model: str, variant: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-m", "benchmarks.slm_speed", "--child", model, variant,
               "--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens)]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(LLAMA_CPP))
    parser.add_argument("--variants", nargs="+", default=["fp32", "int8", "pytorch"],
                        help="fp32, int8 (ONNX folders) and/or pytorch (the GGUF in transformers)")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
