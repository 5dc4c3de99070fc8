"""Ingest: read sources, chunk them by tokens, embed and write them to the store.

Design: docs/design/index.md
"""

from .chunking import Chunk, Chunker
from .reader import Document, Skipped, read_sources
from .writer import Indexer, InsertReport

__all__ = ["Chunk", "Chunker", "Document", "Indexer", "InsertReport", "Skipped", "read_sources"]
