"""Building and maintaining the heterogeneous weighted graph (§3.1) from extracted mentions.

Mentions are the truth; everything else is derived and rebuilt only where a change reaches:
(1) every changed entity name (key) gets its row and name vector refreshed, or is dropped (a busy
name from its running summary, ``summary.py``); (2) from the changed keys, candidate edges
(eq. 1) are followed to the whole weakly connected component (eq. 2), with the keys that shared a
node or a similar edge with them before the change; (3) each component is aggregated (eqs. 3–5,
``aggregate.py``); a node that comes out as stored keeps its row, the others are made anew with
their chunk links, and structural relations (weight ω_r) are derived again where their mentions
or an endpoint changed. The content is a function of the mentions alone: it does not depend on
insertion order (row ids do), and deleting a document restores the graph the others give.

Design: docs/design/index.md, docs/design/aggregation.md
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..lexicon import entity_key
from ..models.embedder import Embedder
from ..models.pages import trim_heap
from ..progress import Progress
from ..store import IndexStore, VectorIndex
from ..store.codec import as_stored
from ..store.graph_tables import (
    RELATION_DESCRIPTION_CHARS,
    KeyRow,
    NewRelation,
    PairMentions,
    RelationMentionRow,
    embedded,
    join_counts,
)
from ..store.schema import TEXT_SHA_DIGITS
from ..store.vectors import CANDIDATES_FILE
from .aggregate import GENERIC_TYPES, AggregationParams, aggregate, components, representative
from .candidates import Candidates
from .extract import Extractor
from .mentions import Extraction, chunk_hash, embedding_text
from .summary import MergedKey, RunningSummary, most_frequent, summarise

# The build's constants; docs/design/index.md and aggregation.md say how each was set.
KEYWORD_CHARS = 120  # a relation's keywords in its embedded text
RELATION_TEXT_CHARS = 240  # a relation's embedded text
CANDIDATES_PER_KEY = 32  # the cap on a name's candidate set (eq. 1)
STRUCTURAL_SLICE = 256  # region nodes whose structural relations are derived at once
CACHE_EVERY = 16  # model extractions committed to the cache per transaction
# ω_r = 1 − Π(1 − p_i) over a relation's mentions, with p_i = PER_MENTION · strength_i / 10:
# in (0, 1), rising with both stated strength and repeated support across chunks.
PER_MENTION = 0.3


@dataclass(frozen=True)
class _Change:
    """What a refresh answers to: the keys whose mentions changed, the key pairs whose relation
    mentions changed and the chunks whose mentions were added (None when not known: a delete)."""

    keys: set[str]
    pairs: set[tuple[str, str]] | None
    chunks: Sequence[int] | None


@dataclass
class GraphReport:
    """What a graph update did."""

    chunks: int = 0
    extracted: int = 0
    cached: int = 0
    failures: int = 0
    seconds: float = 0.0


class GraphBuilder:
    """Extracts pending chunks and keeps nodes, relations and similar edges in step with mentions.

    The caller holds the index's write lock; ``refresh`` runs inside the caller's transaction.
    """

    def __init__(self, store: IndexStore, entity_vectors: VectorIndex, relation_vectors: VectorIndex,
                 embedder: Embedder, extractor: Extractor | None, params: AggregationParams,
                 batch_chunks: int = 256) -> None:
        self.store = store
        self.tables = store.graph
        self.entity_vectors = entity_vectors
        self.relation_vectors = relation_vectors
        self.embedder = embedder
        self.extractor = extractor
        self.params = params
        self.batch_chunks = batch_chunks
        self.candidates = Candidates(entity_vectors, params.tau, CANDIDATES_PER_KEY)
        self._failed = False  # a refresh raised: the kept candidate sets may not match SQLite
        self._restore_candidates()

    # -- extraction ---------------------------------------------------------------------------

    def update(self, progress: bool = False) -> GraphReport:
        """Extract every chunk not yet in the graph, a batch per transaction."""
        report, start = GraphReport(), time.perf_counter()
        if self.extractor is None:
            return report
        bar = Progress("graph", "chunk", self.tables.pending_count(), enabled=progress)
        while batch := self.tables.pending_chunks(self.batch_chunks):
            extractions = self._extract([text for _, text in batch], report)
            with self.store.write():
                pairs = set[tuple[str, str]]()
                for (chunk_id, _), extraction in zip(batch, extractions):
                    pairs |= self._add_mentions(chunk_id, extraction)
                chunk_ids = [c for c, _ in batch]
                self.refresh(self.tables.keys_of_chunks(chunk_ids), pairs, chunk_ids)
            self.save_vectors()
            # A batch's region (thousands of names and their relations) is built from
            # many small objects; handing the freed heap back keeps the build's RSS from
            # ratcheting up batch by batch.
            trim_heap()
            report.chunks += len(batch)
            bar.update(len(batch))
        bar.close()
        if report.chunks:
            self._save_candidates()
        self.embed_pending(progress)
        report.seconds = time.perf_counter() - start
        return report

    def _extract(self, texts: list[str], report: GraphReport) -> list[Extraction]:
        extractor = self.extractor
        assert extractor is not None
        if not extractor.cacheable:
            report.extracted += len(texts)
            return extractor.extract(texts)
        shas = [chunk_hash(t) for t in texts]
        cached = self.tables.cached_extractions(shas, extractor.id)
        todo = list(dict.fromkeys(s for s in shas if s not in cached))
        for start in range(0, len(todo), CACHE_EVERY):
            part = todo[start : start + CACHE_EVERY]
            fresh = extractor.extract([texts[shas.index(s)] for s in part])
            outputs = {s: e.to_json() for s, e in zip(part, fresh)}
            with self.store.write():  # committed as it comes, so a killed build resumes here
                self.tables.cache_extractions((s, extractor.id, o) for s, o in outputs.items())
            cached.update(outputs)
        report.extracted += len(todo)
        report.cached += len(texts) - len(todo)
        results = [Extraction.from_json(cached[s]) for s in shas]
        report.failures += sum(e.failures for e in results)
        return results

    def _add_mentions(self, chunk_id: int, extraction: Extraction) -> set[tuple[str, str]]:
        # Returns the key pairs the chunk's relation mentions join.
        assert self.extractor is not None
        keys = {e.key for e in extraction.entities}
        relations = [(entity_key(r.source), entity_key(r.target), r.keywords, r.description, r.strength)
                     for r in extraction.relations]
        relations = [r for r in relations if r[0] in keys and r[1] in keys]
        self.tables.add_mentions(chunk_id, self.extractor.id, extraction.failures,
                                 [(e.key, e.name, e.type, e.description) for e in extraction.entities],
                                 [(min(s, t), max(s, t), k, d, w) for s, t, k, d, w in relations])
        return {(min(s, t), max(s, t)) for s, t, *_ in relations}

    def save_vectors(self) -> None:
        """Persist the entity and relation vector files at the generation SQLite holds."""
        for vectors in (self.entity_vectors, self.relation_vectors):
            vectors.save(int(self.store.vector_state(vectors.kind)["generation"]))

    # -- derivation ------------------------------------------------------------------------------

    def refresh(self, changed: Iterable[str], pairs: set[tuple[str, str]] | None = None,
                added: Sequence[int] | None = None) -> None:
        """Re-derive the graph around keys whose mentions changed (inside a transaction).

        ``pairs`` are the key pairs whose relation mentions changed, when the caller knows them
        (an insert does; a delete passes none): relations between kept nodes are then derived
        again only for those pairs, otherwise for every pair touching a changed key. ``added``:
        the chunks whose mentions are all the change (an insert's), so that busy names' running
        summaries take only those (``summary.py``); a deletion passes none."""
        changed = set(changed)
        if not changed:
            return
        try:
            self._refresh(_Change(changed, pairs, added))
        except BaseException:
            self._failed = True
            raise

    def _refresh(self, change: _Change) -> None:
        keys = self._merged_mentions(change.keys, change.chunks)
        dying = self.tables.key_rows(change.keys - set(keys))
        seeds = change.keys | self._neighbours_before(dying.values())
        dead_nodes = {row.entity_id for row in dying.values() if row.entity_id is not None}
        self._store_keys(keys, set(dying))
        region, edges = self._region(seeds)
        self._rebuild(region, edges, dead_nodes, change, keys)
        self.store.bump_generation("entity")
        self.store.bump_generation("relation")

    def _candidates_file(self) -> Path:
        return self.store.path.parent / CANDIDATES_FILE

    def _restore_candidates(self) -> None:
        if not self.store.encrypted:
            self.candidates.restore(self._candidates_file(), self.candidates.stamp(self._generation()))

    def _save_candidates(self) -> None:
        # After the last batch committed, from a builder none of whose refreshes failed (a rolled
        # back batch may have left sets SQLite no longer matches).
        if self.store.encrypted:
            self._candidates_file().unlink(missing_ok=True)
        elif not self._failed:
            self.candidates.save(self._candidates_file(), self.candidates.stamp(self._generation()))

    def _generation(self) -> int:
        return int(self.store.vector_state("entity")["generation"])

    def _merged_mentions(self, keys: Iterable[str], added: Sequence[int] | None) -> dict[str, MergedKey]:
        """Summaries of keys that still have mentions. A busy key's stored running summary is
        brought up to date with the mentions of the ``added`` chunks (none: it is current),
        unless ``added`` is None (mentions were removed); the others read all their mentions."""
        keys, out = set(keys), dict[str, MergedKey]()
        running = {} if added is None else self._running(keys)
        fresh = self.tables.mentions_in(added) if running and added else {}
        for key, summary in running.items():
            summary.add(fresh.get(key, ()))
            out[key] = summary.merged(key)
        # A slice of keys at a time: a region's dates and years carry thousands of mentions each.
        ordered = sorted(keys - set(running))
        for start in range(0, len(ordered), STRUCTURAL_SLICE):
            found = self.tables.mentions(ordered[start : start + STRUCTURAL_SLICE])
            out.update((key, summarise(key, rows)) for key, rows in found.items())
        return out

    def _running(self, keys: set[str]) -> dict[str, RunningSummary]:
        # A stored summary is used only while it counts the mentions the key row counts.
        stored = self.tables.summaries(keys).items()
        loaded = {key: (n, RunningSummary.loads(text)) for key, (n, text) in stored}
        return {key: s for key, (n, s) in loaded.items() if s is not None and s.count == n}

    def _neighbours_before(self, dying: Iterable[KeyRow]) -> set[str]:
        # A key about to disappear may have bridged a component or shared a node: its old
        # candidates and node-mates seed the region.
        dying = list(dying)
        found = self._old_mates(dying)
        for near in self._candidates(dying):
            found.update(near)
        return found

    def _store_keys(self, alive: dict[str, MergedKey], dead: set[str]) -> None:
        old = self.tables.key_rows(set(alive) | dead)
        self.tables.delete_keys(sorted(dead))
        stale = [k for k, v in alive.items() if k not in old or embedding_text(old[k].name)
                 != embedding_text(v.name)]
        # Each name embedded alone (its vector is the same whichever batch of the build meets
        # it, so a resumed or incremental build aggregates as one pass does), and taken as
        # SQLite stores it (4-bit levels): it meets the candidate sets and aggregation exactly
        # as it will when read back.
        vectors: dict[str, np.ndarray] = {}
        if stale:
            fresh = self.embedder.embed_alone([embedding_text(alive[k].name) for k in stale])
            vectors = dict(zip(stale, as_stored(fresh)))
        renamed = [old[k].id for k in dead | set(stale) if k in old]
        added: list[int] = []
        for key, info in sorted(alive.items()):
            vector = vectors[key] if key in vectors else old[key].vector
            # A name's description is derived from its mentions whenever aggregation needs it;
            # the row's description column holds a busy name's running summary, or nothing.
            row_id = self.tables.upsert_key(key, info.name, info.type, info.state, info.mentions, vector)
            if key in vectors:
                added.append(row_id)
        self.candidates.remove(renamed)
        if added:
            self.candidates.add(added, np.stack([vectors[k] for k in sorted(vectors)]))

    def _region(self, seeds: set[str]) -> tuple[set[str], set[tuple[str, str]]]:
        """Whole components (eq. 2) around the seeds, plus the old node-mates of every key in them."""
        region: set[str] = set()
        edges: set[tuple[str, str]] = set()
        frontier = set(self.tables.key_rows(seeds))
        while frontier:
            region |= frontier
            rows = list(self.tables.key_rows(frontier).values())
            reached: set[str] = set()
            for row, near in zip(rows, self._candidates(rows)):
                for other in near:
                    edges.add((min(row.key, other), max(row.key, other)))
                    reached.add(other)
            reached |= self._old_mates(rows)
            frontier = reached - region
        return region, edges

    def _candidates(self, rows: list) -> list[set[str]]:
        """For each key row, the keys whose name vector has cos ≥ τ with its own (eq. 1),
        from the candidate sets kept between batches (``candidates.py``)."""
        if not rows:
            return []
        near = self.candidates.of([row.id for row in rows], lambda n: rows[n].vector)
        keys = self.tables.key_rows_by_id(sorted({i for ids in near for i in ids}))
        return [{keys[i].key for i in ids if i in keys} for ids in near]

    def _old_mates(self, rows: Iterable) -> set[str]:
        nodes = {row.entity_id for row in rows if row.entity_id is not None}
        return self.tables.keys_of_entities(nodes | self.tables.similar_partners(nodes))

    def _rebuild(self, region: set[str], edges: set[tuple[str, str]], dead_nodes: set[int],
                 change: _Change, known: dict[str, MergedKey]) -> None:
        """Aggregate the region's components and bring its nodes and relations in line.

        A node whose group of keys, name and type come out as stored is kept with its id.
        Relations with an endpoint among the new nodes are derived again; between kept nodes,
        only those of key pairs whose mentions changed (every relation of a changed node when
        the pairs are not known). The others come from unchanged mentions between unchanged
        nodes, so deriving them would give them back as they are: a batch may reach thousands of
        dates and years of one component and change a few dozen of them."""
        # ``known``: the changed keys' merged mentions, read once by ``refresh`` (they are the
        # busy ones, holding most of the region's mentions; index.md).
        infos = {k: v for k, v in known.items() if k in region}
        infos.update(self._merged_mentions(region - set(infos), added=()))
        groups, similar = [], []
        for component in components(region, edges):
            result = aggregate([infos[k].for_aggregation() for k in component], self.params)
            groups.extend(result.groups)
            similar.extend(result.similar)
        heads = [_head(group, infos) for group in groups]
        old = {k: r.entity_id for k, r in self.tables.key_rows(region).items() if r.entity_id is not None}
        kept = self._kept_nodes(groups, heads, old, dead_nodes)
        reusable = self._drop_nodes((dead_nodes | set(old.values())) - set(kept.values()))
        # ``whole``: nodes all of whose relations are derived again (new ones; changed ones too
        # when the changed pairs are not known); ``stale``: kept pairs whose mentions changed.
        node_of, whole, changed_nodes = dict[str, int](), set[int](), set[int]()
        for n, group in enumerate(groups):
            node = kept.get(n)
            if node is None:
                node = self.tables.add_entity(*heads[n], "", group)
                whole.add(node)
            elif not change.keys.isdisjoint(group):
                self.tables.link_chunks(node, group, change.chunks)
                changed_nodes.add(node)
            node_of.update((key, node) for key in group)
        if change.pairs is None:
            whole |= changed_nodes
        stale = {(min(node_of[a], node_of[b]), max(node_of[a], node_of[b])) for a, b in change.pairs or ()
                 if node_of[a] != node_of[b] and node_of[a] not in whole and node_of[b] not in whole}
        reusable.update(self._drop_relations(set(kept.values()), whole, stale))
        self._add_structural(whole, node_of, reusable)
        self._add_pairs(stale, node_of, reusable)
        for a, b, score in similar:
            self.tables.add_relation(NewRelation("similar", node_of[a], node_of[b], score=score))

    def _kept_nodes(self, groups: list[list[str]], heads: list[tuple[str, str]], old: dict[str, int],
                    dead_nodes: set[int]) -> dict[int, int]:
        """Group index → stored node, for groups that are a stored node exactly: the same keys
        (the region holds every key of a node it reaches), name and type."""
        members: dict[int, set[str]] = defaultdict(set)
        for key, node in old.items():
            members[node].add(key)
        stored = {e.id: (e.name, e.type) for e in self.tables.entities(set(members) - dead_nodes)}
        kept: dict[int, int] = {}
        for n, group in enumerate(groups):
            was = old.get(group[0])
            if was in stored and members[was] == set(group) and stored[was] == heads[n]:
                kept[n] = was
        return kept

    def _drop_nodes(self, nodes: set[int]) -> dict[str, np.ndarray]:
        relations = self.tables.relations_of(nodes)
        self.relation_vectors.remove([r[0] for r in relations])
        self.tables.delete_entities(nodes)
        return _by_text(relations)

    def _drop_relations(self, kept: set[int], whole: set[int], stale: set[tuple[int, int]]
                        ) -> dict[str, np.ndarray]:
        """Delete the kept nodes' similar edges (aggregation gives the region's anew), every
        structural relation of the kept nodes among ``whole`` and those of the stale pairs;
        returns the dropped vectors by text hash."""
        similar = self.tables.relations_of(kept, "similar")
        structural = self.tables.relations_of(kept & whole, "structural")
        structural += self.tables.relations_between(stale)
        self.relation_vectors.remove([r[0] for r in structural])
        self.tables.delete_relations([r[0] for r in similar + structural])
        return _by_text(structural)

    def _add_structural(self, whole: set[int], node_of: dict[str, int],
                        reusable: dict[str, np.ndarray]) -> None:
        """Every structural relation of the ``whole`` nodes, derived a slice of nodes at a time.

        A node pair belongs to the slice holding its smallest ``whole`` node, and every
        mention of the pair touches that node's keys, so each relation is built once from all
        of its mentions while only one slice's mentions are in memory (a region of dates and
        years may reach hundreds of thousands of mentions; docs/design/index.md)."""
        keys_of = _keys_of(node_of, whole)
        nodes, relations = sorted(keys_of), list[NewRelation]()
        for start in range(0, len(nodes), STRUCTURAL_SLICE):
            owned = set(nodes[start : start + STRUCTURAL_SLICE])
            by_pair = self._pairs_owned(owned, keys_of, node_of)
            names = self.tables.entity_names({n for pair in by_pair for n in pair})
            relations.extend(_structural(pair, PairMentions.of(rows), names)
                             for pair, rows in by_pair.items())
        # Inserted in pair order, as one pass over the whole region would: relation ids (and so
        # the batches relation vectors are embedded in) do not depend on the slicing.
        relations.sort(key=lambda r: (r.source_id, r.target_id))
        self._insert_relations(relations, reusable)

    def _add_pairs(self, stale: set[tuple[int, int]], node_of: dict[str, int],
                   reusable: dict[str, np.ndarray]) -> None:
        """Structural relations of node pairs whose mentions changed, each from all its mentions
        (read by the pair's keys, not by every mention of two busy nodes)."""
        if not stale:
            return
        keys_of = _keys_of(node_of, {n for pair in stale for n in pair})
        chunks = self.tables.key_chunks()
        by_pair = {pair: self.tables.mentions_between(keys_of[pair[0]], keys_of[pair[1]], chunks)
                   for pair in sorted(stale)}
        names = self.tables.entity_names({n for pair in by_pair for n in pair})
        self._insert_relations([_structural(pair, found, names) for pair, found in by_pair.items() if found],
                               reusable)

    def _pairs_owned(self, owned: set[int], keys_of: dict[int, list[str]],
                     node_of: dict[str, int]) -> dict[tuple[int, int], list[RelationMentionRow]]:
        mentions = self.tables.relation_mentions(k for n in owned for k in keys_of[n])
        outside = self.tables.entity_of_keys({k for m in mentions for k in (m.source_key, m.target_key)}
                                             - set(node_of))
        by_pair: dict[tuple[int, int], list[RelationMentionRow]] = defaultdict(list)
        for m in mentions:
            a, b = node_of.get(m.source_key, outside.get(m.source_key)), node_of.get(
                m.target_key, outside.get(m.target_key))
            if a is None or b is None or a == b:
                continue
            if min(n for n in (a, b) if n in keys_of) in owned:
                by_pair[(min(a, b), max(a, b))].append(m)
        return by_pair

    def _insert_relations(self, relations: list[NewRelation], reusable: dict[str, np.ndarray]) -> None:
        # Relations whose text changed get their vector in ``embed_pending`` once per update,
        # not once per batch: a busy pair's description changes with nearly every batch.
        ids, vectors = [], []
        for relation in relations:
            vector = reusable.get(relation.text_sha or "")
            relation_id = self.tables.add_relation(replace(relation, vector=vector))
            if vector is not None:
                ids.append(relation_id)
                vectors.append(vector)
        if ids:
            self.relation_vectors.add(ids, np.stack(vectors))

    def embed_pending(self, progress: bool = False) -> int:
        """Embed structural relations that have no vector yet; returns how many."""
        # In id order: embedding them in text order instead (so that batch-mates, and with them
        # the int8 graph's activation scale, follow from the texts alone) cost dual recall for
        # no gain elsewhere (index.md).
        pending = self.tables.relations_without_vector()
        bar = Progress("relation vectors", "relation", len(pending), enabled=progress)
        parts = [pending[start : start + 512] for start in range(0, len(pending), 512)]
        # The next part is embedded on a worker while this one is stored.
        coming = [self._embed_later(p) for p in parts[:1]]
        for n, part in enumerate(parts):
            coming += [self._embed_later(p) for p in parts[n + 1 : n + 2]]
            vectors = coming.pop(0).result()
            with self.store.write():
                self.tables.set_relation_vectors([row[0] for row in part], vectors)
                self.store.bump_generation("relation")
            self.relation_vectors.add([row[0] for row in part], vectors)
            bar.update(len(part))
        bar.close()
        if pending:
            self.save_vectors()
        return len(pending)

    def _embed_later(self, part: list[tuple[int, str, str, str, str]]) -> Future[np.ndarray]:
        return self.embedder.embed_later([relation_text(*row[1:]) for row in part])


def weight(strengths: Sequence[float]) -> float:
    """ω_r: noisy-OR of the mentions' strengths, in (0, 1)."""
    return 1.0 - math.prod(1.0 - PER_MENTION * min(s, 10.0) / 10.0 for s in strengths)


def relation_text(source: str, target: str, keywords: str, description: str) -> str:
    """The text embedded for a structural relation (bounded: it is embedded often). The two
    names come in alphabetical order: a pair's ids (its stored direction) depend on history."""
    first, second = sorted((source, target))
    return f"{first} — {second}: {keywords}. {description}"[:RELATION_TEXT_CHARS]


def _structural(pair: tuple[int, int], mentions: PairMentions, names: dict[int, str]) -> NewRelation:
    """One structural relation per node pair, from all of its mentions."""
    keywords = join_counts(mentions.keywords, KEYWORD_CHARS, ", ")
    description, sha = "", None
    if embedded(keywords):  # the others are kept without a vector (see graph_tables)
        description = join_counts(mentions.descriptions(), RELATION_DESCRIPTION_CHARS)
        sha = _sha(relation_text(names[pair[0]], names[pair[1]], keywords, description))
    return NewRelation("structural", pair[0], pair[1], keywords, description,
                       weight=round(weight(mentions.strengths), 6), text_sha=sha,
                       chunk_ids=tuple(mentions.chunk_ids))


def _keys_of(node_of: dict[str, int], nodes: set[int]) -> dict[int, list[str]]:
    """The keys of each of these nodes."""
    keys_of: dict[int, list[str]] = defaultdict(list)
    for key, node in node_of.items():
        if node in nodes:
            keys_of[node].append(key)
    return keys_of


def _by_text(relations: list[tuple[int, str | None, np.ndarray | None]]) -> dict[str, np.ndarray]:
    """Dropped relations' vectors by text hash: a relation derived again with the same text
    reuses its vector."""
    return {sha: v for _, sha, v in relations if sha and v is not None}


def _head(group: list[str], infos: dict[str, MergedKey]) -> tuple[str, str]:
    """A group's node name and type."""
    members = [infos[k] for k in group]
    head = infos[representative(m.for_aggregation() for m in members).key]
    kinds: Counter[str] = Counter()
    for m in members:  # each key's type counts as often as the key is mentioned
        if m.type not in GENERIC_TYPES:
            kinds[m.type] += m.mentions
    type_ = most_frequent(kinds) if kinds else head.type
    # Schema 4 stores no node description: ``GraphTables.nodes`` derives it from the mentions.
    return head.name, type_


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:TEXT_SHA_DIGITS]
