"""The OpenAI chat-completions shapes: a request read into a question, an answer written as a
completion or as stream chunks, with edge-rag's sources, method and timings as extra fields.

Design: docs/design/serve.md
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..answer import Answer
from ..api import EdgeRAG
from ..config import DEFAULT_METHOD
from ..errors import EdgeRagError
from ..retrieve import RETRIEVERS, Retrieval, RetrievedChunk
from .queue import Job, Stopped

MAX_QUESTION_CHARS = 2000  # the longest question a request may ask (serve.md)
METHODS = (*sorted(RETRIEVERS), "auto")
HISTORY_TURNS = 8  # the earlier user/assistant messages a question is read after (dialogue.md)


class BadRequest(EdgeRagError):
    """A request the server cannot read (answered 400)."""


@dataclass
class ChatRequest:
    """What a chat-completions request asks for: the last user message, read after the messages
    before it (``history``, OpenAI's shape: a follow-up is made standalone, docs/design/dialogue.md)."""

    question: str
    history: list[dict[str, str]]
    method: str
    top_k: int | None
    max_tokens: int
    stream: bool


def read_chat(body: Any, max_tokens: int) -> ChatRequest:
    """Validate a chat-completions body; ``max_tokens`` is capped by the profile's answer length."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        raise BadRequest("'messages' must be a non-empty list of {role, content} objects")
    said = read_history(body["messages"])
    last = max((i for i, m in enumerate(said) if m["role"] == "user"), default=None)
    if last is None or not said[last]["content"].strip():
        raise BadRequest("no user message with text: the last user message is the question")
    question = check_question(said[last]["content"])
    asked = body.get("max_completion_tokens", body.get("max_tokens"))
    if asked is not None and (not isinstance(asked, int) or isinstance(asked, bool) or asked < 1):
        raise BadRequest("'max_tokens' must be a positive integer")
    return ChatRequest(question, said[:last][-HISTORY_TURNS:], read_method(body), read_top_k(body),
                       min(asked or max_tokens, max_tokens), body.get("stream") is True)


def read_history(messages: Any) -> list[dict[str, str]]:
    """The user and assistant messages with text, as {role, content} (others are left out); each
    earlier one cut to ``MAX_QUESTION_CHARS``."""
    if not isinstance(messages, list):
        raise BadRequest("'messages' must be a list of {role, content} objects")
    return [{"role": m["role"], "content": _content(m)[:MAX_QUESTION_CHARS] if i < len(messages) - 1
             else _content(m)} for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") in ("user", "assistant")]


def check_question(text: Any) -> str:
    """A question as a non-empty string within the length limit."""
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("the question must be a non-empty string")
    if len(text) > MAX_QUESTION_CHARS:
        raise BadRequest(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    return text.strip()


def read_method(body: dict) -> str:
    """The ``method`` extra field (default auto, as in the CLI and the Python API)."""
    method = body.get("method", DEFAULT_METHOD)
    if method not in METHODS:
        raise BadRequest(f"'method' must be one of {', '.join(METHODS)}")
    return str(method)


def read_top_k(body: dict) -> int | None:
    """The ``top_k`` extra field (default: the profile's)."""
    top_k = body.get("top_k")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 50):
        raise BadRequest("'top_k' must be an integer from 1 to 50")
    return top_k


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def generate(job: Job, rag: EdgeRAG, request: ChatRequest, retrieval: Retrieval,
             retrieve: Callable[[str], Retrieval]) -> tuple[Answer, str, int]:
    """Stream the answer on the generation lane, sending each piece as it comes; stops between
    two pieces when the job must stop. ``retrieval`` is the question's; ``retrieve`` serves the
    questions the ``hops`` and ``compare`` rules ask first, as in ``EdgeRAG.ask``. Returns
    (answer, finish reason, tokens)."""
    stop_if_due(job)
    finish = "stop"
    stream = rag.ask_with(request.question, stopping(job, retrieve), stream=True, retrieval=retrieval,
                          max_new_tokens=request.max_tokens)
    pieces = iter(stream)
    try:
        for piece in pieces:
            job.emit("piece", piece)
            finish = job.stop_reason() or finish
            if finish != "stop":
                job.stopped = finish
                break
    finally:
        pieces.close()  # type: ignore[attr-defined]
    return stream.answer, finish, rag.count_tokens(stream.answer.text)


def stopping(job: Job, retrieve: Callable[[str], Retrieval]) -> Callable[[str], Retrieval]:
    """``retrieve`` that first stops the job when it must stop: a rule's next question (a link, an
    option's date) is not asked for a client that left or a request past its time."""
    def checked(question: str) -> Retrieval:
        stop_if_due(job)
        return retrieve(question)

    return checked


def stop_if_due(job: Job) -> None:
    """Raise ``Stopped`` (and note why on the job) when it must stop now."""
    if job.stop_reason():
        job.stopped = job.stop_reason()
        raise Stopped(job.stopped)


def sources(chunks: list[RetrievedChunk]) -> list[dict[str, Any]]:
    """Numbered sources as the API shows them (a file's name, never its path)."""
    return [{"n": n, "doc_id": c.doc_id, "source": short_source(c.source), "chunk_id": c.chunk_id,
             "text": c.text} for n, c in enumerate(chunks, 1)]


def short_source(source: str) -> str:
    """The last part of a document's source path."""
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or source


def extras(answer: Answer) -> dict[str, Any]:
    """edge-rag's fields beside OpenAI's: sources, the quoted line of each cited one
    (``citations``: n, file, line, text), the finished answer, method, timings, the planner's
    choice, the questions a rule asked first (``hops``: each one's question and answer)."""
    data = answer.to_dict()
    cited = [{**c, "source": short_source(c["source"])} for c in answer.citations]
    return {"sources": sources(answer.sources), "citations": cited, "answer": answer.text,
            "method": answer.method,
            "timings_ms": data["timings_ms"], "plan": data["plan"], "hops": data["hops"]}


def completion_id() -> str:
    """A fresh ``chatcmpl-…`` id."""
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def completion(model: str, answer: Answer, finish: str, tokens: int) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    prompt = int(answer.timings.get("prompt_tokens", 0))
    return {"id": completion_id(), "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                         "finish_reason": finish_reason(finish)}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens},
            **extras(answer)}


def chunk(ident: str, model: str, delta: dict[str, Any], finish: str | None = None,
          **extra: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` of a stream."""
    return {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def finish_reason(finish: str) -> str:
    """OpenAI's name: an answer cut by its time limit ends as ``length``."""
    return "length" if finish == "timeout" else "stop"
