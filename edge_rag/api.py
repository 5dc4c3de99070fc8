"""The public facade: ``EdgeRAG.open(path)`` then insert, retrieve, delete, stats."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, overload

from .answer import Answer, AnswerStage, AnswerStream, Evidence, document_days, make_answer_stage, on_days
from .answer.hops import attach as attach_hops
from .answer.hops import compare as compare_dates
from .answer.hops import resolve as resolve_hops
from .budget import MemoryEstimate, estimate_memory, fit_to_budget
from .config import DEFAULT_METHOD, Settings
from .errors import BadDocument, ModelNotFound
from .index import Chunker, Document, Indexer, InsertReport, Skipped, read_sources
from .index.aggregate import AggregationParams
from .index.extract import make_extractor
from .index.graph_builder import GraphBuilder
from .index.graph_export import graph_data
from .index.limits import Limits
from .index.sync import Syncer, SyncReport, dry_report, idle_report
from .index.sync import plan as sync_plan
from .index.sync import touch as sync_touch
from .lexicon import NameMatcher
from .models import Embedder, ModelFolder
from .models.session import session_providers, settings_session_options
from .models.slm import SLM, slm_hint
from .plan import Plan, Planner, QuestionProbes, make_planner, run_planner
from .questions import clauses, compares_titles, forget_terms, names_a_seed, names_a_title
from .retrieve import DENSE_K, IndexView, Retrieval, RetrievedChunk, WalkGraph, make_retriever
from .retrieve.title_index import TitleIndex
from .retrieve.walk_cache import open_names, open_walk, store_walk
from .store import DocumentRecord, IndexStore, VectorIndex, WriteLock
from .store.rekey import convert
from .store.schema import VECTOR_KINDS

INDEX_KEYS = ("chunk_tokens", "chunk_overlap", "vector_dtype", "extractor")
# Bulk builds end compact: an insert ends with a VACUUM when it leaves more than this share
# of the SQLite file's pages free, or when it wrote at least half of the index's chunks (the
# graph's rows are rewritten as batches arrive, leaving half-empty pages: LiHua's fresh build
# measured 12.4 MB before VACUUM and 11.4 MB after, with no page on the free list).
COMPACT_FREE_SHARE = 0.1


@dataclass
class IndexStats:
    """Counts of what an index holds, its bytes on disk per file and, inside the SQLite file,
    per table (with the table's indexes)."""

    path: str
    documents: int
    chunks: int
    entities: int
    relations: int
    similar_edges: int
    entity_names: int = 0
    merges: int = 0
    chunks_in_graph: int = 0
    extraction_failures: int = 0
    files: dict[str, int] = field(default_factory=dict)
    tables: dict[str, int] = field(default_factory=dict)
    embedder: str = ""
    schema_version: str = ""

    @property
    def total_bytes(self) -> int:
        """Bytes on disk of every file in the index directory."""
        return sum(self.files.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (the CLI's ``stats --json`` output)."""
        return {**asdict(self), "total_bytes": self.total_bytes}


class EdgeRAG:
    """An index directory opened for inserting, deleting and retrieving.

    Use ``EdgeRAG.open(path)``; it is also a context manager. SQLite holds everything, each
    vector once; a kind with ``vector_file_min`` vectors or more also keeps a USearch HNSW file,
    a cache of its vectors that is rebuilt when it falls behind.
    """

    def __init__(self, directory: Path, settings: Settings, store: IndexStore) -> None:
        self.directory = directory
        self.settings = settings
        self.store = store
        self._folder = _model_folder(settings)
        if self._folder is not None:
            store.bind_embedder(self._folder.identity)
        self._embedder: Embedder | None = None
        self._slm: SLM | None = None
        self._readers: dict[str, VectorIndex] = {}
        self._names: tuple[tuple[int, int], NameMatcher] | None = None
        self._days: tuple[tuple[int, int], list[tuple[set, RetrievedChunk]]] | None = None
        self._walk: tuple[tuple[int, int], WalkGraph] | None = None
        self._planner: Planner | None = None
        self._answerer: tuple[Settings, AnswerStage] | None = None

    @classmethod
    def open(cls, path: str | Path, profile: str | Path | None = None, *,
             create: bool = True, key: str | bytes | None = None, **overrides: Any) -> EdgeRAG:
        """Open (or create) the index at ``path`` with a device profile and overrides.

        ``key`` (a passphrase, or 64 hex digits for a raw key) opens an encrypted index, or
        creates one (needs the ``[encrypt]`` extra); ``WrongKey`` without the right one."""
        settings = Settings.load(profile, **overrides)
        directory = Path(path)
        store = IndexStore.open(directory, settings, create=create, key=key)
        recorded = store.index_settings()
        if recorded:
            settings = settings.replace(**{k: recorded[k] for k in INDEX_KEYS if k in recorded})
        else:
            store.record_index_settings({k: getattr(settings, k) for k in INDEX_KEYS})
        try:
            settings = fit_to_budget(settings, directory, with_slm=False, store=_encrypted(store))
            return cls(directory, settings, store)
        except BaseException:
            store.close()
            raise

    def sibling(self) -> EdgeRAG:
        """Another handle on this index for another thread (``edge-rag serve``'s lanes): its own
        SQLite connection and vector readers, this handle's embedder (loaded once, shared)."""
        other = EdgeRAG(self.directory, self.settings,
                        IndexStore.open(self.directory, self.settings, create=False,
                                        key=self.store.key))
        other._embedder = self.embedder
        return other

    @staticmethod
    def change_key(path: str | Path, key: str | bytes | None, new_key: str | bytes | None) -> None:
        """Encrypt a plain index (``key`` None), decrypt one (``new_key`` None) or change its key,
        by rewriting its SQLite file into a new one that replaces it (``store.rekey.convert``).
        Needs the write lock and no other process holding the index open."""
        directory = Path(path)
        IndexStore.check(directory)
        with WriteLock(directory):
            convert(directory, key, new_key)

    def __enter__(self) -> EdgeRAG:
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Release the index; safe to call twice."""
        self._readers.clear()
        if self._embedder is not None:
            self._embedder.close()
        self.store.close()

    # -- writing ------------------------------------------------------------------------

    def insert(self, *paths: str | Path | Document, progress: bool | None = None,
               stop: Callable[[], None] | None = None) -> InsertReport:
        """Insert files, folders (recursive), zip archives or ``Document`` objects.

        Supported files: .txt, .md, .json/.jsonl (records with a text field), .zip of those, and
        .pdf, .html/.htm, .eml, .mbox, .docx, .csv (``index/formats/``; PDF and Word need extras).
        Each document commits on its own; duplicates (same content) are skipped and bad
        documents are reported in ``InsertReport.failed`` without stopping the rest. With ``stop``
        (called between documents and chunk groups; what it raises stops the insert) the call is
        one transaction: stopped, it leaves the index as it was.
        """
        limit = Limits.of(self.settings)
        files = [p for p in paths if not isinstance(p, Document)]
        docs = [p for p in paths if isinstance(p, Document)]
        stream = _chain(docs, files, limit, self.settings.follow_symlinks)
        with WriteLock(self.directory), self.store.unmapped():
            indexer = self._indexer()
            show = self.settings.progress if progress is None else progress
            report = indexer.insert(stream, show, stop)
            if self._ends_bulk(report.chunks):
                # SQLite only: the vector files were just written and hold no removed slots, and
                # rebuilding them would hold a second HNSW graph in memory (issue 16's build bound).
                self._readers.clear()
                self.store.compact()
            store_walk(self.directory, self.store)
            return report

    def _ends_bulk(self, written: int) -> bool:
        if self.store.free_share() > COMPACT_FREE_SHARE:
            return True
        return written > 0 and 2 * written >= self.store.chunk_count()

    def insert_text(self, text: str, source: str = "text",
                    metadata: dict[str, Any] | None = None) -> InsertReport:
        """Insert one document given as a string, with a source name and metadata."""
        return self.insert(Document.from_text(text, source, metadata), progress=False)

    def sync(self, folder: str | Path, dry_run: bool = False, progress: bool | None = None) -> SyncReport:
        """Keep the index in step with a folder: new files inserted, changed ones replaced (one
        transaction each), deleted ones removed, unchanged ones skipped on size and mtime. Only
        documents an earlier sync of this folder added are ever removed (``index/sync.py``)."""
        with WriteLock(self.directory), self.store.unmapped():
            found = sync_plan(self.store, Path(folder), self.settings.follow_symlinks, self.directory)
            if dry_run:
                return dry_report(found)
            if found.idle:
                sync_touch(self.store, found)
                return idle_report(found)
            limit = Limits.of(self.settings)
            syncer = Syncer(self.store, self._indexer(), limit, self.settings.follow_symlinks)
            report = syncer.apply(found, self.settings.progress if progress is None else progress)
            if self._ends_bulk(report.chunks):
                self._readers.clear()
                self.store.compact()
            store_walk(self.directory, self.store)
            return report

    def delete(self, doc_id: str) -> int:
        """Delete a document, its chunks and vectors; returns how many chunks went."""
        with WriteLock(self.directory):
            removed = self._indexer(extract=False).delete(doc_id)
            store_walk(self.directory, self.store)
            return removed

    def compact(self) -> tuple[int, int]:
        """Return the space deletes leave to the disk: ``VACUUM`` the SQLite file and rewrite
        every vector file from SQLite's codes. Returns the index's bytes before and after."""
        before = self.stats().total_bytes
        with WriteLock(self.directory):
            self._compact()
        return before, self.stats().total_bytes

    def _compact(self) -> None:
        self._readers.clear()
        self.store.compact()
        for kind in VECTOR_KINDS:
            self._new_vector_index(kind).compact()

    # -- reading -------------------------------------------------------------------------

    def retrieve(self, question: str, method: str = DEFAULT_METHOD, top_k: int | None = None) -> Retrieval:
        """Context for a question by one retrieval method: ``vector`` (VR, eq. 7), ``local``
        (LR, eqs. 8–11), ``dual`` (DR, eqs. 12–17), ``topology`` (TR, eqs. 18–29), ``ppr``
        (personalized PageRank over the weighted graph, beyond the paper), ``none``, or
        ``auto`` (the default): the planner (§3.3) chooses one, recorded in ``Retrieval.plan``."""
        chosen = self.plan(question) if method.lower() == "auto" else None
        view = IndexView(self.settings, self.store, self.embedder, self._vectors(),
                         lambda: self._vectors("entity"), lambda: self._vectors("relation"),
                         lambda: self.slm, self.name_matcher, self._titles)
        retriever = make_retriever(chosen.method if chosen else method, view, self.walk_graph)
        result = retriever.retrieve(question, top_k or self.settings.top_k)
        if chosen is not None:
            result.plan = chosen
            result.timings_ms = {"plan": chosen.latency_ms, **result.timings_ms}
        return result

    def plan(self, question: str) -> Plan:
        """The planner's choice of method for a question (``planner`` setting: margin, names,
        head, slm, rules)."""
        if self._planner is None:
            probes = QuestionProbes(
                named=lambda q: names_a_seed(q, self._titles),
                compares=lambda q: compares_titles(q, self._titles),
                titled=lambda q: names_a_title(q, self._titles),
                two_events=lambda q: bool(clauses(q)),
                nearest=lambda q: self._vectors().search(self.embedder.embed_one(q), DENSE_K)[1])
            self._planner = make_planner(self.settings, lambda: self.embedder, lambda: self.slm,
                                         self.name_matcher, probes)
        return run_planner(self._planner, question, self.settings.planner_threshold,
                    self.settings.planner_fallback)

    def forget(self) -> None:
        """Forget what recent questions left behind — their embeddings, terms and the last vector
        search — so that the next call pays for everything it needs (for timing a method)."""
        self.embedder.forget()
        forget_terms()
        for vectors in self._readers.values():
            vectors.forget()

    @overload
    def ask(self, question: str, method: str = ..., top_k: int | None = ...,
            stream: Literal[False] = ...) -> Answer: ...

    @overload
    def ask(self, question: str, method: str = ..., top_k: int | None = ..., *,
            stream: Literal[True]) -> AnswerStream: ...

    @overload
    def ask(self, question: str, method: str = ..., top_k: int | None = ...,
            stream: bool = ...) -> Answer | AnswerStream: ...

    def ask(self, question: str, method: str = DEFAULT_METHOD, top_k: int | None = None,
            stream: bool = False) -> Answer | AnswerStream:
        """Answer a question from the index with the SLM, citing numbered sources.

        With ``stream=True`` the result is an ``AnswerStream``: iterate it for text pieces;
        its ``.answer`` is complete once the iteration ends. A bridge question ("Where was the
        director of film X born?") is answered one link at a time (``answer/hops.py``, the
        ``hops`` rule), an either-or question about dates by comparing two when-answers (the
        ``compare`` rule); the answers asked first are in ``Answer.hops``, the time they took in
        ``timings["hops"]``.
        """
        return self.ask_with(question, lambda asked: self.retrieve(asked, method=method, top_k=top_k),
                             stream=stream)

    @overload
    def ask_with(self, question: str, retrieve: Callable[[str], Retrieval], *,
                 stream: Literal[False] = ..., retrieval: Retrieval | None = ...,
                 max_new_tokens: int | None = ...) -> Answer: ...

    @overload
    def ask_with(self, question: str, retrieve: Callable[[str], Retrieval], *, stream: Literal[True],
                 retrieval: Retrieval | None = ..., max_new_tokens: int | None = ...) -> AnswerStream: ...

    @overload
    def ask_with(self, question: str, retrieve: Callable[[str], Retrieval], *, stream: bool = ...,
                 retrieval: Retrieval | None = ...,
                 max_new_tokens: int | None = ...) -> Answer | AnswerStream: ...

    def ask_with(self, question: str, retrieve: Callable[[str], Retrieval], *, stream: bool = False,
                 retrieval: Retrieval | None = None,
                 max_new_tokens: int | None = None) -> Answer | AnswerStream:
        """:meth:`ask` with the caller's retrieval: ``retrieve`` finds the evidence of the question
        and of every question the ``hops`` and ``compare`` rules ask first; ``retrieval``, when
        given, is the question's own (used unless a rule rewrites the question). The server
        retrieves on its own lane this way; ``max_new_tokens`` caps a streamed answer."""
        off = self.settings.answer_rules_off
        started = time.perf_counter()

        def ask(asked: str) -> Answer:
            return self.ask_with(asked, retrieve)

        if "compare" not in off and (compared := compare_dates(question, ask)) is not None:
            compared.timings["hops"] = (time.perf_counter() - started) * 1000
            return AnswerStream.whole(compared) if stream else compared
        links: list[Answer] = []
        if "hops" not in off:
            question, links = resolve_hops(question, ask)
        asked_first = (time.perf_counter() - started) * 1000
        if retrieval is None or links:
            retrieval = retrieve(question)
        answerer = self.answerer
        streamed = answerer.stream(question, retrieval, max_new_tokens) if stream else None
        answer = streamed.answer if streamed else answerer.answer(question, retrieval)
        if links:
            attach_hops(answer, links).timings["hops"] = asked_first
        return streamed or answer

    @property
    def answerer(self) -> AnswerStage:
        """The answer stage of the ``answer_stage`` setting (``focused`` or ``plain``).

        The SLM stays loaded and keeps the KV cache of the last prompt: the next question skips
        the prefill of the fixed system prompt (``cached_tokens`` in the answer's timings). The
        stage itself stays too, with the token masks it computed, until the settings change.
        """
        slm, settings = self.slm, self.settings  # loading the SLM may fit the settings
        if self._answerer is None or self._answerer[0] != settings:
            evidence = Evidence(lambda texts: self.embedder.embed(texts), self._document_texts,
                                self._dated_chunks)
            self._answerer = (settings, make_answer_stage(settings, slm, evidence))
        return self._answerer[1]

    def _document_texts(self, doc_id: str) -> list[str]:
        return [chunk.text for chunk in self.store.document_chunks(doc_id)]

    def _dated_chunks(self, wanted: set[tuple[int, int]]) -> list[RetrievedChunk]:
        # The first chunk of each document dated on a wanted (month, day), oldest first; the
        # documents' dates are read once per index version.
        version = self.store.data_version()
        if self._days is None or self._days[0] != version:
            dated = []
            for doc in self.store.documents():
                first = self.store.document_chunks(doc.id)[:1]
                days = document_days(doc.source, first[0].text.split("\n", 1)[0] if first else "")
                if days and first:
                    dated.append((days, RetrievedChunk(first[0].id, doc.id, doc.source,
                                                       first[0].text, 0.0)))
            self._days = (version, dated)
        return [chunk for days, chunk in self._days[1] if on_days(wanted, days)]

    @property
    def slm(self) -> SLM:
        """The small language model, loaded on first use."""
        if self._slm is None:
            folder = ModelFolder.open(self.settings.home / "models" / self.settings.slm,
                                      slm_hint(self.settings.slm))
            # Checked before loading: a board that cannot hold the SLM gets a message, not the OOM killer.
            self.settings = fit_to_budget(self.settings, self.directory, with_slm=True,
                                          store=_encrypted(self.store))
            self._slm = SLM(folder, self.settings.intra_op_threads, self.settings.slm_context_tokens,
                            settings_session_options(self.settings),
                            providers=session_providers(self.settings))
        return self._slm

    def memory_estimate(self, with_slm: bool = True) -> MemoryEstimate:
        """What this session is expected to take against the profile's ``memory_budget_mb``."""
        return estimate_memory(self.settings, self.directory, with_slm, _encrypted(self.store))

    def graph(self, around: str | None = None, hops: int = 2) -> dict[str, Any]:
        """The entity graph as JSON-ready nodes and edges, or the neighbourhood of one entity."""
        return graph_data(self.store, around, hops)

    def name_matcher(self) -> NameMatcher:
        """The graph's entity names, prepared for matching query text (reloaded when the index
        changes)."""
        version = self.store.data_version()
        if self._names is None or self._names[0] != version:
            stored = open_names(self.directory, self.store)
            self._names = (version, stored or NameMatcher(self.store.graph.spellings()))
        return self._names[1]

    def walk_graph(self) -> WalkGraph:
        """The ``ppr`` method's transition matrix (rebuilt when the index changes)."""
        version = self.store.data_version()
        if self._walk is None or self._walk[0] != version:
            weights = self.settings.use_weights
            stored = open_walk(self.directory, self.store, weights)
            self._walk = (version, stored or WalkGraph.from_store(self.store, weights))
        return self._walk[1]

    def _titles(self) -> TitleIndex | None:
        return self.walk_graph().titles

    def documents(self) -> list[DocumentRecord]:
        """Every stored document."""
        return self.store.documents()

    def stats(self) -> IndexStats:
        """Counts and bytes on disk per file."""
        manifest = self.store.manifest()
        files = {p.name: p.stat().st_size for p in sorted(self.directory.iterdir()) if p.is_file()}
        return IndexStats(str(self.directory), **self.store.counts(), files=files,
                          tables=self.store.table_bytes(),
                          embedder=manifest.get("embedder_name", ""),
                          schema_version=manifest.get("schema_version", ""))

    @property
    def embedder(self) -> Embedder:
        """The embedder, loaded on first use."""
        if self._embedder is None:
            if self._folder is None:
                self._folder = ModelFolder.open(self.settings.home / "models" / self.settings.embedder)
                self.store.bind_embedder(self._folder.identity)
            self._embedder = Embedder.from_settings(self.settings, self._folder)
        return self._embedder

    # -- internals -------------------------------------------------------------------------

    def _indexer(self, extract: bool = True) -> Indexer:
        vectors = self._new_vector_index().open(writable=True)
        self._readers.clear()  # readers reload the files this writer saves
        chunker = Chunker(self.embedder.tokenizer, self.settings.chunk_tokens,
                          self.settings.chunk_overlap)
        return Indexer(self.store, vectors, self.embedder, chunker, self.settings.vector_save_every,
                       self._graph_builder(extract))

    def _graph_builder(self, extract: bool) -> GraphBuilder:
        # Deleting re-derives the graph from mentions and never needs the extractor (nor the SLM).
        settings = self.settings
        slm = self.slm if extract and settings.extractor == "slm" else None
        extractor = make_extractor(settings, slm) if extract else None
        params = AggregationParams(settings.aggregate_tau, settings.aggregate_lambda,
                                   settings.aggregate_delta, settings.aggregate_merge)
        entity = self._new_vector_index("entity").open(writable=True)
        relation = self._new_vector_index("relation").open(writable=True)
        return GraphBuilder(self.store, entity, relation, self.embedder, extractor, params,
                            settings.graph_batch_chunks)

    def _vectors(self, kind: str = "chunk") -> VectorIndex:
        current = self._readers.get(kind)
        if current is None or current.is_stale():
            current = self._readers[kind] = self._new_vector_index(kind).open()
            if current.rebuilt:
                self._persist_rebuilt(current)
        return current

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

    def _new_vector_index(self, kind: str = "chunk") -> VectorIndex:
        dim = self.store.manifest().get("embedder_dimension")
        return VectorIndex(self.directory, kind, int(dim) if dim else self.embedder.dim,
                           self.settings.vector_dtype, self.store, self.settings.vector_file_min,
                           persist=not self.store.encrypted)


def _chain(docs: list[Document], files: list, limit: Limits,
           follow_symlinks: bool) -> Iterator[Document | BadDocument | Skipped]:
    yield from docs
    yield from read_sources(files, limit, follow_symlinks)


def _encrypted(store: IndexStore) -> IndexStore | None:
    # The budget reads an encrypted index's vector sizes through the open store.
    return store if store.encrypted else None


def _model_folder(settings: Settings) -> ModelFolder | None:
    try:
        return ModelFolder.open(settings.home / "models" / settings.embedder)
    except ModelNotFound:
        return None
