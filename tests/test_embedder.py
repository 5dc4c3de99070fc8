"""The real ONNX embedder: int8 agrees with fp32, vectors are unit length and batch-stable."""

import os

import numpy as np
import pytest

from edge_rag.models import Embedder, ModelFolder

SENTENCES = [
    "Li Hua asked Adam when the maintenance work in the building would start.",
    "The bakery delivers fresh bread every Saturday morning.",
    "Wolfgang got promoted and invited everyone to dinner.",
    "Teutberga was a queen of Lotharingia.",
    "How many tokens fit in the embedder's window?",
    "Jennifer and Li Hua went to the gym together.",
]


def test_int8_matches_fp32(settings, embedder):
    fp32_path = settings.home / "models" / settings.embedder.replace("-int8", "-fp32")
    if not (fp32_path / "manifest.json").is_file():
        pytest.fail(f"no fp32 embedder at {fp32_path}: run 'edge-rag export embedder'")
    full = Embedder(ModelFolder.open(fp32_path)).embed(SENTENCES)
    cosines = np.sum(full * embedder.embed(SENTENCES), axis=1)
    assert cosines.min() >= 0.98, cosines


def test_vectors_are_unit_length(embedder):
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), embedder.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batching_barely_changes_vectors(embedder):
    # Dynamic int8 quantizes activations per batch, so batch mates shift vectors a little.
    together = embedder.embed(SENTENCES)
    alone = np.stack([embedder.embed_one(s) for s in SENTENCES])
    assert np.sum(together * alone, axis=1).min() >= 0.98


def test_a_text_embedded_alone_does_not_depend_on_its_batch_mates(embedder):
    names = ["2 PM", "2pm", "Hailey's Bakery", "the gym on Fifth Avenue"]
    alone = embedder.embed_alone(names)
    assert np.array_equal(alone[1:2], embedder.embed_alone(names[1:2]))
    assert np.array_equal(alone[0], embedder.embed([names[0]])[0])


def test_bulk_work_on_the_workers_gives_the_threaded_sessions_vectors(embedder):
    # Names alone and documents ahead run on single-thread workers side by side; a batch's
    # vectors must not depend on where it ran (a build and a query must agree).
    assert embedder.workers == (os.cpu_count() or 1)
    texts = [f"{n} — the {word} of line {n}" * (1 + n % 7) for n, word in enumerate(
        ["lighthouse", "keeper", "cat", "dawn", "harbour", "bakery", "gym", "train"] * 3)]
    assert np.array_equal(embedder.embed_later(texts).result(), embedder.embed(texts))
    assert np.array_equal(embedder.embed_spread(texts), embedder.embed(texts))
    alone = embedder.embed_alone(texts[:6])
    assert all(np.array_equal(alone[n], embedder.embed([t])[0]) for n, t in enumerate(texts[:6]))


def test_a_forgotten_text_is_embedded_again_alike(embedder, monkeypatch):
    first = embedder.embed_one("Who wished Li Hua a happy new year?")
    embedder.forget()
    calls = []
    monkeypatch.setattr(embedder, "_embed_batch",
                        lambda texts, on_worker=False: calls.append(texts) or np.stack([first]))
    assert np.allclose(embedder.embed_one("Who wished Li Hua a happy new year?"), first)
    assert calls == [["Who wished Li Hua a happy new year?"]]


def test_long_text_is_truncated_not_rejected(embedder):
    vector = embedder.embed_one("word " * 5000)
    assert np.isfinite(vector).all()


def test_manifest_describes_the_model(model_folder):
    manifest = model_folder.manifest
    assert manifest["dimension"] == 384
    assert manifest["pooling"] == "mean"
    assert manifest["quantization"].startswith("int8")
    assert len(manifest["sha256"]) == 64
