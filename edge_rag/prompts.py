"""Every prompt edge-rag sends to a language model, in one place."""

from __future__ import annotations

PROMPT_VERSION = "1"

NO_ANSWER = "Insufficient information."

ANSWER_SYSTEM = (
    "You answer questions using only the numbered sources. Answer in one short sentence and "
    "cite the sources you used like [1]. If the sources do not contain the answer, reply "
    f"exactly: {NO_ANSWER}"
)

SOURCE_LINE = "[{number}] ({source})\n{text}"

ANSWER_USER = "Sources:\n{sources}\n\nQuestion: {question}"

NO_CONTEXT_USER = "Question: {question}\nAnswer in one short sentence."


def answer_user(question: str, sources: list[tuple[str, str]]) -> str:
    """The user turn: numbered sources, then the question."""
    lines = [SOURCE_LINE.format(number=i, source=s, text=t) for i, (s, t) in enumerate(sources, 1)]
    return ANSWER_USER.format(sources="\n\n".join(lines), question=question)
