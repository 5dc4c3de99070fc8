"""What an index holds: counts and bytes on disk (``EdgeRAG.stats``, ``edge-rag stats``).

Design: docs/design/storage.md
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .sqlite import IndexStore


@dataclass
class IndexStats:
    """Counts of what an index holds, its bytes on disk per file and, inside the SQLite file,
    per table (with the table's indexes)."""

    path: str
    documents: int
    chunks: int
    entities: int
    relations: int
    similar_edges: int
    entity_names: int = 0
    merges: int = 0
    chunks_in_graph: int = 0
    extraction_failures: int = 0
    files: dict[str, int] = field(default_factory=dict)
    tables: dict[str, int] = field(default_factory=dict)
    embedder: str = ""
    schema_version: str = ""

    @property
    def total_bytes(self) -> int:
        """Bytes on disk of every file in the index directory."""
        return sum(self.files.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (the CLI's ``stats --json`` output)."""
        return {**asdict(self), "total_bytes": self.total_bytes}


def index_stats(directory: Path, store: IndexStore) -> IndexStats:
    """The counts of ``store`` and the bytes of every file in ``directory``."""
    manifest = store.manifest()
    files = {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.is_file()}
    return IndexStats(str(directory), **store.counts(), files=files, tables=store.table_bytes(),
                      embedder=manifest.get("embedder_name", ""),
                      schema_version=manifest.get("schema_version", ""))
