"""Tokenization for lexical search over text that mixes English and LaTeX.

LaTeX commands stay whole (``\\frac``, ``\\mathbb``) so that formulas match on their
structure words; English words are lower-cased, stop words dropped and stemmed.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

_TOKEN = re.compile(r"\\[A-Za-z]+|[A-Za-z]+|\d+")
_STOPWORDS = frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def english_stemmer() -> Stemmer.Stemmer:
    """The one English Snowball stemmer the lexical channel, the statement check and the yes/no verdict share."""
    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Tokens of ``text``: stemmed words, whole LaTeX commands and numbers."""
    tokens = []
    words = []
    for token in _TOKEN.findall(text):
        if token.startswith("\\"):
            tokens.append(token)
        else:
            lowered = token.lower()
            if lowered not in _STOPWORDS:
                words.append(lowered)
    return tokens + english_stemmer().stemWords(words)
