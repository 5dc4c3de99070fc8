"""Sentence embedder: ONNX encoder + tokenizers, mean pooling, L2 normalisation.

Design: docs/design/models.md
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from ..config import Settings, usable_cores
from .folder import ModelFolder
from .pages import share_heap
from .session import new_session, session_options, session_providers, settings_session_options

RECENT = 8  # questions whose embedding is remembered (models.md)

# Threads (the bulk workers, onnxruntime's and the tokenizer's pools) share the main heap
# arena, where the workers' freed activations stay within malloc_trim's reach
# (``pages.share_heap``). Set when edge_rag is imported, before those threads allocate: a thread
# that allocated before keeps its own arena (MALLOC_ARENA_MAX=1 in the environment covers that).
share_heap()


class Embedder:
    """Turns texts into unit-length float32 vectors with an exported encoder.

    Two ways to use the cores: ``embed`` (a question, retrieval's keywords) runs on a session
    whose operators use every thread; bulk work (``embed_alone``, ``embed_later``: an index
    build) runs batches side by side, one per core, on a session of one thread per run: small
    batches barely parallelise inside operators (docs/design/models.md). A batch's vectors are
    the same on either session (its own activation scale; integer products), so where a batch
    runs changes no vector. Each session is created when first used, so a build holds only the
    workers' one and a query process only the threaded one.
    """

    def __init__(self, folder: ModelFolder, threads: int = 0, batch_size: int = 32,
                 options: ort.SessionOptions | None = None, providers: list[str] | None = None) -> None:
        self.folder = folder
        self.dim = int(folder.manifest["dimension"])
        self.max_tokens = int(folder.manifest.get("max_tokens", 256))
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(folder.path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self._options = options or session_options(threads)
        # No CPU arena: it kept the largest batch's activations (a 256-token chunk batch) for
        # good, a large share of a build's peak RSS, for no speed (models.md); the GQA SLM graph
        # runs without one for the same reason.
        self._options.enable_cpu_mem_arena = False
        self._providers = providers
        cpu_only = not providers or providers == ["CPUExecutionProvider"]
        self.workers = (threads or usable_cores()) if cpu_only else 1
        self._session: ort.InferenceSession | None = None
        self._worker_session: ort.InferenceSession | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._input_names: set[str] = set()
        self._recent: dict[str, np.ndarray] = {}
        self.run_options = ort.RunOptions()  # interrupt() sets its terminate flag

    @property
    def session(self) -> ort.InferenceSession:
        """The session for a single batch, its operators on every thread."""
        with self._lock:
            if self._session is None:
                self._session = self._new_session()
            return self._session

    def _workers_session(self) -> ort.InferenceSession:
        # One session shared by the workers (runs are thread-safe), one thread per run.
        with self._lock:
            if self._worker_session is None:
                threads = self._options.intra_op_num_threads
                self._options.intra_op_num_threads = 1
                try:
                    self._worker_session = self._new_session()
                finally:
                    self._options.intra_op_num_threads = threads
            return self._worker_session

    def _new_session(self) -> ort.InferenceSession:
        session = new_session(str(self.folder.onnx_path), self._options, self._providers)
        self._input_names = {i.name for i in session.get_inputs()}
        return session

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
        """Embed texts in length-sorted batches on the threaded session; returns float32
        ``[n, dim]``, unit rows."""
        return self._embed_sequential(texts)

    def embed_alone(self, texts: Sequence[str]) -> np.ndarray:
        """Embed each text in a run of its own: its vector does not depend on the texts it was
        embedded with. The int8 graph quantises activations with one scale per batch, so a
        batch-mate moves a vector (docs/design/models.md). The runs go side by side on the
        workers."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for n, vectors in enumerate(self._side_by_side([[t] for t in texts])):
            out[n] = vectors[0]
        return out

    def embed_spread(self, texts: Sequence[str]) -> np.ndarray:
        """``embed``'s batches (so its vectors), run side by side on the workers."""
        batches = self._batches(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch, vectors in zip(batches, self._side_by_side([[texts[i] for i in b] for b in batches])):
            out[batch] = vectors
        return out

    def embed_later(self, texts: Sequence[str]) -> Future[np.ndarray]:
        """``embed`` run on a worker: the future's vectors are those ``embed`` gives. A bulk
        insert embeds the next documents this way while it writes one."""
        if self.workers == 1:
            done: Future[np.ndarray] = Future()
            done.set_result(self.embed(texts))
            return done
        return self._worker_pool().submit(self._embed_sequential, texts, True)

    def close(self) -> None:
        """Let the workers go once their queued runs are done (the sessions stay usable)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def _embed_sequential(self, texts: Sequence[str], on_worker: bool = False) -> np.ndarray:
        # ``embed``'s batches, run one after another on one session.
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in self._batches(texts):
            out[batch] = self._embed_batch([texts[i] for i in batch], on_worker)
        return out

    def _batches(self, texts: Sequence[str]) -> list[list[int]]:
        # Length-sorted batches of indices: which texts share a run (and so its activation scale).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        return [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]

    def _side_by_side(self, batches: list[list[str]]) -> Iterator[np.ndarray]:
        if self.workers == 1:
            return (self._embed_batch(b) for b in batches)
        return self._worker_pool().map(lambda b: self._embed_batch(b, True), batches)

    def _worker_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._workers_session()
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="embedder")
        return self._pool

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text; returns float32 ``[dim]``.

        The last few texts are remembered: planning and then retrieving embed the same question.
        """
        if text not in self._recent:
            if len(self._recent) >= RECENT:
                self._recent.pop(next(iter(self._recent)))
            self._recent[text] = self.embed([text])[0]
        return self._recent[text].copy()

    def interrupt(self) -> None:
        """Make the running embedding (and every later one) fail at once: a server shutting down
        does not wait for a batch."""
        self.run_options.terminate = True

    def forget(self) -> None:
        """Forget the remembered texts (``embed_one``): the next call embeds afresh."""
        self._recent.clear()

    def _embed_batch(self, texts: Sequence[str], on_worker: bool = False) -> np.ndarray:
        session = self._workers_session() if on_worker else self.session  # sets the input names
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
        hidden = session.run(None, feeds, self.run_options)[0]
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
