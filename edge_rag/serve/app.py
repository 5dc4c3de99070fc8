"""The service behind the endpoints: models loaded once, three lanes, the index's counts kept in
memory for ``/health`` (the ASGI app around it is ``routes.build_app``).

Design: docs/design/serve.md
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request

from ..api import EdgeRAG
from ..errors import BadDocument
from ..index import Document, InsertReport
from ..index.limits import MB, Limits
from ..index.reader import Item, Skipped, SkipTally
from ..plan.dialogue import split_topic
from ..retrieve import Retrieval
from . import chat
from .chat import BadRequest, ChatRequest
from .queue import Job, Lane, Stopped

T = TypeVar("T")
# Queues and body limits (docs/design/serve.md).
RETRIEVAL_WAITING = 64  # retrievals waiting on the retrieval lane
WRITING_WAITING = 8  # inserts and deletes waiting on the writing lane
JSON_LIMIT = 1 << 20  # bytes of a JSON body
UPLOAD_LIMIT_MB = 16.0  # an uploaded file, at most (and at most max_document_mb)
FORM_OVERHEAD = 64 << 10  # bytes of a multipart form besides its file
COUNTED = ("documents", "chunks", "entities", "relations")
# At shutdown a lane's worker finishes its step (the SLM's and embedder's calls are interrupted; leaving
# onnxruntime running while the interpreter exits would abort the process; serve.md).
CLOSE_WAIT_SECONDS = 30.0
# Methods that never call the SLM, whatever the profile's planner and keyword extractor.
SLM_FREE = ("vector", "none", "ppr", "titles")


class MemoryParser(MultiPartParser):
    """Multipart parsing that keeps an uploaded file in memory: never spooled to a disk file."""

    spool_max_size = 1 << 40


class Service:
    """The index opened once with its models; the generation, retrieval and writing lanes, each
    with its own handle (the handles share the embedder; the writer's opens on the first write)."""

    def __init__(self, rag: EdgeRAG, queue: int, timeout: float) -> None:
        self.rag = rag
        self.timeout = timeout
        self._reader = rag.sibling()
        self._writer: EdgeRAG | None = None  # opened by the first insert or delete
        self.generation = Lane("generation", queue)
        self.retrieval = Lane("retrieval", RETRIEVAL_WAITING)
        self.writing = Lane("writing", WRITING_WAITING)
        settings = rag.settings
        self.model = settings.slm
        self.max_tokens = settings.answer_max_tokens if settings.answer_stage == "plain" \
            else settings.focus_max_new_tokens
        self.upload_limit = int(min(settings.max_document_mb, UPLOAD_LIMIT_MB) * MB)
        self.limits = Limits(self.upload_limit, int(settings.max_inflated_mb * MB), settings.max_members)
        self.counts = index_counts(rag)

    @classmethod
    def start(cls, index: Path, profile: str | None, queue: int, timeout: float,
              key: bytes | None = None) -> Service:
        """Open the index (with its key when encrypted) and load every model now, not on the first
        request."""
        rag = EdgeRAG.open(index, profile, create=False, key=key)
        try:
            rag.warm()
            return cls(rag, queue, timeout)
        except BaseException:
            rag.close()
            raise

    def lanes(self) -> tuple[Lane, Lane, Lane]:
        """Generation, retrieval, writing."""
        return self.generation, self.retrieval, self.writing

    def shutting_down(self) -> None:
        """Mark every lane closing (plain flag writes: called from the signal handler); the running
        answer stops at its next piece."""
        for lane in self.lanes():
            lane.closing = True
        self.rag.interrupt()  # the answer stage embeds the evidence's lines too

    def close(self) -> None:
        """Stop the lanes, then close the index handles (the WAL is checkpointed)."""
        for lane in self.lanes():
            lane.close(CLOSE_WAIT_SECONDS)
        for handle in (self._reader, self._writer, self.rag):
            if handle is not None:
                handle.close()

    def body_limit(self, path: str) -> int:
        """Bytes a request body to ``path`` may have."""
        return self.upload_limit + FORM_OVERHEAD if path == "/v1/documents" else JSON_LIMIT

    def health(self, authorized: bool) -> dict[str, Any]:
        """``/health`` from memory: up; with the token also the models, the index's counts (as of
        the last write) and the queues."""
        if not authorized:
            return {"status": "ok"}
        return {"status": "ok", "ready": True, "models": self.models(), "index": self.counts,
                "queues": self.queues()}

    def models(self) -> dict[str, str]:
        """The models in use (names only)."""
        settings = self.rag.settings
        return {"slm": settings.slm, "embedder": settings.embedder, "planner": settings.planner}

    def queues(self) -> dict[str, dict[str, int]]:
        """Running and waiting jobs per lane."""
        return {lane.name: {"running": int(lane.running is not None), "waiting": lane.waiting,
                            "cancelled": lane.cancelled} for lane in self.lanes()}

    async def generate(self, asked: ChatRequest) -> Job:
        """Retrieve (on the retrieval lane: the generation lane's handle never loads the vectors),
        then queue the answer. A full generation queue refuses at once, before retrieving."""
        self.generation.check_room()
        retrieval = await self.retrieve(asked.question, asked.method, asked.top_k, asked.history)
        if retrieval.plan is not None and retrieval.plan.follow_up:  # answered as dialogue.md says
            asked.question = split_topic(retrieval.question)[0]
        retrieve = self._retriever(asked.method, asked.top_k, asyncio.get_running_loop())
        work = lambda job: chat.generate(job, self.rag, asked, retrieval, retrieve)
        return self.generation.submit(Job(work, self.timeout))

    async def retrieve(self, question: str, method: str, top_k: int | None,
                       history: list[dict[str, str]] | None = None) -> Retrieval:
        """Retrieval on its own lane, unless this profile's planner or keywords need the SLM;
        ``history``: the messages before the question (a follow-up is made standalone)."""
        lane, rag = (self.generation, self.rag) if self._uses_slm(method) else (self.retrieval, self._reader)
        return await self._run(lane, lambda: rag.retrieve(question, method=method, top_k=top_k,
                                                          history=history or None))

    def _uses_slm(self, method: str) -> bool:
        settings = self.rag.settings
        return method not in SLM_FREE and "slm" in (settings.planner, settings.keyword_extractor)

    def _retriever(self, method: str, top_k: int | None,
                   loop: asyncio.AbstractEventLoop) -> Callable[[str], Retrieval]:
        """Retrieval for the questions an answer rule asks first (``EdgeRAG.ask_with``), called on
        the generation lane: handed to the retrieval lane through the event loop, or run on the
        generation lane's own handle when retrieval needs the SLM (that lane is this one)."""
        if self._uses_slm(method):
            return lambda question: self.rag.retrieve(question, method=method, top_k=top_k)
        return lambda question: asyncio.run_coroutine_threadsafe(
            self.retrieve(question, method, top_k), loop).result(self.timeout)

    async def read(self, work: Callable[[EdgeRAG], T]) -> T:
        """Run a read of the index on the retrieval lane."""
        return await self._run(self.retrieval, lambda: work(self._reader))

    async def write(self, work: Callable[[EdgeRAG, Callable[[], None]], T]) -> T:
        """Run an insert or delete on the writing lane (the generation lane when the profile
        extracts the graph with the SLM). ``work`` gets the lane's handle and a hook that raises
        ``Stopped`` once the request must stop (its time limit passed, its client left, the server
        is closing); work that calls it stops there and rolls back, and the request waits for that
        (no other deadline), so a 504 means nothing was written. The counts are renewed after."""
        lane, rag = self.generation, self.rag
        if self.rag.settings.extractor != "slm":
            self._writer = self._writer or self.rag.sibling()
            lane, rag = self.writing, self._writer

        def run(job: Job) -> T:
            result = work(rag, lambda: chat.stop_if_due(job))
            self.counts = index_counts(rag)
            return result

        job = lane.submit(Job(run, self.timeout))
        try:
            return await job.result()
        finally:
            job.cancel()

    async def add(self, parse: Callable[[], Iterable[Item]]) -> tuple[InsertReport, SkipTally]:
        """Parse an upload and insert its documents on the writing lane, under the request's
        deadline (``write``): stopped, nothing of it is in the index."""
        return await self.write(lambda rag, stop: insert_upload(rag, parse, stop))

    async def _run(self, lane: Lane, work: Callable[[], T]) -> T:
        job = lane.submit(Job(lambda _job: work(), self.timeout))
        try:
            return await asyncio.wait_for(job.result(), self.timeout)
        except asyncio.TimeoutError:
            raise Stopped("timeout") from None
        finally:
            job.cancel()

    async def read_upload(self, request: Request) -> tuple[str, bytes]:
        """The ``file`` field of a multipart form: its name and bytes, in memory."""
        parser = MemoryParser(request.headers, request.stream(), max_files=1, max_fields=8,
                              max_part_size=FORM_OVERHEAD)
        try:
            form = await parser.parse()
        except MultiPartException as exc:
            raise BadRequest(f"bad multipart form: {exc.message}") from None
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("the form has no 'file' field")
        return upload.filename or "upload", await upload.read()


def insert_upload(rag: EdgeRAG, parse: Callable[[], Iterable[Item]],
                  stop: Callable[[], None]) -> tuple[InsertReport, SkipTally]:
    """Read an upload's documents (``stop`` asked after each one: a page, a message, a member),
    then insert them as one transaction that ``stop`` may roll back. A refused document refuses
    the upload (raised); skipped parts (an e-mail's attachments) are tallied."""
    documents, skips = [], SkipTally()
    for item in parse():
        stop()
        if isinstance(item, BadDocument):
            raise item
        if isinstance(item, Skipped):
            skips.add(item)
        elif isinstance(item, Document):
            documents.append(item)
    return rag.insert(*documents, progress=False, stop=stop), skips


def index_counts(rag: EdgeRAG) -> dict[str, int]:
    """Documents, chunks, entities, relations and the bytes of the index's files."""
    stats = rag.stats().to_dict()
    return {k: stats[k] for k in (*COUNTED, "total_bytes")}
