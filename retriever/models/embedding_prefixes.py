"""The task prefixes an embedding model was trained to read before a query and before a document."""

from __future__ import annotations

from typing import NamedTuple


class EmbeddingPrefixes(NamedTuple):
    """``query`` before each query, ``document`` before each statement (empty for models trained without)."""

    query: str = ""
    document: str = ""

    @classmethod
    def for_model(cls, name: str) -> EmbeddingPrefixes:
        """The prefixes of a known model family, by its name; none for others."""
        lowered = name.lower()
        if "nomic-embed-text" in lowered:
            return cls("search_query: ", "search_document: ")
        return cls()
