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


EXTRACT_PROMPT_VERSION = "1"

EXTRACT_SYSTEM = (
    "You extract a knowledge graph from a text. Write one record per line, then <|DONE|>.\n"
    "entity<|>NAME<|>TYPE<|>SHORT DESCRIPTION\n"
    "relation<|>NAME<|>NAME<|>KEYWORDS<|>SHORT DESCRIPTION<|>STRENGTH 1-10\n"
    "TYPE is one of: person, organization, location, event, date, time, object, concept."
)

EXTRACT_EXAMPLE = (
    "Text:\nTime: 20260105_14:00\nAdamSmith: Hi Li Hua, the keys are ready. Come at 5:30 PM.\n"
    "LiHua: Great, see you at the apartment!\n\n"
    "entity<|>AdamSmith<|>person<|>landlord who has the keys\n"
    "entity<|>LiHua<|>person<|>new tenant\n"
    "entity<|>5:30 PM<|>time<|>time to collect the keys\n"
    "entity<|>apartment<|>location<|>where they meet\n"
    "relation<|>AdamSmith<|>LiHua<|>keys, moving in<|>Adam gives Li Hua the keys<|>9\n"
    "relation<|>LiHua<|>5:30 PM<|>meeting time<|>Li Hua comes at 5:30 PM<|>7\n"
    "<|DONE|>"
)


def extract_user(text: str) -> str:
    """The user turn of entity and relation extraction: one worked example, then the chunk."""
    return f"Example:\n{EXTRACT_EXAMPLE}\n\nText:\n{text}\n"
