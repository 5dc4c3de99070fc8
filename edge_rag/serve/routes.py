"""The HTTP endpoints: OpenAI chat completions and models, retrieve, documents, health, the page.

Design: docs/design/serve.md
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import (
    BadDocument,
    ContextOverflow,
    EdgeRagError,
    IndexLocked,
    MissingExtra,
    NoSuchDocument,
    UnknownMethod,
)
from ..index import Document
from ..index.reader import Item, read_upload
from . import chat
from .app import Service
from .chat import BadRequest
from .queue import Job, QueueFull, Stopped
from .security import ASGIApp, BodyTooLarge, Guard, Rules, SlowBody, clean_message

CLIENT_ERRORS = (BadRequest, BadDocument, UnknownMethod, ContextOverflow)
# Streaming and uploads (docs/design/serve.md).
KEEP_ALIVE_SECONDS = 1.0  # an SSE comment after this long without an event
POLL_SECONDS = 0.2  # how often a waiting request looks at its job
MAX_SOURCE_CHARS = 200  # an upload's source name, at most
PAGE_HEADERS = {"content-security-policy": "default-src 'self'; script-src 'unsafe-inline'; "
                "style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
                "cache-control": "no-cache"}


def routes(service: Service) -> list[Route]:
    """Every endpoint, bound to the service."""
    def bind(handler: Callable[[Service, Request], Awaitable[Response]]
             ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handler(service, request)
        return endpoint

    return [Route("/", bind(page)), Route("/health", bind(health)),
            Route("/v1/models", bind(models)),
            Route("/v1/chat/completions", bind(completions), methods=["POST"]),
            Route("/v1/retrieve", bind(retrieve), methods=["POST"]),
            Route("/v1/documents", bind(documents), methods=["GET", "POST"]),
            Route("/v1/documents/{doc_id}", bind(delete), methods=["DELETE"])]


async def page(service: Service, request: Request) -> Response:
    """The chat page (one static file shipped with the package)."""
    html = resources.files("edge_rag.serve").joinpath("static/index.html").read_text(encoding="utf-8")
    return HTMLResponse(html, headers=PAGE_HEADERS)


async def health(service: Service, request: Request) -> Response:
    """Up (no token needed); with the token also the models, the index's counts and the queues.
    Answered from memory, never from a lane."""
    return JSONResponse(service.health(bool(getattr(request.state, "authorized", False))))


async def models(service: Service, request: Request) -> Response:
    """``GET /v1/models``: the profile's SLM."""
    return JSONResponse({"object": "list", "data": [{"id": service.model, "object": "model", "created": 0,
                                                     "owned_by": "edge-rag"}]})


async def completions(service: Service, request: Request) -> Response:
    """``POST /v1/chat/completions``: an answer from the index, streamed or whole."""
    asked = chat.read_chat(await json_body(request), service.max_tokens)
    job = await service.generate(asked)
    if asked.stream:
        return StreamingResponse(_events(service, job), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
    try:
        answer, finish, tokens = await _until_done(job, request)
    finally:
        job.cancel()
    if finish in ("shutdown", "cancelled"):
        raise Stopped(finish)
    return JSONResponse(chat.completion(service.model, answer, finish, tokens))


async def _until_done(job: Job, request: Request) -> Any:
    """The job's result; a client that goes away while waiting cancels it."""
    result = asyncio.ensure_future(job.result())
    while not result.done():
        await asyncio.wait([result], timeout=POLL_SECONDS)
        if result.done():
            break
        if job.stop_reason() == "shutdown":
            result.cancel()
            raise Stopped("shutdown")
        if await request.is_disconnected():
            job.cancel()
    return result.result()


async def _events(service: Service, job: Job) -> AsyncIterator[str]:
    """Server-sent events: a role chunk, content chunks, a last chunk with the sources; a
    disconnect (the generator is closed) cancels the job."""
    ident, model = chat.completion_id(), service.model
    try:
        yield _sse(chat.chunk(ident, model, {"role": "assistant", "content": ""}))
        quiet = 0.0
        while True:
            try:
                kind, value = await asyncio.wait_for(job.events.get(), POLL_SECONDS)
            except asyncio.TimeoutError:
                if job.stop_reason() == "shutdown":
                    kind, value = "error", Stopped("shutdown")
                else:
                    quiet += POLL_SECONDS
                    if quiet >= KEEP_ALIVE_SECONDS:  # a comment: keeps proxies open, finds a client that left
                        quiet = 0.0
                        yield ": waiting\n\n"
                    continue
            if kind == "piece":
                yield _sse(chat.chunk(ident, model, {"content": value}))
                continue
            yield _last(ident, model, kind, value)
            break
        yield "data: [DONE]\n\n"
    finally:
        job.cancel()


def _last(ident: str, model: str, kind: str, value: Any) -> str:
    if kind == "error":
        kind_name, message = service_error(value)
        return _sse({"error": {"message": message, "type": kind_name}})
    answer, finish, _tokens = value
    if finish == "shutdown":
        return _sse({"error": {"message": str(Stopped(finish)), "type": "unavailable"}})
    return _sse(chat.chunk(ident, model, {}, chat.finish_reason(finish), **chat.extras(answer)))


def service_error(exc: BaseException) -> tuple[str, str]:
    """(type, message) of an error ended inside a stream."""
    _status, kind, message = describe_error(exc)
    return kind, message


def describe_error(exc: BaseException) -> tuple[int, str, str]:
    """(HTTP status, error type, message) of an exception; anything unexpected is a bare 500."""
    if isinstance(exc, QueueFull | Stopped) and getattr(exc, "reason", "") != "timeout":
        return 503, "unavailable", str(exc)
    if isinstance(exc, Stopped):
        return 504, "timeout", str(exc)
    if isinstance(exc, BodyTooLarge):
        return 413, "invalid_request_error", str(exc)
    if isinstance(exc, SlowBody):
        return 408, "timeout", str(exc)
    if isinstance(exc, NoSuchDocument):
        return 404, "not_found", str(exc)
    if isinstance(exc, MissingExtra):  # an upload of a format whose library is not installed
        return 415, "invalid_request_error", str(exc)
    if isinstance(exc, IndexLocked):
        return 503, "unavailable", "another process is writing to the index; try again"
    if isinstance(exc, CLIENT_ERRORS):
        return 400, "invalid_request_error", str(exc)
    return 500, "server_error", "internal error"


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def retrieve(service: Service, request: Request) -> Response:
    """``POST /v1/retrieve``: {question, method, top_k, history} → chunks, plan, timings;
    ``history``, the OpenAI messages before the question, makes a follow-up standalone."""
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with a 'question'")
    question = chat.check_question(body.get("question"))
    method, top_k = chat.read_method(body), chat.read_top_k(body)
    history = chat.read_history(body["history"]) if body.get("history") is not None else None
    found = await service.retrieve(question, method, top_k, history)
    chunks = [{**source, "score": round(c.score, 4)}
              for source, c in zip(chat.sources(found.chunks), found.chunks)]
    return JSONResponse({"question": question, "method": found.method, "chunks": chunks,
                         "plan": found.to_dict()["plan"],
                         "timings_ms": {k: round(v, 2) for k, v in found.timings_ms.items()}})


async def documents(service: Service, request: Request) -> Response:
    """``GET /v1/documents`` lists them; ``POST`` adds text (JSON) or one uploaded file (multipart)."""
    if request.method == "GET":
        docs = await service.read(lambda rag: rag.documents())
        return JSONResponse({"object": "list", "data": [
            {"doc_id": d.id, "source": chat.short_source(d.source), "chunks": d.n_chunks, "chars": d.n_chars}
            for d in docs]})
    report, skips = await service.add(await _uploaded(service, request))
    if report.failed:
        raise BadDocument(report.failed[0][1])
    return JSONResponse({"added": report.added, "chunks": report.chunks,
                         "duplicates": [doc_id for _source, doc_id in report.duplicates],
                         "warnings": report.warnings + skips.warnings()},
                        status_code=201 if report.added else 200)


async def _uploaded(service: Service, request: Request) -> Callable[[], Iterable[Item]]:
    """How to read the documents of a POST, ``{"text", "source"?, "metadata"?}`` or a multipart
    ``file``, from memory (nothing is written to disk); read on the writing lane."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        name, data = await service.read_upload(request)
        clean = upload_name(name)
        return lambda: read_upload(clean, data, service.limits)
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("text"), str):
        raise BadRequest("give JSON {\"text\": ..., \"source\": ...} or a multipart form with a 'file'")
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else None
    document = Document.from_text(body["text"], upload_name(str(body.get("source") or "text")), metadata)
    return lambda: [document]


def upload_name(name: str) -> str:
    """A client's file name made harmless: its last part, printable, at most 200 characters."""
    last = name.replace("\\", "/").rsplit("/", 1)[-1]
    clean = "".join(ch for ch in last if ch.isprintable()).strip().lstrip(".")
    return clean[:MAX_SOURCE_CHARS] or "upload"


async def delete(service: Service, request: Request) -> Response:
    """``DELETE /v1/documents/{doc_id}``."""
    doc_id = request.path_params["doc_id"]
    removed = await service.write(lambda rag, _stop: rag.delete(doc_id))
    return JSONResponse({"doc_id": doc_id, "deleted": True, "chunks_deleted": removed})


async def json_body(request: Request) -> Any:
    """The request's JSON, or a 400."""
    raw = await request.body()
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest("the body is not valid JSON") from None


def build_app(service: Service, rules: Rules) -> ASGIApp:
    """The ASGI app: routes, JSON errors, the guard (host, origin, token, content type, body),
    CORS only when configured."""
    app = Starlette(routes=routes(service), exception_handlers={
        EdgeRagError: _error, HTTPException: _http_error, Exception: _error})
    rules.limit, rules.body_seconds = service.body_limit, service.timeout
    guarded: ASGIApp = Guard(app, rules)
    if rules.origins:
        guarded = CORSMiddleware(guarded, allow_origins=rules.origins,
                                 allow_methods=["GET", "POST", "DELETE"],
                                 allow_headers=["authorization", "content-type"])
    return guarded


async def _error(request: Request, exc: Exception) -> Response:
    status, kind, message = describe_error(exc)
    headers = {"retry-after": str(getattr(exc, "retry_after", 5))} if status == 503 else None
    return JSONResponse({"error": {"message": clean_message(message), "type": kind}}, status, headers)


async def _http_error(request: Request, exc: Any) -> Response:
    kind = "not_found" if exc.status_code == 404 else "invalid_request_error"
    return JSONResponse({"error": {"message": clean_message(str(exc.detail)), "type": kind}},
                        exc.status_code, getattr(exc, "headers", None))
