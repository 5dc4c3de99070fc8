"""Sentence embedder: ONNX encoder + tokenizers, mean pooling, L2 normalisation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from ..config import Settings
from .folder import ModelFolder
from .session import new_session, session_options, session_providers, settings_session_options

RECENT = 8


class Embedder:
    """Turns texts into unit-length float32 vectors with an exported encoder."""

    def __init__(self, folder: ModelFolder, threads: int = 0, batch_size: int = 32,
                 options: ort.SessionOptions | None = None, providers: list[str] | None = None) -> None:
        self.folder = folder
        self.dim = int(folder.manifest["dimension"])
        self.max_tokens = int(folder.manifest.get("max_tokens", 256))
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(folder.path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        options = options or session_options(threads)
        # No CPU arena: it kept the largest batch's activations (a 256-token chunk batch) for
        # good, 60 MiB of a 2Wiki build's peak RSS (3,000 passages: 251 vs 311 MiB), for no
        # speed (626 vs 632 s in one run); the GQA SLM graph runs without one for the same reason.
        options.enable_cpu_mem_arena = False
        self.session = new_session(str(folder.onnx_path), options, providers)
        self._input_names = {i.name for i in self.session.get_inputs()}
        self._recent: dict[str, np.ndarray] = {}

    @classmethod
    def from_settings(cls, settings: Settings, folder: ModelFolder | None = None) -> Embedder:
        """Load the embedder that the settings name (or an already opened folder)."""
        folder = folder or ModelFolder.open(settings.home / "models" / settings.embedder)
        return cls(folder, settings.intra_op_threads, settings.embed_batch_size,
                   settings_session_options(settings), session_providers(settings))

    @classmethod
    def from_path(cls, path: str | Path, threads: int = 0) -> Embedder:
        """Load an embedder from an explicit model folder."""
        return cls(ModelFolder.open(Path(path)), threads)

    def count_tokens(self, text: str) -> int:
        """Number of model tokens in a text, special tokens excluded."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in length-sorted batches; returns float32 ``[n, dim]``, unit rows."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._embed_batch([texts[i] for i in batch])
        return out

    def embed_alone(self, texts: Sequence[str]) -> np.ndarray:
        """Embed each text in a run of its own: its vector does not depend on the texts it was
        embedded with. The int8 graph quantises activations with one scale per batch, so a
        batch-mate moves a vector (mean cosine 0.989, minimum 0.95 between batches of 8 and of
        1 on 2Wiki's entity names); names are short, so running them alone costs ~1.7× theirs."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for n, text in enumerate(texts):
            out[n] = self._embed_batch([text])[0]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text; returns float32 ``[dim]``.

        The last few texts are remembered: planning and then retrieving embed the same question.
        """
        if text not in self._recent:
            if len(self._recent) >= RECENT:
                self._recent.pop(next(iter(self._recent)))
            self._recent[text] = self.embed([text])[0]
        return self._recent[text].copy()

    def forget(self) -> None:
        """Forget the remembered texts (``embed_one``): the next call embeds afresh."""
        self._recent.clear()

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        length = min(self.max_tokens, max(len(e.ids) for e in encodings))
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            kept = _truncate(enc.ids, length)
            ids[row, : len(kept)] = kept
            mask[row, : len(kept)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        return _normalise(_mean_pool(hidden, mask))


def _truncate(ids: list[int], length: int) -> list[int]:
    # Keep the final [SEP] token when truncating, as the reference tokenizer does.
    return ids if len(ids) <= length else ids[: length - 1] + ids[-1:]


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
