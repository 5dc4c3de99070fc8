"""HTML: the visible text of a page (standard library ``html.parser``), ``<title>`` as title.

Left out: ``head`` (but its ``title``), ``script``, ``style``, ``noscript``, ``template``, ``svg``
and page furniture (``nav``, ``footer``, ``aside``, ``form``, buttons). Block elements end lines.
The file is parsed in blocks as it is read, so a page of tens of MB (mostly markup and inline
scripts, as saved pages are) streams in bounded memory; the document size limit
(``max_document_mb``) applies to the file. Bytes are UTF-8 (invalid ones
replaced). Also used for the HTML parts of e-mails (``html_to_text``).

Design: docs/design/formats.md
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from typing import IO

from ..document_titles import best_title, short_line
from ..limits import Limits
from ..reader import BLOCK, Document, Item, capped_opener, guarded
from . import Blob

HIDDEN = {"head", "script", "style", "noscript", "template", "svg", "nav", "footer", "aside", "form",
          "iframe", "object", "canvas", "select", "button"}
BLOCKS = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "main", "h1", "h2",
          "h3", "h4", "h5", "h6", "blockquote", "pre", "dd", "dt", "dl", "hr", "header", "figure",
          "figcaption", "td", "th", "title", "body", "address", "details", "summary"}
VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
TITLE_SCAN = 1 << 20  # bytes read at most to find the <title> (formats.md)
SPACES = re.compile(r"[ \t\r\f\v]+")
BLANK_LINES = re.compile(r"\n\s*\n+")


class VisibleText(HTMLParser):
    """Collects the visible text of the HTML fed to it; ``take()`` returns what is new."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.in_title = False
        self.title = ""
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self.in_title = True
        elif tag in HIDDEN and tag not in VOID:
            self.hidden += 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag in HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        elif not self.hidden:
            self.parts.append(SPACES.sub(" ", data))

    def take(self) -> str:
        """The text collected since the last call, blank lines folded."""
        text = "".join(self.parts)
        self.parts.clear()
        return BLANK_LINES.sub("\n\n", text)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, visible text) of an HTML string."""
    parser = VisibleText()
    parser.feed(markup)
    parser.close()
    return " ".join(parser.title.split()), parser.take().strip()


def read(blob: Blob, limits: Limits) -> Iterator[Item]:
    """One document: the page's title on the first line, then its visible text."""
    opener = capped_opener(blob.name, blob.open, limits.document)
    own, first = _title(opener)
    title = best_title(own, short_line(first), source=blob.name)
    yield Document(blob.name, lambda: guarded(blob.name, _blocks(opener, own)), {"title": title})


def _title(opener: Callable[[], IO[bytes]]) -> tuple[str, str]:
    """The ``<title>`` and the first visible text, from the first MB at most."""
    parser, decoder, read = VisibleText(), codecs.getincrementaldecoder("utf-8-sig")(errors="replace"), 0
    text = ""
    with opener() as handle:
        while read < TITLE_SCAN and (block := handle.read(BLOCK)):
            read += len(block)
            parser.feed(decoder.decode(block))
            text += parser.take()
            if parser.title and not parser.in_title and text.strip():
                break
    return " ".join(parser.title.split()), text


def _blocks(opener: Callable[[], IO[bytes]], title: str) -> Iterator[str]:
    parser, decoder = VisibleText(), codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    if title:
        yield title + "\n"
    with opener() as handle:
        while block := handle.read(BLOCK):
            parser.feed(decoder.decode(block))
            yield parser.take()
    parser.feed(decoder.decode(b"", final=True))
    parser.close()
    yield parser.take()
