"""The graph as plain data: JSON-ready nodes and edges named by entity, or GraphML.

Design: docs/design/index.md
"""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..errors import MissingExtra, NoSuchEntity
from ..lexicon import entity_key
from ..store import IndexStore
from ..store.graph_tables import GraphTables, NodeRow
from .aggregate import compact

NODE_FIELDS = ("type", "description", "aliases", "chunks")
EDGE_FIELDS = ("kind", "weight", "score", "keywords", "description", "chunks")


def graph_data(store: IndexStore, around: str | None = None, hops: int = 2) -> dict[str, Any]:
    """Nodes and edges with names instead of row ids (so two indexes compare equal when their
    graphs do); with ``around``, only the entities within ``hops`` of that one."""
    tables = store.graph
    nodes = tables.nodes()
    names = {node.id: node.name for node in nodes}
    keep = set(names) if around is None else _neighbourhood(tables, _find(tables, around), hops)
    chunk_names = {i: f"{doc}:{ord_}" for i, (doc, ord_) in store.chunk_positions().items()}
    return {"nodes": _nodes(tables, nodes, keep, chunk_names),
            "edges": _edges(tables, keep, names, chunk_names)}


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


def _find(tables: GraphTables, name: str) -> int:
    """The node named ``name``, exactly or in another spelling ("Anna Berg" finds "AnnaBerg")."""
    found = tables.entity_of_keys([entity_key(name)]).get(entity_key(name))
    if found is None:
        wanted = compact(name)
        found = next((e for k, e in tables.named_keys() if compact(k) == wanted), None)
    if found is None:
        raise NoSuchEntity(f"no entity named {name!r} in the graph")
    return int(found)


def _neighbourhood(tables: GraphTables, start: int, hops: int) -> set[int]:
    seen, queue = {start}, deque([(start, 0)])
    while queue:
        node, depth = queue.popleft()
        if depth == hops:
            continue
        for other in tables.neighbours(node):
            if other not in seen:
                seen.add(other)
                queue.append((other, depth + 1))
    return seen


def _nodes(tables: GraphTables, rows: list[NodeRow], keep: set[int],
           chunk_names: dict[int, str]) -> list[dict[str, Any]]:
    aliases: dict[int | None, list[str]] = {}
    for key, entity_id in tables.aliases():
        aliases.setdefault(entity_id, []).append(key)
    chunks: dict[int, list[str]] = {}
    for chunk_id, entity_id in tables.chunks_of_entities():
        chunks.setdefault(entity_id, []).append(chunk_names[chunk_id])
    nodes = [{"name": row.name, "type": row.type, "description": row.description,
              "aliases": aliases.get(row.id, []), "chunks": sorted(chunks.get(row.id, []))}
             for row in rows if row.id in keep]
    return sorted(nodes, key=lambda n: n["name"])


def _edges(tables: GraphTables, keep: set[int], names: dict[int, str],
           chunk_names: dict[int, str]) -> list[dict[str, Any]]:
    chunks: dict[int, list[str]] = {}
    for chunk_id, relation_id in tables.chunks_of_relations():
        chunks.setdefault(relation_id, []).append(chunk_names[chunk_id])
    edges = []
    for row in tables.all_relations():
        if row.source_id in keep and row.target_id in keep:
            a, b = sorted((names[row.source_id], names[row.target_id]))
            edges.append({"source": a, "target": b, "kind": row.kind, "weight": row.weight,
                          "score": row.score, "keywords": row.keywords, "description": row.description,
                          "chunks": sorted(chunks.get(row.id, []))})
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
        raise MissingExtra("drawing the graph needs matplotlib: pip install 'edge-rag[graph]'") from None
    start, position = _ring_layout(data, centre)
    figure, axes = plt.subplots(figsize=(10, 10))
    for edge in data["edges"]:
        (x1, y1), (x2, y2) = position[edge["source"]], position[edge["target"]]
        similar = edge["kind"] == "similar"
        axes.plot([x1, x2], [y1, y2], linewidth=0.6, alpha=0.6, color="tab:orange" if similar else "grey",
                  linestyle="--" if similar else "-")
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
