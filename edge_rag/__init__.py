"""edge-rag: graph-based RAG (RAP-RAG) for small language models on small devices.

Design: docs/design/README.md (one note per component), docs/design/api.md
"""

from . import import_order  # noqa: F401  (first: onnxruntime must load before usearch)
from .api import Conversation, EdgeRAG
from .config import Settings
from .errors import (
    BadDocument,
    BadHistory,
    ContextOverflow,
    EdgeRagError,
    EmbedderMismatch,
    IndexCorrupt,
    IndexLocked,
    MemoryBudgetExceeded,
    MissingExtra,
    ModelNotFound,
    NoSuchDocument,
    NoSuchEntity,
    NotAnIndex,
    SchemaMismatch,
    SettingsError,
    UnknownMethod,
    WrongKey,
)
from .index import Document, InsertReport
from .index.sync import SyncReport
from .plan import Plan
from .retrieve import Retrieval, RetrievedChunk
from .store import IndexStats

__version__ = "0.1.0"

__all__ = [
    "BadDocument", "ContextOverflow", "Document", "EdgeRAG", "EdgeRagError", "EmbedderMismatch",
    "IndexCorrupt", "IndexLocked", "IndexStats", "InsertReport", "MemoryBudgetExceeded", "MissingExtra",
    "ModelNotFound", "NoSuchDocument", "NoSuchEntity", "NotAnIndex", "Plan", "Retrieval", "RetrievedChunk",
    "SchemaMismatch", "Settings", "SettingsError", "UnknownMethod", "__version__",
]
__all__ += ["SyncReport"]
__all__ += ["WrongKey"]
__all__ += ["BadHistory", "Conversation"]
