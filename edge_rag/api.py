"""The public facade: ``EdgeRAG.open(path)`` then insert, retrieve, ask, delete, stats.

``EdgeRAG`` is what a user holds; the parts it works with (store, models, vector readers, walk
graph, planner, answer stage) live in an ``Engine`` (``engine.py``) and stay private.

Design: docs/design/api.md
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, overload

from .answer import Answer, AnswerStream
from .answer.hops import answer_with_rules
from .budget import MemoryEstimate, estimate_memory
from .config import DEFAULT_METHOD, Settings
from .engine import Engine, encrypted_store
from .errors import BadDocument
from .index import Document, InsertReport, Skipped, read_sources
from .index.graph_export import graph_data
from .index.limits import Limits
from .index.sync import Syncer, SyncReport, dry_report, idle_report
from .index.sync import plan as sync_plan
from .index.sync import touch as sync_touch
from .plan import Plan
from .plan.dialogue import Resolution
from .retrieve import Memory, Retrieval, make_retriever
from .retrieve.walk_cache import store_walk
from .store import ChunkRecord, DocumentRecord, IndexStats, IndexStore, WriteLock, index_stats
from .store.rekey import convert
from .store.schema import VECTOR_KINDS

History = list[dict[str, Any]]  # OpenAI chat messages: {"role": "user" | "assistant", "content": ...}
CITED = re.compile(r"\[(\d+)")

# An insert ends with a VACUUM when it leaves more than this share of the SQLite file's pages
# free, or when it wrote at least half of the index's chunks (docs/design/storage.md).
COMPACT_FREE_SHARE = 0.1


class EdgeRAG:
    """An index directory opened for inserting, deleting, retrieving and answering.

    Use ``EdgeRAG.open(path)``; it is also a context manager. SQLite holds everything, each
    vector once; a kind with ``vector_file_min`` vectors or more also keeps a USearch HNSW file,
    a cache of its vectors that is rebuilt when it falls behind.
    """

    def __init__(self, engine: Engine) -> None:
        """Wrap an opened ``Engine`` (``EdgeRAG.open`` does this for you)."""
        self._engine = engine

    @classmethod
    def open(cls, path: str | Path, profile: str | Path | None = None, *,
             create: bool = True, key: str | bytes | None = None, **overrides: Any) -> EdgeRAG:
        """Open (or create) the index at ``path`` with a device profile and overrides.

        ``key`` (a passphrase, or 64 hex digits for a raw key) opens an encrypted index, or
        creates one (needs the ``[encrypt]`` extra); ``WrongKey`` without the right one."""
        return cls(Engine.open(path, profile, create=create, key=key, **overrides))

    @property
    def directory(self) -> Path:
        """The index directory."""
        return self._engine.directory

    @property
    def settings(self) -> Settings:
        """The settings in force (the profile's, the index's own, fitted to the memory budget)."""
        return self._engine.settings

    def sibling(self) -> EdgeRAG:
        """Another handle on this index for another thread (``edge-rag serve``'s lanes): its own
        SQLite connection and vector readers, this handle's embedder (loaded once, shared)."""
        return EdgeRAG(self._engine.sibling())

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
        self._engine.close()

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
        engine, settings = self._engine, self._engine.settings
        files = [p for p in paths if not isinstance(p, Document)]
        docs = [p for p in paths if isinstance(p, Document)]
        stream = _chain(docs, files, Limits.of(settings), settings.follow_symlinks)
        with WriteLock(self.directory), engine.store.unmapped():
            show = settings.progress if progress is None else progress
            report = engine.indexer().insert(stream, show, stop)
            self._after_write(report.chunks)
            return report

    def insert_text(self, text: str, source: str = "text",
                    metadata: dict[str, Any] | None = None) -> InsertReport:
        """Insert one document given as a string, with a source name and metadata."""
        return self.insert(Document.from_text(text, source, metadata), progress=False)

    def sync(self, folder: str | Path, dry_run: bool = False, progress: bool | None = None) -> SyncReport:
        """Keep the index in step with a folder: new files inserted, changed ones replaced (one
        transaction each), deleted ones removed, unchanged ones skipped on size and mtime. Only
        documents an earlier sync of this folder added are ever removed (``index/sync.py``)."""
        engine, settings = self._engine, self._engine.settings
        with WriteLock(self.directory), engine.store.unmapped():
            found = sync_plan(engine.store, Path(folder), settings.follow_symlinks, self.directory)
            if dry_run:
                return dry_report(found)
            if found.idle:
                sync_touch(engine.store, found)
                return idle_report(found)
            syncer = Syncer(engine.store, engine.indexer(), Limits.of(settings), settings.follow_symlinks)
            report = syncer.apply(found, settings.progress if progress is None else progress)
            self._after_write(report.chunks)
            return report

    def _after_write(self, written: int) -> None:
        # A bulk write ends compact: SQLite only, since the vector files were just written with no
        # removed slots and rebuilding them would hold a second HNSW graph in memory.
        store = self._engine.store
        if store.free_share() > COMPACT_FREE_SHARE or (written > 0 and 2 * written >= store.chunk_count()):
            self._engine.drop_readers()
            store.compact()
        store_walk(self.directory, store)

    def delete(self, doc_id: str) -> int:
        """Delete a document, its chunks and vectors; returns how many chunks went."""
        with WriteLock(self.directory):
            removed = self._engine.indexer(extract=False).delete(doc_id)
            store_walk(self.directory, self._engine.store)
            return removed

    def compact(self) -> tuple[int, int]:
        """Return the space deletes leave to the disk: ``VACUUM`` the SQLite file and rewrite
        every vector file from SQLite's codes. Returns the index's bytes before and after."""
        before = self.stats().total_bytes
        with WriteLock(self.directory):
            self._engine.drop_readers()
            self._engine.store.compact()
            for kind in VECTOR_KINDS:
                self._engine.vector_index(kind).compact()
        return before, self.stats().total_bytes

    # -- reading -------------------------------------------------------------------------

    def retrieve(self, question: str, method: str = DEFAULT_METHOD, top_k: int | None = None,
                 history: History | None = None) -> Retrieval:
        """Context for a question by one retrieval method: ``vector`` (VR, eq. 7), ``local``
        (LR, eqs. 8–11), ``dual`` (DR, eqs. 12–17), ``topology`` (TR, eqs. 18–29), ``ppr``
        (personalized PageRank over the weighted graph, beyond the paper), ``titles`` (passages
        named by title, then the nearest chunks), ``none``, or ``auto`` (the default): the
        planner (§3.3) chooses one, recorded in ``Retrieval.plan``. ``history``: the OpenAI
        messages before the question; a follow-up is made standalone first (``plan.resolved``)."""
        heard = self._engine.understand(question, history)
        if heard is not None and heard.follow_up:
            return self._follow_up(heard, method, top_k)
        return self._retrieve(question, method, top_k)

    def _retrieve(self, question: str, method: str, top_k: int | None,
                  memory: Memory | None = None) -> Retrieval:
        engine = self._engine
        chosen = engine.plan(question) if method.lower() == "auto" else None
        retriever = make_retriever(chosen.method if chosen else method, engine.view(), engine.walk.get,
                                   memory)
        result = retriever.retrieve(question, top_k or engine.settings.top_k)
        if chosen is not None:
            result.plan = chosen
            result.timings_ms = {"plan": chosen.latency_ms, **result.timings_ms}
        return result

    def _follow_up(self, heard: Resolution, method: str, top_k: int | None,
                   cited: tuple[int, ...] | None = None) -> Retrieval:
        # The walk restarts also from the previous turn's names and cited chunks (those of its
        # retrieval, found again when the caller does not know them): docs/design/dialogue.md.
        start = time.perf_counter()
        if cited is None and heard.previous is not None:
            before = self._retrieve(heard.previous.question, method, top_k)
            cited = tuple(c.chunk_id for c in before.chunks[:2])
        memory, spent = self._engine.memory(heard, cited or ()), (time.perf_counter() - start) * 1000
        result = self._retrieve(heard.resolved, method, top_k, memory)
        plan = result.plan or Plan("-", result.method, "none")
        result.plan = replace(plan, resolved=heard.resolved, follow_up=True)
        result.timings_ms = {"dialogue": spent, **result.timings_ms}
        return result

    def plan(self, question: str) -> Plan:
        """The planner's choice of method for a question (``planner`` setting: margin, names,
        head, slm, rules)."""
        return self._engine.plan(question)

    @overload
    def ask(self, question: str, method: str = ..., top_k: int | None = ...,
            stream: Literal[False] = ..., history: History | None = ...) -> Answer: ...

    @overload
    def ask(self, question: str, method: str = ..., top_k: int | None = ..., *,
            stream: Literal[True], history: History | None = ...) -> AnswerStream: ...

    @overload
    def ask(self, question: str, method: str = ..., top_k: int | None = ...,
            stream: bool = ..., history: History | None = ...) -> Answer | AnswerStream: ...

    def ask(self, question: str, method: str = DEFAULT_METHOD, top_k: int | None = None,
            stream: bool = False, history: History | None = None) -> Answer | AnswerStream:
        """Answer a question from the index with the SLM, citing numbered sources.

        With ``stream=True`` the result is an ``AnswerStream``: iterate it for text pieces; its
        ``.answer`` is complete once the iteration ends. A bridge question ("Where was the
        director of film X born?") is answered one link at a time (the ``hops`` rule), an
        either-or question about dates by comparing two when-answers (the ``compare`` rule);
        the answers asked first are in ``Answer.hops``, their time in ``timings["hops"]``.
        ``history`` (OpenAI messages before the question) makes a follow-up standalone first.
        The SLM stays loaded and reuses the KV cache of the system prompt.
        """
        return self._ask(question, method, top_k, stream, self._engine.understand(question, history))

    def _ask(self, question: str, method: str, top_k: int | None, stream: bool,
             heard: Resolution | None, cited: tuple[int, ...] | None = None) -> Answer | AnswerStream:
        again = lambda asked: self.retrieve(asked, method=method, top_k=top_k)  # noqa: E731
        if heard is None or not heard.follow_up:
            return self.ask_with(question, again, stream=stream)
        retrieval = self._follow_up(heard, method, top_k, cited)
        return self.ask_with(heard.asked, again, stream=stream, retrieval=retrieval)

    def conversation(self, method: str = DEFAULT_METHOD, top_k: int | None = None) -> Conversation:
        """A dialogue with the index: each question is answered after the turns before it."""
        return Conversation(self, method, top_k)

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
        stage = self._engine.answerer
        return answer_with_rules(question, retrieve, stage, self.settings.answer_rules_off,
                                 stream=stream, retrieval=retrieval, max_new_tokens=max_new_tokens)

    # -- what the index holds ------------------------------------------------------------

    def documents(self) -> list[DocumentRecord]:
        """Every stored document."""
        return self._engine.store.documents()

    def chunks(self, doc_id: str) -> list[ChunkRecord]:
        """A document's chunks in order (``NoSuchDocument`` when there is none)."""
        return self._engine.store.document_chunks(doc_id)

    def stats(self) -> IndexStats:
        """Counts and bytes on disk per file."""
        return index_stats(self.directory, self._engine.store)

    def graph(self, around: str | None = None, hops: int = 2) -> dict[str, Any]:
        """The entity graph as JSON-ready nodes and edges, or the neighbourhood of one entity."""
        return graph_data(self._engine.store, around, hops)

    def memory_estimate(self, with_slm: bool = True) -> MemoryEstimate:
        """What this session is expected to take against the profile's ``memory_budget_mb``."""
        return estimate_memory(self.settings, self.directory, with_slm, encrypted_store(self._engine.store))

    # -- running it ------------------------------------------------------------------------

    def warm(self, slm: bool = True) -> None:
        """Load the embedder (and the SLM with its answer stage) now rather than on first use."""
        _ = self._engine.embedder
        if slm:
            _ = self._engine.answerer

    def interrupt(self) -> None:
        """Stop the running generation and embedding at their next step (from another thread)."""
        self._engine.interrupt()

    def count_tokens(self, text: str) -> int:
        """How many SLM tokens ``text`` takes."""
        return self._engine.slm.count_tokens(text)

    def clear_caches(self) -> None:
        """Forget what recent questions left cached — their embeddings, terms and the last vector
        search — so that the next call pays for everything it needs (for timing a method)."""
        self._engine.forget()


@dataclass(frozen=True)
class Turn:
    """One exchange of a ``Conversation``: the question as asked and its answer (sources, plan)."""

    question: str
    answer: Answer

    @property
    def resolved(self) -> str:
        """The standalone question the turn was understood as."""
        plan = self.answer.retrieval.plan if self.answer.retrieval else None
        return plan.resolved if plan is not None and plan.resolved else self.question


class Conversation:
    """A dialogue with an index (``EdgeRAG.conversation()``): ``ask`` answers a question after the
    turns before it, a follow-up made standalone (docs/design/dialogue.md); ``reset`` forgets."""

    def __init__(self, rag: EdgeRAG, method: str = DEFAULT_METHOD, top_k: int | None = None) -> None:
        self.rag, self.method, self.top_k = rag, method, top_k
        self.turns: list[Turn] = []

    @property
    def messages(self) -> History:
        """The turns as OpenAI chat messages."""
        return [m for t in self.turns for m in ({"role": "user", "content": t.question},
                                                {"role": "assistant", "content": t.answer.text})]

    def ask(self, question: str) -> Answer:
        """Answer ``question`` after the turns so far, and keep the turn."""
        heard = self.rag._engine.understand(question, self.messages) if self.turns else None
        answer = self.rag._ask(question, self.method, self.top_k, False, heard, self._cited())
        assert isinstance(answer, Answer)
        self.turns.append(Turn(question, answer))
        return answer

    def reset(self) -> None:
        """Forget the turns: the next question starts a new conversation."""
        self.turns.clear()

    def _cited(self) -> tuple[int, ...] | None:
        # The chunks the last answer cited ([n]), else its first source.
        if not self.turns:
            return None
        answer = self.turns[-1].answer
        numbers = [int(n) - 1 for n in CITED.findall(answer.text)] or [0]
        return tuple(answer.sources[n].chunk_id for n in numbers if 0 <= n < len(answer.sources))


def _chain(docs: list[Document], files: list, limit: Limits,
           follow_symlinks: bool) -> Iterator[Document | BadDocument | Skipped]:
    yield from docs
    yield from read_sources(files, limit, follow_symlinks)
