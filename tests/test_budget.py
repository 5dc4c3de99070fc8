"""The memory budget: the estimate's parts, a refusal before the SLM loads, and degradation."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge_rag import EdgeRAG, MemoryBudgetExceeded, Settings
from edge_rag.budget import ARENA_MB_PER_TOKEN, MIB, estimate_memory, slm_mb, walk_mb
from edge_rag.store.vectors import in_memory_bytes

from .conftest import SMALL_SLM, open_both


def test_the_slm_part_grows_by_kv_cache_and_arena_per_window_token(settings: Settings, slm) -> None:
    folder = settings.home / "models" / SMALL_SLM
    per_token = 2 * 30 * 3 * 64 * 4 / MIB + ARENA_MB_PER_TOKEN  # SmolLM2: 30 layers, 3 KV heads of 64
    assert slm_mb(folder, 1024) - slm_mb(folder, 512) == pytest.approx(512 * per_token)
    estimate = estimate_memory(settings.replace(slm=SMALL_SLM))
    assert set(estimate.parts) == {"runtime", "embedder", "index", "slm"} and estimate.fits  # no budget


def test_a_session_that_cannot_hold_the_slm_is_refused_before_loading_it(lihua_index: Path, slm) -> None:
    with open_both(lihua_index, create=False, slm=SMALL_SLM, memory_budget_mb=300) as (rag, engine):
        assert not rag.memory_estimate().fits and rag.memory_estimate(with_slm=False).fits
        with pytest.raises(MemoryBudgetExceeded, match=r"slm .*MiB budget.*smaller SLM"):
            rag.ask("Who is Adam?")
        assert "slm" not in engine.loaded()


def test_degrade_halves_the_window_until_the_slm_fits(lihua_index: Path, slm) -> None:
    small = Settings(slm=SMALL_SLM, slm_context_tokens=512)
    budget = int(estimate_memory(small, lihua_index).total_mb) + 1
    with open_both(lihua_index, create=False, slm=SMALL_SLM, slm_context_tokens=2048,
                      memory_budget_mb=budget, memory_policy="degrade") as (rag, engine):
        assert engine.slm is not None
        assert rag.settings.slm_context_tokens == 512 and rag.settings.context_token_budget <= 256


def test_an_index_too_big_for_the_budget_is_refused_at_open(lihua_index: Path) -> None:
    with pytest.raises(MemoryBudgetExceeded, match="runtime"):
        EdgeRAG.open(lihua_index, create=False, memory_budget_mb=100)


def test_cuda_profile_falls_back_to_the_cpu_where_onnxruntime_has_no_cuda(model_folder) -> None:
    import onnxruntime as ort

    from edge_rag.models import Embedder
    from edge_rag.models.session import session_providers

    settings = Settings.load("jetson-orin-nano")
    expected = ["CUDAExecutionProvider", "CPUExecutionProvider"] \
        if "CUDAExecutionProvider" in ort.get_available_providers() else ["CPUExecutionProvider"]
    assert session_providers(settings) == expected
    embedder = Embedder.from_settings(settings, model_folder)
    assert embedder.session.get_providers()[0] == expected[0] and embedder.embed_one("hello").shape == (384,)


def test_vectors_searched_in_memory_count_in_the_index_part(lihua_index: Path, settings: Settings) -> None:
    with EdgeRAG.open(lihua_index, create=False) as rag:
        chunks = rag.stats().chunks
    in_memory = in_memory_bytes(lihua_index)  # no HNSW file below vector_file_min: all in memory
    assert not list(lihua_index.glob("*.usearch")) and in_memory >= chunks * 384
    mapped = min(settings.sqlite_mmap_mb, (lihua_index / "index.sqlite").stat().st_size / MIB)
    expected = settings.sqlite_cache_mb + mapped + in_memory / MIB + walk_mb(lihua_index)
    assert walk_mb(lihua_index) > 0  # the walk's files, written by the build (issue 46)
    index_mb = estimate_memory(settings, lihua_index, with_slm=False).parts["index"]
    assert index_mb == pytest.approx(expected, abs=0.1)


def test_an_int8_kv_cache_counts_one_byte_a_value(tmp_path: Path) -> None:
    import json

    shape = {"graph": "gqa", "num_layers": 30, "num_kv_heads": 3, "head_dim": 64}
    folders = []
    for name, extra in (("fp32", {}), ("int8", {"kv_cache": "int8-per-channel"})):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "manifest.json").write_text(json.dumps({**shape, **extra}))
        (folder / "model.onnx").write_bytes(b"")
        folders.append(folder)
    fp32, int8 = (slm_mb(f, 1024) for f in folders)
    assert fp32 - int8 == pytest.approx(1024 * 2 * 30 * 3 * 64 * 3 / MIB, abs=1e-3)  # manifests differ


def test_a_profile_never_runs_more_threads_than_the_process_has_cores() -> None:
    from edge_rag.config import usable_cores

    cores = usable_cores()
    assert Settings.load("jetson-orin-nano").threads == 6  # written for the board's 6 cores
    assert Settings(threads=cores + 4).intra_op_threads == cores
    assert Settings(threads=1).intra_op_threads == 1
    assert Settings(threads=0).intra_op_threads == cores
