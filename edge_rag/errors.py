"""Exceptions raised by edge-rag: one plain name per failure a user can act on.

Design: docs/design/api.md
"""

from __future__ import annotations


class EdgeRagError(Exception):
    """Base class of every error edge-rag raises on purpose."""


class NotAnIndex(EdgeRagError):
    """The path exists but holds no edge-rag index."""


class IndexCorrupt(EdgeRagError):
    """The index's SQLite file cannot be read as an edge-rag index."""


class SchemaMismatch(EdgeRagError):
    """The index was written by a schema version this edge-rag does not know."""


class EmbedderMismatch(EdgeRagError):
    """The index was built with another embedder than the one configured."""


class ModelNotFound(EdgeRagError):
    """An exported model folder is missing or incomplete."""


class MissingExtra(EdgeRagError):
    """An optional feature needs a package extra that is not installed."""


class BadDocument(EdgeRagError):
    """A document cannot be indexed (empty, binary, too large, unreadable).

    The message starts with the document's source, which is also ``.source``.
    """

    @property
    def source(self) -> str:
        """Where the refused document came from."""
        return str(self).split(": ", 1)[0]


class IndexLocked(EdgeRagError):
    """Another process is writing to the index."""


class SettingsError(EdgeRagError):
    """A device profile or a setting override is invalid."""


class UnknownMethod(EdgeRagError):
    """A retrieval method name that edge-rag does not provide."""


class BadHistory(EdgeRagError):
    """A dialogue history that is not a list of {"role": "user" | "assistant", "content": text}."""


class ContextOverflow(EdgeRagError):
    """A prompt that does not fit the model's context window."""


class NoSuchDocument(EdgeRagError):
    """A document id that is not in the index."""


class NoSuchEntity(EdgeRagError):
    """No entity of that name is in the graph."""


class MemoryBudgetExceeded(EdgeRagError):
    """The profile's models, window and index would not fit its memory budget."""


class WrongKey(EdgeRagError):
    """An encrypted index opened without its key or with another one (or a key for a plain index)."""
