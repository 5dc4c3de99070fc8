"""The random walk's matrix, BM25 postings and title table: derived once, stored, mapped.

``WalkGraph.from_store`` (``ppr.py``) reads the graph and the chunk texts as a stream and gives
the ``WalkGraph`` that ``ppr`` walks, with its title and BM25 indexes. The writer calls
``store_walk`` at the end of every insert, delete and sync: the arrays go to ``walk/`` beside the
index (``store/mapped_files.py``), with each chunk's term counts and title links, so the next write
reads only the new chunks' texts while the titles stay the same (``ChunkReading``). ``open_walk``
maps them read-only when they are current: the first ``ppr`` query of a process derives nothing,
and resident memory holds only the pages its walk touches.

An encrypted index stores nothing (the words would be in the clear) and derives in memory, as
does the "-Weights" ablation (``use_weights=False``), which the stored arrays do not describe.

Design: docs/design/ppr.md
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rapidfuzz import fuzz, process

from ..lexicon import FUZZY_MIN, NameMatcher, entity_key, question_grams
from ..store import mapped_files
from ..store.mapped_files import StringList, StringTable
from .lexical import ChunkTerms
from .ppr import ChunkReading, WalkGraph
from .title_links import TitleIndex

if TYPE_CHECKING:
    from ..store import IndexStore

GENERATION_KINDS = ("chunk", "entity", "relation")
GRAPH_ARRAYS = ("entity_ids", "chunk_ids", "indptr", "indices", "data", "entity_chunks")
TERM_ARRAYS = ("lex_indptr", "lex_positions", "lex_weights", "lex_idf")
NAME_BLOCK = 16384  # stored names compared with a question's n-grams per rapidfuzz call (ppr.md)


def generations(store: IndexStore) -> list[int]:
    """The index generations the walk depends on (chunks, entities, relations)."""
    return [int(store.vector_state(kind)["generation"]) for kind in GENERATION_KINDS]


def store_walk(directory: Path, store: IndexStore) -> bool:
    """Derive the walk (with weights) and write it beside the index, unless it is current or
    the index is encrypted. True when something was written."""
    if store.encrypted:
        mapped_files.remove(directory)
        return False
    stamp = mapped_files.current_stamp(directory)
    now = generations(store)
    if stamp is not None and stamp.get("generations") == now:
        return False
    walk = WalkGraph.from_store(store, earlier=earlier_reading(directory, stamp))
    arrays = {**walk_arrays(walk), **name_arrays(store)}
    titles = walk.read.titles if walk.read is not None else ""
    mapped_files.write(directory, {"generations": now, "nodes": walk.size, "titles": titles}, arrays)
    return True


def earlier_reading(directory: Path, stamp: dict[str, Any] | None) -> ChunkReading | None:
    """What the stored walk read from the chunk texts (counts and title links), mapped, for the
    next walk to reuse (reading them again dominated a small insert into a large index,
    docs/design/ppr.md). None when the files do not hold it."""
    if stamp is None or "titles" not in stamp:
        return None
    arrays = mapped_files.load(directory, ["chunk_ids", *TERM_ARRAYS, "lex_tf", "title_links",
                                         *mapped_files.table_names(["vocab"])])
    if arrays is None or not _reading_holds(arrays):
        return None
    words = _stored_terms(arrays, arrays["lex_tf"])
    return ChunkReading(arrays["chunk_ids"], words, arrays["title_links"], str(stamp["titles"]))


def _reading_holds(arrays: dict[str, np.ndarray]) -> bool:
    # Stored arrays that do not fit together (a damaged file) are not reused: the walk is derived.
    postings, links = len(arrays["lex_positions"]), arrays["title_links"]
    return (len(arrays["lex_tf"]) == postings and len(arrays["lex_indptr"]) == len(arrays["vocab_values"]) + 1
            and int(arrays["lex_indptr"][-1]) == postings and links.ndim == 2 and links.shape[1] == 2
            and (postings == 0 or int(arrays["lex_positions"].max()) < len(arrays["chunk_ids"])))


def walk_arrays(walk: WalkGraph) -> dict[str, np.ndarray]:
    """The arrays ``open_walk`` maps back into the same walk graph."""
    out: dict[str, np.ndarray] = {
        "entity_ids": walk.entity_ids, "chunk_ids": walk.chunk_ids, "indptr": walk.indptr,
        "indices": walk.indices.astype(np.int32), "data": walk.data, "entity_chunks": walk.entity_chunks}
    lexical = walk.lexical
    if lexical is not None:
        out.update(lex_indptr=lexical.indptr, lex_positions=lexical.positions,
                   lex_weights=lexical.weights, lex_idf=lexical.idf)
        out.update(_prefixed("vocab", StringTable.arrays(lexical.vocabulary)))
        if lexical.tf is not None and walk.read is not None:
            out.update(lex_tf=lexical.tf, title_links=walk.read.links)
    titles = walk.titles
    if titles is not None:
        keys = {" ".join(k): v for k, v in titles.chunk_of.items()}
        out.update(_prefixed("titles", StringTable.arrays(keys)))
        out.update(_prefixed("heads", StringTable.arrays({w: sum(1 << n for n in lengths)
                                                          for w, lengths in titles.lengths.items()})))
    return out


def name_arrays(store: IndexStore) -> dict[str, np.ndarray]:
    """The graph's spellings (sorted, as ``NameMatcher`` takes them) and their compacted keys."""
    names = store.graph.spellings()
    keys = [entity_key(n).replace(" ", "") for n in names]
    return {**_prefixed("names", StringList.arrays(names)), **_prefixed("keys", StringList.arrays(keys))}


def open_names(directory: Path, store: IndexStore) -> NameMatcher | None:
    """The stored name matcher when the walk's files are current; else None."""
    stamp = mapped_files.current_stamp(directory)
    if store.encrypted or stamp is None or stamp.get("generations") != generations(store):
        return None
    arrays = mapped_files.load(directory, ["names_blob", "names_offsets", "keys_blob", "keys_offsets"])
    if arrays is None:
        return None
    return StoredNames(StringList(arrays["names_blob"], arrays["names_offsets"]),
                       StringList(arrays["keys_blob"], arrays["keys_offsets"]))


class StoredNames(NameMatcher):
    """``NameMatcher`` over the stored names, compared ``NAME_BLOCK`` keys at a time: the same
    best name per n-gram (first on ties), without every name in memory."""

    def __init__(self, names: StringList, keys: StringList) -> None:
        self.names = names  # type: ignore[assignment]  # a sequence of str read from the file
        self._stored_keys = keys

    def find(self, question: str) -> list[str]:
        """Entity names that occur in the question, spelling variants allowed."""
        grams = question_grams(question)
        if not grams or not len(self.names):
            return []
        queries = [entity_key(g).replace(" ", "") for g in grams]
        best, at = np.full(len(grams), -1.0, dtype=np.float32), np.zeros(len(grams), dtype=np.int64)
        for start in range(0, len(self._stored_keys), NAME_BLOCK):
            keys = self._stored_keys.block(start, min(start + NAME_BLOCK, len(self._stored_keys)))
            scores = process.cdist(queries, keys, scorer=fuzz.ratio, score_cutoff=FUZZY_MIN,
                                   dtype=np.float32, workers=1)
            top = scores.argmax(axis=1)
            value = scores[np.arange(len(grams)), top]
            better = value > best
            best, at = np.where(better, value, best), np.where(better, start + top, at)
        return [self.names[int(j)] for i, j in enumerate(at) if best[i] >= FUZZY_MIN]


def open_walk(directory: Path, store: IndexStore, use_weights: bool = True) -> WalkGraph | None:
    """The stored walk graph, memory-mapped, when it is the index's current one; else None."""
    stamp = mapped_files.current_stamp(directory)
    if not use_weights or store.encrypted or stamp is None or stamp.get("generations") != generations(store):
        return None
    names = [*GRAPH_ARRAYS, *TERM_ARRAYS, *mapped_files.table_names(["vocab"])]
    arrays = mapped_files.load(directory, names)
    if arrays is None:
        return None
    titles = mapped_files.load(directory, mapped_files.table_names(["titles", "heads"]))
    counts = np.diff(arrays["indptr"])
    return WalkGraph(arrays["entity_ids"], arrays["chunk_ids"], arrays["indptr"], arrays["indices"],
                     arrays["data"], np.maximum(counts, 1).astype(np.float64), counts == 0,
                     arrays["entity_chunks"], _titles(titles), _stored_terms(arrays))


def _stored_terms(arrays: dict[str, np.ndarray], tf: np.ndarray | None = None) -> ChunkTerms:
    """The BM25 index held in the stored arrays (``TERM_ARRAYS`` and the vocabulary table)."""
    return ChunkTerms(TableMapping(mapped_files.table(arrays, "vocab")), arrays["lex_indptr"],
                      arrays["lex_positions"], arrays["lex_weights"], arrays["lex_idf"],
                      len(arrays["chunk_ids"]), tf)


class TableMapping(Mapping[str, int]):
    """A stored string table read as a mapping (lookups only; iterating reads every key)."""

    def __init__(self, table: StringTable) -> None:
        self.table = table

    def __getitem__(self, key: str) -> int:
        found = self.table.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.table.get(key) is not None

    def __len__(self) -> int:
        return len(self.table)

    def __iter__(self) -> Iterator[str]:
        return (self.table[n].decode("utf-8") for n in range(len(self.table)))

    def items(self) -> Any:
        """(string, value) pairs in stored order, read in one pass."""
        strings = StringList(self.table.blob, self.table.offsets)
        return zip(strings.block(0, len(strings)), self.table.values.tolist())


class TitleKeys(Mapping[tuple[str, ...], int]):
    """Title words → first chunk, over the stored table of space-joined titles."""

    def __init__(self, table: StringTable) -> None:
        self.table = table

    def __getitem__(self, key: tuple[str, ...]) -> int:
        found = self.table.get(" ".join(key))
        if found is None:
            raise KeyError(key)
        return found

    def __len__(self) -> int:
        return len(self.table)

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return (tuple(self.table[n].decode("utf-8").split(" ")) for n in range(len(self.table)))


class TitleLengths(Mapping[str, tuple[int, ...]]):
    """First title word → the word counts of the titles it starts, longest first."""

    def __init__(self, table: StringTable) -> None:
        self.table = table

    def __getitem__(self, word: str) -> tuple[int, ...]:
        mask = self.table.get(word)
        if mask is None:
            raise KeyError(word)
        return tuple(n for n in range(mask.bit_length() - 1, -1, -1) if mask >> n & 1)

    def __len__(self) -> int:
        return len(self.table)

    def __iter__(self) -> Iterator[str]:
        return (self.table[n].decode("utf-8") for n in range(len(self.table)))


def _titles(arrays: dict[str, np.ndarray] | None) -> TitleIndex | None:
    if arrays is None:
        return None
    return TitleIndex(TitleKeys(mapped_files.table(arrays, "titles")),
                      TitleLengths(mapped_files.table(arrays, "heads")))


def _prefixed(prefix: str, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    return {f"{prefix}_{k}": v for k, v in arrays.items()}
