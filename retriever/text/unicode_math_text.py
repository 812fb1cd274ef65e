"""Statement and query text with its mathematics rendered as Unicode, the form the dense embedder reads.

The embedders we serve (MiniLM, mpnet) learned English, not LaTeX. ``\\mathop{\\mathrm{Spec}}(R)
\\subset \\mathfrak p`` costs them a dozen word pieces of markup where ``Spec(R) ⊂ 𝔭`` costs a few, so
a statement full of LaTeX was read mostly as markup and cut off at the 256-token window. pylatexenc
(which ingestion already uses to read LaTeX) renders the mathematics as text. Queries are rendered
the same way, so ``$\\mathfrak p$`` in a question meets ``𝔭`` in a statement. BM25 and the formula
channel keep reading the LaTeX: they match on its commands.
"""

from __future__ import annotations

import re
import threading

from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexwalker import LatexWalkerError

# A bare % is a percent sign in Math StackExchange text but a comment in LaTeX, which would drop
# the rest of the line; statements from LaTeX sources have their comments stripped already.
_BARE_PERCENT = re.compile(r"(?<!\\)%")


class UnicodeMathText:
    """Renders LaTeX markup and mathematics as plain Unicode text (``\\alpha \\to \\beta`` → ``α → β``)."""

    form = "unicode-math"  # recorded in the embedder's identity: vectors of the two forms never mix

    def __init__(self) -> None:
        # One converter per thread: the chat embeds queries for several sessions at once.
        self._local = threading.local()

    def render(self, text: str) -> str:
        if "\\" not in text and "$" not in text:
            return text
        try:
            rendered = self._converter().latex_to_text(_BARE_PERCENT.sub(r"\\%", text))
        except (LatexWalkerError, RecursionError):
            return text  # markup pylatexenc cannot read is still better embedded as written than lost
        return " ".join(rendered.split())

    def _converter(self) -> LatexNodes2Text:
        converter = getattr(self._local, "converter", None)
        if converter is None:
            converter = LatexNodes2Text(math_mode="text", strict_latex_spaces=False)
            self._local.converter = converter
        return converter
