"""The graph as plain data: JSON-ready nodes and edges named by entity, or GraphML."""

from __future__ import annotations

import math
import sqlite3
from collections import deque
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..errors import MissingExtra, NoSuchEntity
from ..lexicon import entity_key
from .aggregate import compact

NODE_FIELDS = ("type", "description", "aliases", "chunks")
EDGE_FIELDS = ("kind", "weight", "score", "keywords", "description", "chunks")


def graph_data(conn: sqlite3.Connection, around: str | None = None, hops: int = 2) -> dict[str, Any]:
    """Nodes and edges with names instead of row ids (so two indexes compare equal when their
    graphs do); with ``around``, only the entities within ``hops`` of that one."""
    names = dict(conn.execute("SELECT id, name FROM entities").fetchall())
    keep = set(names) if around is None else _neighbourhood(conn, _find(conn, around), hops)
    chunk_names = _chunk_names(conn)
    return {"nodes": _nodes(conn, keep, chunk_names), "edges": _edges(conn, keep, names, chunk_names)}


def graphml(data: dict[str, Any]) -> str:
    """GraphML text of ``graph_data`` output (lists are joined with '; ')."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
    lines += [f'<key id="n_{f}" for="node" attr.name="{f}" attr.type="string"/>' for f in NODE_FIELDS]
    lines += [f'<key id="e_{f}" for="edge" attr.name="{f}" attr.type="string"/>' for f in EDGE_FIELDS]
    lines.append('<graph id="edge-rag" edgedefault="undirected">')
    for node in data["nodes"]:
        lines.append(f"<node id={quoteattr(node['name'])}>{_data('n', node, NODE_FIELDS)}</node>")
    for edge in data["edges"]:
        lines.append(f"<edge source={quoteattr(edge['source'])} target={quoteattr(edge['target'])}>"
                     f"{_data('e', edge, EDGE_FIELDS)}</edge>")
    lines += ["</graph>", "</graphml>"]
    return "\n".join(lines) + "\n"


def _find(conn: sqlite3.Connection, name: str) -> int:
    """The node named ``name``, exactly or in another spelling ("Li Hua" finds "LiHua")."""
    row = conn.execute("SELECT entity_id FROM entity_keys WHERE key = ? AND entity_id IS NOT NULL",
                       (entity_key(name),)).fetchone()
    if row is None:
        wanted = compact(name)
        rows = conn.execute("SELECT key, entity_id FROM entity_keys WHERE entity_id IS NOT NULL")
        row = next(((e,) for k, e in rows if compact(k) == wanted), None)
    if row is None:
        raise NoSuchEntity(f"no entity named {name!r} in the graph")
    return int(row[0])


def _neighbourhood(conn: sqlite3.Connection, start: int, hops: int) -> set[int]:
    seen, queue = {start}, deque([(start, 0)])
    while queue:
        node, depth = queue.popleft()
        if depth == hops:
            continue
        rows = conn.execute("SELECT target_id FROM relations WHERE source_id = ? UNION "
                            "SELECT source_id FROM relations WHERE target_id = ?", (node, node))
        for (other,) in rows:
            if other not in seen:
                seen.add(other)
                queue.append((other, depth + 1))
    return seen


def _chunk_names(conn: sqlite3.Connection) -> dict[int, str]:
    return {row[0]: f"{row[1]}:{row[2]}" for row in conn.execute("SELECT id, doc_id, ord FROM chunks")}


def _nodes(conn: sqlite3.Connection, keep: set[int], chunk_names: dict[int, str]) -> list[dict[str, Any]]:
    aliases: dict[int, list[str]] = {}
    for key, entity_id in conn.execute("SELECT key, entity_id FROM entity_keys ORDER BY key"):
        aliases.setdefault(entity_id, []).append(key)
    chunks: dict[int, list[str]] = {}
    for chunk_id, entity_id in conn.execute("SELECT chunk_id, entity_id FROM chunk_entities"):
        chunks.setdefault(entity_id, []).append(chunk_names[chunk_id])
    rows = conn.execute("SELECT id, name, type, description FROM entities")
    nodes = [{"name": name, "type": type_, "description": description,
              "aliases": aliases.get(i, []), "chunks": sorted(chunks.get(i, []))}
             for i, name, type_, description in rows if i in keep]
    return sorted(nodes, key=lambda n: n["name"])


def _edges(conn: sqlite3.Connection, keep: set[int], names: dict[int, str],
           chunk_names: dict[int, str]) -> list[dict[str, Any]]:
    chunks: dict[int, list[str]] = {}
    for relation_id, chunk_id in conn.execute("SELECT relation_id, chunk_id FROM relation_chunks"):
        chunks.setdefault(relation_id, []).append(chunk_names[chunk_id])
    edges = []
    rows = conn.execute("SELECT id, kind, source_id, target_id, weight, score, keywords, description "
                        "FROM relations")
    for i, kind, source, target, weight, score, keywords, description in rows:
        if source in keep and target in keep:
            a, b = sorted((names[source], names[target]))
            edges.append({"source": a, "target": b, "kind": kind, "weight": weight, "score": score,
                          "keywords": keywords, "description": description,
                          "chunks": sorted(chunks.get(i, []))})
    return sorted(edges, key=lambda e: (e["kind"], e["source"], e["target"]))


def _data(prefix: str, item: dict[str, Any], fields: tuple[str, ...]) -> str:
    parts = []
    for field in fields:
        value = item.get(field)
        if value is None:
            continue
        text = "; ".join(value) if isinstance(value, list) else str(value)
        parts.append(f'<data key="{prefix}_{field}">{escape(text)}</data>')
    return "".join(parts)


def draw_neighbourhood(data: dict[str, Any], centre: str, path: Path) -> None:
    """A PNG of a neighbourhood: the centre, its neighbours on a ring, the rest outside."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtra("drawing the graph needs matplotlib: pip install 'edge-rag[bench]'") from None
    start, position = _ring_layout(data, centre)
    figure, axes = plt.subplots(figsize=(10, 10))
    for edge in data["edges"]:
        (x1, y1), (x2, y2) = position[edge["source"]], position[edge["target"]]
        style = dict(color="tab:orange", linestyle="--") if edge["kind"] == "similar" else dict(color="grey")
        axes.plot([x1, x2], [y1, y2], linewidth=0.6, alpha=0.6, **style)
    for name, (x, y) in position.items():
        axes.scatter([x], [y], s=40, color="tab:red" if name == start else "tab:blue", zorder=3)
        axes.annotate(name, (x, y), fontsize=7, zorder=4)
    axes.set_axis_off()
    axes.set_title(f"{start}: {len(data['nodes'])} entities, {len(data['edges'])} edges")
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


def _ring_layout(data: dict[str, Any], centre: str) -> tuple[str, dict[str, tuple[float, float]]]:
    names = [n["name"] for n in data["nodes"]]
    start = next((n["name"] for n in data["nodes"] if compact(centre) in map(compact, n["aliases"])),
                 names[0])
    near = sorted({e["source"] if e["target"] == start else e["target"] for e in data["edges"]
                   if start in (e["source"], e["target"])} - {start})
    far = sorted(set(names) - set(near) - {start})
    position = {start: (0.0, 0.0)}
    for ring, members in ((1.0, near), (2.0, far)):
        for i, name in enumerate(members):
            angle = 2 * math.pi * i / max(1, len(members))
            position[name] = (ring * math.cos(angle), ring * math.sin(angle))
    return start, position
