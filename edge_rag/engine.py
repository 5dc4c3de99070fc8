"""The parts an open index works with, behind the ``EdgeRAG`` facade.

``Engine`` holds the store and loads the rest on first use: the embedder, the vector readers,
the SLM, the planner, the answer stage, the ``ppr`` walk graph and the entity names. What is
derived from the index's data is rebuilt when the index changes (``Recomputed``). Tests and
benchmarks that exercise one of these parts open an ``Engine`` and read it directly; a user
needs only ``EdgeRAG``.

Design: docs/design/api.md
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from .answer import AnswerStage, Evidence, document_days, make_answer_stage, on_days
from .budget import fit_to_budget
from .config import Settings
from .errors import ModelNotFound
from .index import Chunker, Indexer
from .index.aggregate import AggregationParams
from .index.extract import make_extractor
from .index.graph_builder import GraphBuilder
from .lexicon import NameMatcher
from .models import Embedder, ModelFolder
from .models.session import session_providers, settings_session_options
from .models.slm import SLM, slm_hint
from .plan import Plan, Planner, QuestionProbes, make_planner, run_planner
from .plan.dialogue import Resolution, names_in, resolve
from .questions import clauses, compares_titles, forget_terms, names_a_seed, names_a_title
from .retrieve import DENSE_K, IndexView, Memory, RetrievedChunk, WalkGraph
from .retrieve.title_links import TitleIndex
from .retrieve.walk_cache import open_names, open_walk
from .store import IndexStore, VectorIndex, WriteLock

INDEX_KEYS = ("chunk_tokens", "chunk_overlap", "vector_dtype", "extractor")

T = TypeVar("T")


class Recomputed(Generic[T]):
    """A value built again whenever its key changes (the index's data version, the settings)."""

    def __init__(self, key: Callable[[], object], build: Callable[[], T]) -> None:
        self._key, self._build = key, build
        self._held: tuple[object, T] | None = None

    def get(self) -> T:
        """The value for the current key, built only when the key moved."""
        key = self._key()
        if self._held is None or self._held[0] != key:
            self._held = (key, self._build())
        return self._held[1]


class Engine:
    """An index's store and the models and derived structures read from it, loaded lazily."""

    def __init__(self, directory: Path, settings: Settings, store: IndexStore) -> None:
        self.directory, self.settings, self.store = directory, settings, store
        self._folder = _model_folder(settings)
        if self._folder is not None:
            store.bind_embedder(self._folder.identity)
        self._embedder: Embedder | None = None
        self._slm: SLM | None = None
        self._planner: Planner | None = None
        self._readers: dict[str, VectorIndex] = {}
        version = store.data_version
        self.names = Recomputed(version, self._load_names)
        self.walk = Recomputed(version, self._load_walk)
        self._days = Recomputed(version, self._load_days)
        self._stage = Recomputed(lambda: self.settings, self._load_stage)

    @classmethod
    def open(cls, path: str | Path, profile: str | Path | None = None, *, create: bool = True,
             key: str | bytes | None = None, **overrides: Any) -> Engine:
        """Open (or create) the index at ``path``; the index's own chunking and vector settings
        win over the profile's, and the rest is fitted to the profile's memory budget."""
        settings = Settings.load(profile, **overrides)
        directory = Path(path)
        store = IndexStore.open(directory, settings, create=create, key=key)
        recorded = store.index_settings()
        if recorded:
            settings = settings.replace(**{k: recorded[k] for k in INDEX_KEYS if k in recorded})
        else:
            store.record_index_settings({k: getattr(settings, k) for k in INDEX_KEYS})
        try:
            settings = fit_to_budget(settings, directory, with_slm=False, store=encrypted_store(store))
            return cls(directory, settings, store)
        except BaseException:
            store.close()
            raise

    def sibling(self) -> Engine:
        """Another engine on this index for another thread: its own SQLite connection and vector
        readers, this engine's embedder (loaded once, shared)."""
        store = IndexStore.open(self.directory, self.settings, create=False, key=self.store.key)
        other = Engine(self.directory, self.settings, store)
        other._embedder = self.embedder
        return other

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store and the embedder's session; safe to call twice."""
        self._readers.clear()
        if self._embedder is not None:
            self._embedder.close()
        self.store.close()

    def interrupt(self) -> None:
        """Stop the SLM's generation and the embedder's batch at their next step (any thread)."""
        if self._slm is not None:
            self._slm.interrupt()
        if self._embedder is not None:
            self._embedder.interrupt()

    def loaded(self) -> set[str]:
        """Which models are loaded now (``embedder``, ``slm``)."""
        return {name for name, part in (("embedder", self._embedder), ("slm", self._slm)) if part}

    # -- models ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder, loaded on first use."""
        if self._embedder is None:
            if self._folder is None:
                self._folder = ModelFolder.open(self.settings.home / "models" / self.settings.embedder)
                self.store.bind_embedder(self._folder.identity)
            self._embedder = Embedder.from_settings(self.settings, self._folder)
        return self._embedder

    @property
    def slm(self) -> SLM:
        """The small language model, loaded on first use after checking the memory budget (a
        board that cannot hold it gets a message, not the OOM killer)."""
        if self._slm is None:
            folder = ModelFolder.open(self.settings.home / "models" / self.settings.slm,
                                      slm_hint(self.settings.slm))
            self.settings = fit_to_budget(self.settings, self.directory, with_slm=True,
                                          store=encrypted_store(self.store))
            self._slm = SLM(folder, self.settings.intra_op_threads, self.settings.slm_context_tokens,
                            settings_session_options(self.settings),
                            providers=session_providers(self.settings))
        return self._slm

    @property
    def answerer(self) -> AnswerStage:
        """The answer stage of the ``answer_stage`` setting, kept (with its token masks and the
        SLM's KV cache of the system prompt) until the settings change."""
        _ = self.slm  # loading the SLM may fit the settings
        return self._stage.get()

    def planner(self) -> Planner:
        """The planner of the ``planner`` setting, built on first use."""
        if self._planner is None:
            probes = QuestionProbes(
                named=lambda q: names_a_seed(q, self.titles),
                compares=lambda q: compares_titles(q, self.titles),
                titled=lambda q: names_a_title(q, self.titles),
                two_events=lambda q: bool(clauses(q)),
                nearest=lambda q: self.vectors().search(self.embedder.embed_one(q), DENSE_K)[1])
            self._planner = make_planner(self.settings, lambda: self.embedder, lambda: self.slm,
                                         self.names.get, probes)
        return self._planner

    def plan(self, question: str) -> Plan:
        """The planner's choice of method for a question."""
        return run_planner(self.planner(), question, self.settings.planner_threshold,
                           self.settings.planner_fallback)

    # -- a dialogue (docs/design/dialogue.md) ------------------------------------------------

    def understand(self, question: str, history: list[dict[str, Any]] | None) -> Resolution | None:
        """The question made standalone after ``history`` (None without one: nothing changes)."""
        return None if history is None else resolve(question, history, self.known_names)

    def known_names(self, text: str) -> list[tuple[str, str]]:
        """The names in ``text``, as written there and in order, with their graph entity type:
        word runs the graph knows (spaced or not, "'s" aside), else capitalised words inside a
        sentence (type ""); none inside a longer one (``plan.dialogue.names_in``)."""
        return names_in(text, self._entity_types)

    def _entity_types(self, keys: list[str]) -> dict[str, str]:
        ids = self.store.graph.entity_of_keys(keys)
        types = {row.id: row.type for row in self.store.graph.entities(set(ids.values()))}
        return {key: types.get(node, "") for key, node in ids.items()}

    @staticmethod
    def memory(heard: Resolution | None, cited: tuple[int, ...] = ()) -> Memory | None:
        """What ``ppr`` restarts from besides a follow-up's own seeds: the previous turn's names
        and the chunks it cited (None for a question that stands alone)."""
        if heard is None or not heard.follow_up:
            return None
        return Memory(heard.names, cited)

    def forget(self) -> None:
        """Drop what recent questions left cached (embeddings, terms, the last vector search)."""
        self.embedder.forget()
        forget_terms()
        for vectors in self._readers.values():
            vectors.forget()

    # -- what retrieval reads ----------------------------------------------------------------

    def view(self) -> IndexView:
        """The parts the retrievers read, graph vectors and SLM loaded only if a method needs them."""
        return IndexView(self.settings, self.store, self.embedder, self.vectors(),
                         lambda: self.vectors("entity"), lambda: self.vectors("relation"),
                         lambda: self.slm, self.names.get, self.titles)

    def titles(self) -> TitleIndex | None:
        """The documents' titles, when the walk graph holds them."""
        return self.walk.get().titles

    def vectors(self, kind: str = "chunk") -> VectorIndex:
        """The reader of one kind of vectors, reopened when a writer moved it on."""
        current = self._readers.get(kind)
        if current is None or current.is_stale():
            current = self._readers[kind] = self.vector_index(kind).open()
            if current.rebuilt:
                self._persist_rebuilt(current)
        return current

    def vector_index(self, kind: str = "chunk") -> VectorIndex:
        """A new, unopened vector index of one kind."""
        dim = self.store.manifest().get("embedder_dimension")
        return VectorIndex(self.directory, kind, int(dim) if dim else self.embedder.dim,
                           self.settings.vector_dtype, self.store, self.settings.vector_file_min,
                           persist=not self.store.encrypted)

    def drop_readers(self) -> None:
        """Forget the vector readers (they reopen the files a writer saves)."""
        self._readers.clear()

    def _persist_rebuilt(self, vectors: VectorIndex) -> None:
        # A reader that had to rebuild saves the result only when no writer is active.
        lock = WriteLock(self.directory)
        if lock.try_acquire():
            try:
                generation = int(self.store.vector_state(vectors.kind)["generation"])
                if generation == vectors.generation:
                    vectors.save(generation)
            finally:
                lock.release()

    def _load_names(self) -> NameMatcher:
        return open_names(self.directory, self.store) or NameMatcher(self.store.graph.spellings())

    def _load_walk(self) -> WalkGraph:
        weights = self.settings.use_weights
        return open_walk(self.directory, self.store, weights) or WalkGraph.from_store(self.store, weights)

    # -- what the answer stage reads ---------------------------------------------------------

    def _load_stage(self) -> AnswerStage:
        evidence = Evidence(lambda texts: self.embedder.embed(texts), self._document_texts,
                            self._dated_chunks)
        return make_answer_stage(self.settings, self.slm, evidence)

    def _document_texts(self, doc_id: str) -> list[str]:
        return [chunk.text for chunk in self.store.document_chunks(doc_id)]

    def _dated_chunks(self, wanted: set[tuple[int, int]]) -> list[RetrievedChunk]:
        # The first chunk of each document dated on a wanted (month, day), oldest first.
        return [chunk for days, chunk in self._days.get() if on_days(wanted, days)]

    def _load_days(self) -> list[tuple[set, RetrievedChunk]]:
        dated = []
        for doc in self.store.documents():
            first = self.store.document_chunks(doc.id)[:1]
            days = document_days(doc.source, first[0].text.split("\n", 1)[0] if first else "")
            if days and first:
                dated.append((days, RetrievedChunk(first[0].id, doc.id, doc.source, first[0].text, 0.0)))
        return dated

    # -- writing --------------------------------------------------------------------------------

    def indexer(self, extract: bool = True) -> Indexer:
        """A writer of documents (chunks, vectors and, with ``extract``, the graph)."""
        vectors = self.vector_index().open(writable=True)
        self.drop_readers()
        chunker = Chunker(self.embedder.tokenizer, self.settings.chunk_tokens, self.settings.chunk_overlap)
        return Indexer(self.store, vectors, self.embedder, chunker, self.settings.vector_save_every,
                       self.graph_builder(extract))

    def graph_builder(self, extract: bool) -> GraphBuilder:
        """The graph's writer; deleting re-derives the graph from mentions and never needs the
        extractor (nor the SLM)."""
        settings = self.settings
        slm = self.slm if extract and settings.extractor == "slm" else None
        extractor = make_extractor(settings, slm) if extract else None
        params = AggregationParams(settings.aggregate_tau, settings.aggregate_lambda,
                                   settings.aggregate_delta, settings.aggregate_merge)
        entity = self.vector_index("entity").open(writable=True)
        relation = self.vector_index("relation").open(writable=True)
        return GraphBuilder(self.store, entity, relation, self.embedder, extractor, params,
                            settings.graph_batch_chunks)


def encrypted_store(store: IndexStore) -> IndexStore | None:
    """The store when it is encrypted (the budget then reads vector sizes through it), else None."""
    return store if store.encrypted else None


def _model_folder(settings: Settings) -> ModelFolder | None:
    try:
        return ModelFolder.open(settings.home / "models" / settings.embedder)
    except ModelNotFound:
        return None
