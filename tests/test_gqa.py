"""The GQA decoder graph: written from a GGUF without torch, run with in-place KV buffers."""

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the GQA exporter's tests need the [export] extra (onnx)")

from edge_rag_export import already_exported
from edge_rag_export.gqa import EXPORTER_VERSION
from edge_rag_export.gqa_graph import ACCURACY_LEVEL, GraphWriter, fit_block
from edge_rag_export.kv_cache import calibration_prompts, int8_cache
from edge_rag_export.quantize import quantize
from edge_rag_export.slm import CHECK_QUESTIONS, CHECKS, _same_answer
from edge_rag_export.weights import read_hf_folder
from onnx import numpy_helper

from edge_rag.cli import main
from edge_rag.errors import EdgeRagError
from edge_rag.models import ModelFolder
from edge_rag.models.slm import SLM, GenerationConfig

GREEDY = GenerationConfig(max_new_tokens=24)
SYSTEM = "You answer questions about Li Hua's life in one short sentence."


def test_torch_free_gguf_export_generates_the_optimum_int8_text(gqa_slm, slm):
    # Same GGUF weights, both symmetric 8-bit blocks of 32 with int8 activations; 99.8 % of the
    # LM head's codes are equal, but fused attention sums in another order, so a near-tie may
    # break the other way after a few tokens (the optimum int8 graph itself matches its own fp32
    # text on 7 of 10). Fair check: every answer the same, most texts identical to the letter.
    pairs = [(gqa_slm.generate(gqa_slm.chat(q), GREEDY).text, slm.generate(slm.chat(q), GREEDY).text)
             for q in CHECK_QUESTIONS]
    assert all(_same_answer(a, b, key) for (a, b), (*_, key) in zip(pairs, CHECKS))
    assert sum(a == b for a, b in pairs) >= 6
    assert pairs[0][0] == pairs[0][1] == "The bakery on Elm Street opens at 7 am."


def test_gqa_manifest_describes_the_graph(gqa_folder):
    manifest = json.loads((gqa_folder / "manifest.json").read_text())
    assert manifest["graph"] == "gqa" and manifest["quantization"].startswith("int8-sym-block32")
    assert manifest["num_layers"] == 30 and manifest["tied_embeddings"] is True
    assert (gqa_folder / "model.onnx_data").stat().st_size < 160 * 2**20
    assert manifest["exporter_version"] == EXPORTER_VERSION


def test_a_4bit_lm_head_computes_with_int8_activations_like_every_layer():
    # Exporter version 5: the fp32-compute head (level 1) took 40 % of a Qwen2.5-1.5B decode
    # step on an AMD EPYC (results/slm_speed_head_level.json).
    from types import SimpleNamespace

    writer = GraphWriter(SimpleNamespace(config=None), bits=4, progress=lambda _: None)
    weight = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    for name in ("lm_head", "layers.0.mlp.down_proj"):
        writer.matmul("x", weight, name)
    levels = {n.name: onnx.helper.get_attribute_value(a) for n in writer.nodes for a in n.attribute
              if a.name == "accuracy_level"}
    assert ACCURACY_LEVEL == 4
    assert levels == {"lm_head": ACCURACY_LEVEL, "layers.0.mlp.down_proj": ACCURACY_LEVEL}


def test_a_folder_from_an_older_exporter_is_exported_again(tmp_path):
    # Folders written before the manifests carried a version count as version 1.
    folder = tmp_path / "m-q4"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"kind": "slm", "graph": "gqa"}))
    assert not already_exported(folder, "m", force=False, version=2)
    assert already_exported(folder, "m", force=False)  # other exporters keep their folders
    (folder / "manifest.json").write_text(json.dumps({"exporter_version": 2}))
    assert already_exported(folder, "m", force=False, version=2)
    assert not already_exported(folder, "m", force=True, version=2)


def test_common_prompt_prefix_is_prefilled_once(gqa_folder, gqa_slm):
    first = gqa_slm.chat("Who is Li Hua's landlord?", system=SYSTEM)
    second = gqa_slm.chat("What is the cat's name?", system=SYSTEM)
    gqa_slm.generate(first, GREEDY)
    reused = gqa_slm.generate(second, GREEDY)
    assert gqa_slm._gqa.reused_tokens >= gqa_slm.count_tokens(SYSTEM) - 16  # chunk boundary
    fresh = SLM(ModelFolder.open(gqa_folder), context_tokens=512, prefill_chunk=16)
    assert reused.text == fresh.generate(second, GREEDY).text


def test_an_identical_prompt_reuses_whole_chunks_and_samples_the_same(gqa_slm):
    prompt = gqa_slm.chat("Write one line about the sea, then one about the hills.")
    config = GenerationConfig(max_new_tokens=16, temperature=1.0, seed=5)
    assert gqa_slm.generate(prompt, config).text == gqa_slm.generate(prompt, config).text
    assert gqa_slm._gqa.reused_tokens == (gqa_slm.count_tokens(prompt) - 1) // 16 * 16 > 0


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_block_quantizer_round_trips_within_a_step(bits, symmetric):
    # Symmetric codes map the block's extreme to -2^(bits-1): the opposite side may clip by
    # up to one step; asymmetric codes round to the nearest step.
    weight = np.random.default_rng(0).standard_normal((48, 96)).astype(np.float32)
    codes = quantize(weight, bits, 32, symmetric)
    step = np.repeat(np.abs(codes.scales), 32, axis=1)
    assert codes.packed.shape == (48, 3, 32 * bits // 8)
    assert np.all(np.abs(codes.dequantize() - weight) <= step * (1.0 if symmetric else 0.5) + 1e-6)


def test_block_size_falls_back_to_one_that_divides_the_input():
    assert [fit_block(k, 128) for k in (896, 576, 1536, 48)] == [128, 64, 128, 16]


def test_uncovered_architecture_is_refused_with_the_way_out(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gemma3"}))
    with pytest.raises(EdgeRagError, match="--graph optimum"):
        read_hf_folder(tmp_path)


def test_optimum_path_refuses_four_bits(capsys):
    assert main(["export", "slm", "smollm2-135m", "--graph", "optimum", "--bits", "4"]) != 0
    assert "8-bit" in capsys.readouterr().err


@pytest.fixture(scope="module")
def kv8_folder(gqa_folder, tmp_path_factory):
    """The 8-bit GQA folder with its KV cache patched to int8 (``export/kv_cache.py``); the
    weights file is shared by a hard link (onnxruntime refuses a symbolic one)."""
    folder = tmp_path_factory.mktemp("kv8") / "smollm2-135m-q8kv8"
    folder.mkdir()
    for path in gqa_folder.iterdir():
        target = folder / path.name
        target.hardlink_to(path) if path.name == "model.onnx_data" else target.write_bytes(path.read_bytes())
    int8_cache(folder, calibration_prompts(CHECK_QUESTIONS), log=lambda _: None)
    return folder


def test_an_int8_kv_cache_holds_the_fp32_cache_as_codes_and_answers_alike(gqa_folder, kv8_folder):
    manifest = json.loads((kv8_folder / "manifest.json").read_text())
    assert manifest["kv_cache"] == "int8-per-channel"
    exact, coded = (SLM(ModelFolder.open(f), context_tokens=512, prefill_chunk=16)
                    for f in (gqa_folder, kv8_folder))
    prompt = "Yuriko: the festival starts at noon, bring the tent.\nWolfgang: ok!\nWhen does it start?"
    ids = exact.tokenizer.encode(exact.chat(prompt), add_special_tokens=False).ids
    first = [s._gqa.prefill([ids], 16)[0] for s in (exact, coded)]
    assert first[0].argmax() == first[1].argmax()
    scales = {i.name: numpy_helper.to_array(i) for i in onnx.load(
        str(kv8_folder / "model.onnx"), load_external_data=False).graph.initializer if "_scale" in i.name}
    for layer in (0, 29):
        for slot, kind in ((0, "k"), (1, "v")):
            fp32 = exact._gqa.caches[0].buffers[2 * layer + slot].numpy()[0, :, :len(ids)]
            codes = coded._gqa.caches[0].buffers[2 * layer + slot].numpy()[0, :, :len(ids)]
            assert codes.dtype == np.int8
            step = scales[f"layers.{layer}.{kind}_scale"]
            error = np.abs(codes * step - fp32) / step  # in steps of the code
            if layer == 0:  # the same input: rounding, and rarely a clipped value
                assert np.median(error) <= 0.5 and np.quantile(error, 0.999) <= 1.0
            else:  # the last layer's input carries every earlier layer's rounding
                assert codes.any() and np.median(error) <= 4
    answers = [(exact.generate(exact.chat(q), GREEDY).text, coded.generate(coded.chat(q), GREEDY).text)
               for q in CHECK_QUESTIONS]
    assert sum(_same_answer(a, b, key) for (a, b), (*_, key) in zip(answers, CHECKS)) >= len(CHECKS) - 1
