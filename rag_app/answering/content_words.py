"""The content words of a text: what a question is about, without its scaffolding.

The conversation's rewrite check compares the words themselves and leaves formulas out (``without_math``:
a formula is checked on its own there). The yes/no reading compares word families with the claims' own
stemmer (:func:`rag_app.answering.claims.yes_no_questions.topic_words`: one stemmer, not two).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from rag_app.answering.claims.vocabulary import WORD

INLINE_MATH = re.compile(r"\$[^$]+\$|\\\(.+?\\\)")
MIN_LENGTH = 3  # "of", "is", "R": too short to say what a text is about


def content_words(text: str, stopwords: Collection[str], *, without_math: bool = False) -> set[str]:
    """The lower-cased words of ``text`` of three letters or more, less ``stopwords``.

    ``without_math`` drops inline formulas (``$...$``, ``\\(...\\)``) first, so that LaTeX command names
    are not taken for words.
    """
    if without_math:
        text = INLINE_MATH.sub(" ", text)
    words = (word.lower().strip("'-") for word in WORD.findall(text))
    return {word for word in words if len(word) >= MIN_LENGTH and word not in stopwords}
