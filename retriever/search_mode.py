"""Which channels a search reads: the retriever modes of ``--mode`` and the evaluation's run names."""

from __future__ import annotations

from enum import StrEnum


class SearchMode(StrEnum):
    HYBRID = "hybrid"  # dense + BM25
    DENSE = "dense"
    BM25 = "bm25"
    HYBRID_FORMULA = "hybrid-formula"  # dense + BM25 + the lexical formula channel
    MARF = "fusion"  # MaRF formula-fused vectors (instead of dense) + BM25 + the lexical formula channel
    MARF_MAXSIM = "fusion-maxsim"  # as MARF, the MaRF channel reranked by MaxSim over token vectors
    FORMULA = "formula"  # formulas only: the lexical formula channel (and the formula encoder when built)


# The modes that fuse text channels; dense, BM25 and formula-only searches ask for one channel by name.
FUSED_MODES = frozenset({SearchMode.HYBRID, SearchMode.HYBRID_FORMULA, SearchMode.MARF, SearchMode.MARF_MAXSIM})
