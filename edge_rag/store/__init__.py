"""Index storage: one SQLite file (source of truth) plus USearch vector files."""

from .lock import WriteLock
from .sqlite import ChunkRecord, DocumentRecord, GraphStore
from .vectors import VectorIndex

__all__ = ["ChunkRecord", "DocumentRecord", "GraphStore", "VectorIndex", "WriteLock"]
