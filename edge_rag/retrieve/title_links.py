"""Document titles for the random walk (``ppr``): which passage a name in a text is *about*.

Beyond the paper. A corpus of titled passages (an encyclopaedia) names a passage by its title: a
question names the first passage's title, and that passage names the bridge entity whose own
passage is titled by it. The rule extractor splits or misses such names (one-word titles at the
start of a line, titles with commas), so the walk gets two more ways in, read from the
documents' ``title`` metadata:

- title links: a chunk whose text contains another document's title (as whole words, case and
  punctuation ignored, longest match first) is joined to that document's first chunk;
- title seeds: a title contained in the question seeds its document's first chunk.

Documents without a ``title`` in their metadata (text inserted as a string, records without one)
add nothing; files read from disk get one (``index/document_titles.py``). Design: docs/design/ppr.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..lexicon import QUESTION_WORDS, STOPWORDS

WORD = re.compile(r"\w+")
MAX_TITLE_WORDS = 12  # words of a title that are matched, a longer title cut (ppr.md)
FILLER = STOPWORDS | QUESTION_WORDS


def title_key(text: str) -> tuple[str, ...]:
    """A title's or text's words, case-folded, punctuation dropped."""
    return tuple(WORD.findall(text.casefold()))


@dataclass(frozen=True)
class TitleIndex:
    """Titled documents' first chunks by their title's words, and a longest-match scanner."""

    chunk_of: Mapping[tuple[str, ...], int]
    lengths: Mapping[str, tuple[int, ...]]

    @classmethod
    def build(cls, titled: Iterable[tuple[str, int]]) -> TitleIndex:
        """From (title, first chunk id) pairs; titles made only of filler words are skipped, and
        a title two documents share names neither."""
        chunk_of: dict[tuple[str, ...], int] = {}
        shared: set[tuple[str, ...]] = set()
        for title, chunk in titled:
            key = title_key(title)[:MAX_TITLE_WORDS]
            if not key or all(w in FILLER for w in key):
                continue
            if key in chunk_of and chunk_of[key] != chunk:
                shared.add(key)
            chunk_of[key] = chunk
        for key in shared:
            del chunk_of[key]
        lengths: dict[str, set[int]] = {}
        for key in chunk_of:
            lengths.setdefault(key[0], set()).add(len(key))
        return cls(chunk_of, {w: tuple(sorted(n, reverse=True)) for w, n in lengths.items()})

    def find(self, text: str, capitalised: bool = False) -> list[int]:
        """First chunks of the documents whose titles the text contains (longest match at each
        word, matches do not overlap), in order of appearance, each once. ``capitalised``: only
        matches whose first word is not lower case in the text (a passage's "home movie" does
        not name the page "@Home"; questions are matched in any case, as they are often typed)."""
        raw = WORD.findall(text)
        words = tuple(w.casefold() for w in raw)
        found: dict[int, None] = {}
        free = 0  # where the next match may start: matches do not overlap
        for i, word in enumerate(words):
            if i < free or (capitalised and raw[i][0].islower()):
                continue
            for n in self.lengths.get(word, ()):
                chunk = self.chunk_of.get(words[i : i + n])
                if chunk is not None:
                    found.setdefault(chunk)
                    free = i + n
                    break
        return list(found)

    def __len__(self) -> int:
        return len(self.chunk_of)
