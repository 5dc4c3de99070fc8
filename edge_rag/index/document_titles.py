"""A title for every document, so that ``ppr``'s title links and seeds work on plain folders.

Order: a record's own ``title`` (kept by the record reader), else the format's own (PDF metadata,
HTML ``<title>``, an e-mail's Subject, a Markdown ``# heading``), else a short first line, else the
file name's stem. The title is stored as the document's ``title`` metadata, where
``retrieve/title_links.py`` reads it; the text itself is not changed (a plain file whose first line is
its title reads exactly like the JSONL record ``{"title": T, "text": X}``, whose text is ``T\nX``).

Design: docs/design/index.md
"""

from __future__ import annotations

import re
from pathlib import PurePath

# A first line this short is taken as the title (index.md).
MAX_TITLE_CHARS = 120  # characters at most
MAX_TITLE_WORDS = 16  # words at most
HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)
WORD = re.compile(r"\w+")


def short_line(text: str) -> str | None:
    """The first non-blank line of ``text`` when it is short enough to be a title: at most
    MAX_TITLE_CHARS characters and MAX_TITLE_WORDS words, not ending like a lead-in (``,;:``)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if not line or len(line) > MAX_TITLE_CHARS or line[-1] in ",;:":
        return None
    words = WORD.findall(line)
    return line if words and len(words) <= MAX_TITLE_WORDS else None


def markdown_heading(text: str) -> str | None:
    """The first level-one ATX heading (``# Title``) of Markdown text."""
    match = HEADING.search(text)
    return short_line(match.group(1)) if match else None


def text_title(head: str, source: str) -> str:
    """The title of a text file from its first characters: a Markdown heading (``.md``), a short
    first line, or the file stem."""
    found = markdown_heading(head) if source.lower().endswith(".md") else None
    return found or short_line(head) or stem(source)


def stem(source: str) -> str:
    """The file name without its extension (``notes/2024 plan.txt`` -> ``2024 plan``)."""
    return PurePath(source.split("#", 1)[0]).stem or source


def best_title(*candidates: str | None, source: str = "") -> str:
    """The first usable candidate (whitespace folded), else the stem of ``source``."""
    for candidate in candidates:
        if candidate and candidate.strip():
            return " ".join(candidate.split())[:MAX_TITLE_CHARS * 2]
    return stem(source)
