"""Index storage: one SQLite file (source of truth) plus USearch vector files.

Design: docs/design/storage.md
"""

from .lock import WriteLock
from .sqlite import ChunkRecord, DocumentRecord, IndexStore
from .vectors import VectorIndex

__all__ = ["ChunkRecord", "DocumentRecord", "IndexStore", "VectorIndex", "WriteLock"]
