"""Index storage: one SQLite file (source of truth) plus USearch vector files.

Design: docs/design/storage.md
"""

from .lock import WriteLock
from .sqlite import ChunkRecord, DocumentRecord, IndexStore
from .stats import IndexStats, index_stats
from .vectors import VectorIndex

__all__ = ["ChunkRecord", "DocumentRecord", "IndexStats", "IndexStore", "VectorIndex", "WriteLock",
           "index_stats"]
