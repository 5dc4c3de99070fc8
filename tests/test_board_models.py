"""Which SLM each board profile takes (issue 44): the 1.5B where the budget allows, the budget's
estimate of it, the export command a missing folder names, and `edge-rag bundle` carrying it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edge_rag import Settings
from edge_rag.budget import estimate_memory, fit_to_budget, slm_mb
from edge_rag.errors import ModelNotFound
from edge_rag.models.bundle import make_bundle
from edge_rag.models.slm import SLM, slm_hint

QWEN_1_5B = "qwen2.5-coder-1.5b-q4"
# The exported folder's manifest shape and file sizes (bytes), as `edge-rag export slm
# qwen2.5-coder-1.5b` writes them.
SHAPE = {"kind": "slm", "graph": "gqa", "num_layers": 28, "num_kv_heads": 2, "head_dim": 128,
         "files": ["model.onnx", "model.onnx_data", "tokenizer.json"]}
SIZES = {"model.onnx": 120_000, "model.onnx_data": 1_100_000_000, "tokenizer.json": 7_000_000}


def fake_1_5b(home: Path, sizes: dict[str, int] = SIZES) -> Path:
    """A models home whose 1.5B folder has the real manifest shape and file sizes (sparse files)."""
    folder = home / "models" / QWEN_1_5B
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({**SHAPE, "name": QWEN_1_5B}))
    for name, size in sizes.items():
        with open(folder / name, "wb") as handle:
            handle.truncate(size)
    return folder


def test_the_boards_that_can_hold_it_take_the_1_5b_and_the_small_ones_keep_theirs() -> None:
    slms = {p: Settings.load(p).slm for p in ("rpi5", "jetson-orin-nano", "rpi4", "rpi-zero-2w")}
    assert slms == {"rpi5": QWEN_1_5B, "jetson-orin-nano": QWEN_1_5B,
                    "rpi4": "qwen2.5-coder-0.5b-q4", "rpi-zero-2w": "smollm2-135m-q4e8"}


def test_the_pi_5_profile_assumes_the_4_gb_board_and_holds_the_1_5b_at_its_full_window(tmp_path) -> None:
    fake_1_5b(tmp_path)
    settings = Settings.load("rpi5", models_home=str(tmp_path))
    assert settings.memory_budget_mb <= 3 * 1024 and settings.slm_context_tokens == 2048
    assert estimate_memory(settings).fits
    assert fit_to_budget(settings).slm_context_tokens == 2048  # nothing degraded


def test_the_estimate_of_the_1_5b_counts_its_weights_and_kv_cache(tmp_path) -> None:
    folder = fake_1_5b(tmp_path)
    kv_mib_per_token = 2 * 28 * 2 * 128 * 4 / 2**20
    assert slm_mb(folder, 2048) - slm_mb(folder, 1024) > 1024 * kv_mib_per_token
    assert slm_mb(folder, 2048) > sum(SIZES.values()) / 2**20  # above the files it maps


def link_other_models(home: Path, settings: Settings) -> None:
    """The exported embedder and planner head of the test setup, linked into ``home``."""
    (home / "models").mkdir(parents=True, exist_ok=True)
    for name in (settings.embedder, Settings.load("rpi5").planner_model):
        (home / "models" / name).symlink_to(settings.home / "models" / name)


def test_a_missing_1_5b_names_the_command_that_exports_it(tmp_path, settings: Settings) -> None:
    assert slm_hint(QWEN_1_5B).startswith("run 'edge-rag export slm qwen2.5-coder-1.5b --bits 4 --install'")
    assert "--embed-bits 8" in slm_hint("smollm2-135m-q4e8") and "--graph optimum" in slm_hint("x-int8")
    with pytest.raises(ModelNotFound, match="export slm qwen2.5-coder-1.5b --bits 4"):
        SLM.from_path(tmp_path / QWEN_1_5B)
    link_other_models(tmp_path, settings)
    with pytest.raises(ModelNotFound,
                       match="export slm qwen2.5-coder-1.5b --bits 4 --install' .* on the workstation"):
        make_bundle("rpi5", tmp_path / "bundle", home=str(tmp_path), progress=False)


def test_the_pi_5_bundle_carries_the_1_5b(tmp_path, settings: Settings) -> None:
    home = tmp_path / "home"
    fake_1_5b(home, {**SIZES, "model.onnx_data": 2**20})  # the bundle copies it: 1 MiB will do
    link_other_models(home, settings)
    bundle = make_bundle("rpi5", tmp_path / "bundle", home=str(home), progress=False)
    assert bundle.models["slm"] == QWEN_1_5B
    assert bundle.files[f"models/{QWEN_1_5B}/model.onnx_data"]["bytes"] == 2**20
