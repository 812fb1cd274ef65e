"""Queries made of statement names and labels, and the label words kept for evaluation.

Both sides read these: the development sets (``rag_app.evaluation.dev_sets``) make queries of names and
label words; the training jobs make pairs of them and must never train on a query reserved for evaluation.
"""

from __future__ import annotations

import hashlib
import re

from pylatexenc.latex2text import LatexNodes2Text

from ingestion import StatementKind

# One label-words query in RESERVED_SHARE is kept out of every training job, by its text alone.
RESERVED_SHARE = 5

_LABEL_KIND_PREFIXES = frozenset(
    {k.value for k in StatementKind} | {"situation", "section", "subsection", "equation", "item", "exercise"}
)
_latex_to_text = LatexNodes2Text()


def plain_name(name: str) -> str:
    """A statement name as a person would type it: accents resolved, math left as LaTeX."""
    if "$" in name or "\\(" in name:
        return name
    return " ".join(_latex_to_text.latex_to_text(name).split())


def label_words(label: str) -> str:
    """``lemma-directed-colimit-exact`` to ``directed colimit exact``; "" when too little is left."""
    words = [w for w in re.split(r"[-_:./\s]+", label) if w]
    if words and words[0].lower() in _LABEL_KIND_PREFIXES:
        words = words[1:]
    words = [w for w in words if not w.isdigit()]
    if len(words) < 2 or not any(len(w) >= 4 and w.isalpha() for w in words):
        return ""
    return " ".join(words)


def reserved_for_evaluation(words: str) -> bool:
    """Whether label words are kept for evaluation: no training job (ranker, query adapter, embedding,
    reranker) makes a query of them. Decided by a hash of the text alone, so training never reads an
    evaluation set and the same words are reserved in every corpus and on every machine."""
    digest = hashlib.sha256(f"label-words:{words}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % RESERVED_SHARE == 0
