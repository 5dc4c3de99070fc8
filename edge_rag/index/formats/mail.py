"""E-mail: ``.eml`` (one message) and ``.mbox`` (many), with the standard library's ``email`` and
``mailbox``: one document per message.

A message's text is its Subject, then ``From:``, ``To:`` and ``Date:`` lines, then the body: the
plain-text part when there is one, else the HTML part converted to visible text (``html.py``).
Subject is the title (else the body's short first line, else the file stem; a message with
attachments only is its headers); From, To, Date and
Message-ID are metadata, and so is the number of attachments, which are not read (one warning
with the count per insert). An mbox is read one message at a time (only the offsets of its
messages are held), so memory stays flat however many it holds; its messages are named
``file.mbox#N`` (N from 0, in file order). A message that cannot be parsed or has no text is
one BadDocument and the others still go in. The document size limit applies to each message;
an mbox larger than ``max_inflated_mb`` or of more than ``max_members`` messages is refused whole.
Design: docs/design/formats.md
"""

from __future__ import annotations

import email
import email.errors
import email.policy
import mailbox
from collections.abc import Iterator
from email.message import EmailMessage, Message
from pathlib import Path

from ...errors import BadDocument
from ..document_titles import best_title, short_line
from ..limits import Budget, Limits
from ..reader import READ_ERRORS, Document, Item, Skipped, check_size
from . import Blob
from .html import html_to_text

# What a malformed message can raise while its headers and parts are decoded.
BROKEN = (ValueError, LookupError, TypeError, AttributeError, UnicodeError, email.errors.MessageError)
HEADERS = ("from", "to", "cc", "date", "message-id")


def read(blob: Blob, limits: Limits) -> Iterator[Item]:
    """The messages of an ``.eml`` or ``.mbox`` file, one document each (an mbox only from disk:
    the ``mailbox`` module reads files)."""
    if blob.suffix == ".eml":
        check_size(blob.name, blob.size, limits.document)
        with blob.open() as handle:
            raw = handle.read()
        yield from _message(raw, blob.name)
    elif blob.path is None:
        yield BadDocument(f"{blob.name}: upload an .mbox with `edge-rag index` or `sync` "
                          "(it is read from a file on disk)")
    else:
        budget = Budget(blob.name, limits)
        budget.declare(0, blob.size)
        yield from _mbox(blob.path, budget)


def _mbox(path: Path, budget: Budget) -> Iterator[Item]:
    box = mailbox.mbox(path, create=False)
    try:
        keys = list(box.iterkeys())  # the offsets of the messages, found by one scan
        budget.declare(len(keys), 0)
        for number, key in enumerate(keys):
            yield from _mbox_message(box, key, f"{path}#{number}", budget)
        if not keys:
            yield BadDocument(f"{path}: no messages (an mbox starts each message with a 'From ' line)")
    finally:
        box.close()


def _mbox_message(box: mailbox.mbox, key: str, source: str, budget: Budget) -> Iterator[Item]:
    try:
        raw = box.get_bytes(key)
        budget.reach(source, len(raw))
        check_size(source, len(raw), budget.limits.document)
        yield from _message(raw, source)
    except BadDocument as exc:
        yield exc
    except READ_ERRORS as exc:
        yield BadDocument(f"{source}: cannot read message: {exc}")


def _message(raw: bytes, source: str) -> Iterator[Item]:
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        body = _body(message)
        attachments = [part.get_filename() or "unnamed" for part in message.iter_attachments()]
        headers = {h: " ".join(str(message[h]).split()) for h in HEADERS if message[h] is not None}
        subject = " ".join(str(message["subject"] or "").split())
    except BROKEN as exc:
        yield BadDocument(f"{source}: broken message ({type(exc).__name__}: {exc}); skipped")
        return
    defects = ", ".join(sorted({type(d).__name__ for d in message.defects}))
    if not body.strip() and (defects or not subject):
        why = f"broken message ({defects})" if defects else "message has neither text nor subject"
        yield BadDocument(f"{source}: {why}; skipped")
        return
    lines = [subject] + [f"{h.title()}: {headers[h]}" for h in ("from", "to", "date") if h in headers]
    title = best_title(subject, short_line(body), source=source)
    metadata = {"title": title, **headers, "attachments": len(attachments)}
    yield Document.from_text("\n".join(lines) + "\n\n" + body.strip(), source, metadata)
    for name in attachments:
        yield Skipped(f"{source}/{name}", "e-mail attachments are not read", group="attachment")


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    content = _content(part)
    return html_to_text(content)[1] if part.get_content_subtype() == "html" else content


def _content(part: Message) -> str:
    try:
        content = part.get_content()  # type: ignore[attr-defined]
    except (LookupError, UnicodeError):  # an unknown or wrong charset: take the bytes as UTF-8
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    return content if isinstance(content, str) else ""
