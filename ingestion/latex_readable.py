"""LaTeX statement bodies to readable text, with the mathematics kept as LaTeX.

Math is normalized to one inline convention (``$...$``) and one display convention (``$$...$$``,
multi-line environments as ``aligned``/``gathered`` inside it), which is what Streamlit/KaTeX and
the embedders see. Outside math, ``pylatexenc`` turns markup into text: emphasis unwrapped,
``\\cite`` to ``[key]``, and ``\\ref``/``\\cref``/``\\eqref`` to the printed numbers ("Lemma 3.2")
where the label is known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pylatexenc import latexwalker
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latex2text import get_default_latex_context_db as text_context_db
from pylatexenc.macrospec import EnvironmentSpec, MacroSpec

from ingestion.latex_numbering import Reference
from ingestion.latex_text import normalize_whitespace, read_group, read_optional_argument

# Display environments and what each becomes inside $$...$$ (None: its body alone).
_DISPLAY_ENVIRONMENTS: dict[str, str | None] = {
    "equation": None,
    "displaymath": None,
    "align": "aligned",
    "flalign": "aligned",
    "eqnarray": "aligned",
    "alignat": "alignedat",
    "gather": "gathered",
    "multline": "gathered",
}
_INLINE_ENVIRONMENTS = ("math",)
_MATH_BEGIN = re.compile(
    r"\\begin\{(?P<env>(?:" + "|".join([*_DISPLAY_ENVIRONMENTS, *_INLINE_ENVIRONMENTS]) + r")\*?)\}"
)
_DROPPED_IN_MATH = re.compile(r"\\label\s*\{(?:[^{}]|\{[^{}]*\})*\}|\\nonumber\b|\\notag\b|\\xspace\b|\\ensuremath\b")
_PLACEHOLDER = "\u27e6{}\u27e7"  # ⟦n⟧: plain characters pylatexenc passes through untouched
_PLACEHOLDER_PATTERN = re.compile("\u27e6(\\d+)\u27e7")


@dataclass(frozen=True, slots=True)
class MathSpan:
    """One formula: its LaTeX body and whether it is displayed."""

    body: str
    display: bool

    def delimited(self) -> str:
        return f"$${self.body}$$" if self.display else f"${self.body}$"


def split_math(text: str) -> tuple[str, list[MathSpan]]:
    """Replace every math span by a placeholder; return the text and the normalized spans."""
    out: list[str] = []
    spans: list[MathSpan] = []
    i = 0
    start = 0
    length = len(text)
    while i < length:
        found: tuple[str, bool, int] | None = None  # body, display, end position
        char = text[i]
        if char == "\\" and i + 1 < length:
            nxt = text[i + 1]
            if nxt in "([":
                close = "\\)" if nxt == "(" else "\\]"
                end = _find_unescaped(text, close, i + 2)
                if end >= 0:
                    found = (text[i + 2 : end], nxt == "[", end + 2)
            elif nxt == "b":
                match = _MATH_BEGIN.match(text, i)
                if match:
                    found = _math_environment(text, match)
            if found is None:
                i += 2
                continue
        elif char == "$":
            if text.startswith("$$", i):
                end = _find_unescaped(text, "$$", i + 2)
                if end >= 0:
                    found = (text[i + 2 : end], True, end + 2)
            else:
                end = _find_single_dollar(text, i + 1)
                if end >= 0:
                    found = (text[i + 1 : end], False, end + 1)
            if found is None:
                i += 1
                continue
        else:
            i += 1
            continue
        body, display, end = found
        body = normalize_whitespace(_DROPPED_IN_MATH.sub("", _knowledge_links_unwrapped(body)))
        body = body.replace("\n", " ").strip()
        out.append(text[start:i])
        if body:
            out.append(_PLACEHOLDER.format(len(spans)))
            spans.append(MathSpan(body, display))
        start = i = end
    out.append(text[start:])
    return "".join(out), spans


# The knowledge package links a notation to its definition: ``\\kl[key]{X}`` prints X.
_KNOWLEDGE_MACROS = ("kl", "intro", "reintro")
_KNOWLEDGE_LINK = re.compile(r"\\(?:" + "|".join(_KNOWLEDGE_MACROS) + r")\*?\s*(?=[\[{])")


def _knowledge_links_unwrapped(body: str) -> str:
    """A formula's ``\\kl[\\height]{\\mathfrak{h}}`` as what it prints, ``{\\mathfrak{h}}``."""
    if "\\kl" not in body and "intro" not in body:
        return body
    pieces: list[str] = []
    done = 0
    for match in _KNOWLEDGE_LINK.finditer(body):
        if match.start() < done:
            continue
        _, after = read_optional_argument(body, match.end())
        pieces.append(body[done : match.start()])
        done = after
    pieces.append(body[done:])
    return "".join(pieces)


def _find_unescaped(text: str, needle: str, pos: int) -> int:
    while True:
        found = text.find(needle, pos)
        if found < 0 or not _escaped(text, found):
            return found
        pos = found + 1


def _find_single_dollar(text: str, pos: int) -> int:
    """The ``$`` closing inline math opened before ``pos`` (a paragraph break ends the search)."""
    while True:
        found = _find_unescaped(text, "$", pos)
        if found < 0:
            return -1
        if "\n\n" in text[pos:found]:
            return -1
        return found


def _escaped(text: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes - 1 >= 0 and text[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _math_environment(text: str, match: re.Match[str]) -> tuple[str, bool, int] | None:
    env = match.group("env")
    end_tag = f"\\end{{{env}}}"
    end = text.find(end_tag, match.end())
    if end < 0:
        return None
    body = text[match.end() : end]
    base = env.rstrip("*")
    if base in _INLINE_ENVIRONMENTS:
        return body, False, end + len(end_tag)
    wrapper = _DISPLAY_ENVIRONMENTS[base]
    if wrapper == "alignedat":
        columns, after = read_group(body, len(body) - len(body.lstrip()))
        body = f"\\begin{{alignedat}}{{{columns}}}{body[after:]}\\end{{alignedat}}"
    elif wrapper:
        body = f"\\begin{{{wrapper}}}{body}\\end{{{wrapper}}}"
    return body, True, end + len(end_tag)


def normalize_math_delimiters(text: str) -> str:
    """``text`` with ``\\(..\\)``, ``\\[..\\]`` and math environments rewritten to ``$``/``$$``."""
    protected, spans = split_math(text)
    return _PLACEHOLDER_PATTERN.sub(lambda m: spans[int(m.group(1))].delimited(), protected)


class ReadableLatex:
    """Converts LaTeX to readable text for one document, resolving its labels."""

    _CITE_MACROS = ("cite", "citep", "citet", "Cite", "parencite", "textcite", "autocite", "citealt")
    _NAMED_REF_MACROS = ("cref", "Cref", "autoref", "Autoref", "namecref", "nameref")

    def __init__(self, labels: Mapping[str, Reference] | None = None) -> None:
        self.labels = dict(labels or {})
        # Typographic specials (`` -- ~) are left as typed: checking them at every character is a
        # fifth of the parse time, and plain ASCII suits the retrievers as well.
        parse_db = latexwalker.get_default_latex_context_db().filter_context(exclude_categories=["nonascii-specials"])
        parse_db.add_context_category(
            "rag-app",
            prepend=True,
            macros=[MacroSpec(name, "*[[{") for name in self._CITE_MACROS]
            + [MacroSpec(name, "*{") for name in (*self._NAMED_REF_MACROS, "ref", "eqref", "pageref")]
            + [MacroSpec("href", "{{")]
            + [MacroSpec(name, "*[{") for name in _KNOWLEDGE_MACROS]
            + [MacroSpec(name, "{") for name in ("label", "index")],
            # Layout environments whose arguments are not text (``\\begin{multicols}{2}`` is not "2").
            environments=[
                EnvironmentSpec("multicols", "{["),
                EnvironmentSpec("multicols*", "{["),
                EnvironmentSpec("minipage", "[[[{"),
                EnvironmentSpec("wrapfigure", "[{[{"),
                EnvironmentSpec("adjustbox", "{"),
            ],
        )
        text_db = text_context_db().filter_context()
        text_db.add_context_category(
            "rag-app",
            prepend=True,
            macros=[MacroTextSpec(name, simplify_repl=self._cite) for name in self._CITE_MACROS]
            + [MacroTextSpec(name, simplify_repl=self._named_ref) for name in self._NAMED_REF_MACROS]
            + [
                MacroTextSpec("ref", simplify_repl=self._ref),
                MacroTextSpec("eqref", simplify_repl=self._eqref),
                MacroTextSpec("pageref", simplify_repl=""),
                MacroTextSpec("href", simplify_repl="%(2)s"),
                *(MacroTextSpec(name, simplify_repl="%(3)s") for name in _KNOWLEDGE_MACROS),
                MacroTextSpec("label", simplify_repl=""),
                MacroTextSpec("index", simplify_repl=""),
                MacroTextSpec("footnote", simplify_repl=" [%(2)s]"),
                MacroTextSpec("xspace", simplify_repl=""),
                MacroTextSpec("S", simplify_repl="§"),
            ],
        )
        self._parse_db = parse_db
        self._converter = LatexNodes2Text(latex_context=text_db, math_mode="verbatim", strict_latex_spaces=False)

    def convert(self, latex: str) -> str:
        """Readable text of ``latex``; math as normalized LaTeX. Never raises on malformed input."""
        protected, spans = split_math(_ensuremath_as_math(latex))
        # A "$" left over is not math (an unclosed one would swallow the rest of the text).
        protected = re.sub(r"(?<!\\)\$", r"\\$", protected)
        protected = re.sub(r"(?<!\\)~", " ", protected)  # a tie is a space in plain text
        try:
            walker = latexwalker.LatexWalker(protected, latex_context=self._parse_db, tolerant_parsing=True)
            nodes, _, _ = walker.get_latex_nodes()
            text = self._converter.nodelist_to_text(nodes)
        except (latexwalker.LatexWalkerError, IndexError, ValueError, RecursionError):
            text = protected  # the raw text is better than nothing; math is still restored below
        text = text.replace("\xa0", " ")
        text = _PLACEHOLDER_PATTERN.sub(lambda m: _restore(spans, m), text)
        return normalize_whitespace(text)

    # ------------------------------------------------------------------ macro handlers
    @staticmethod
    def _argument(node: latexwalker.LatexMacroNode, index: int) -> str:
        arguments = node.nodeargd.argnlist if node.nodeargd else []
        if index >= len(arguments) or arguments[index] is None:
            return ""
        return arguments[index].latex_verbatim().strip().removeprefix("{").removesuffix("}").strip()

    def _keys(self, node: latexwalker.LatexMacroNode) -> list[str]:
        last = len(node.nodeargd.argnlist) - 1 if node.nodeargd else 0
        return [key.strip() for key in self._argument(node, last).split(",") if key.strip()]

    def _cite(self, node: latexwalker.LatexMacroNode, **_options: object) -> str:
        keys = ", ".join(self._keys(node))
        note = self._argument(node, 2) or self._argument(node, 1)
        if note.startswith("[") and note.endswith("]"):
            note = note[1:-1]
        note = note.replace("~", " ")
        return f"[{keys}, {note}]" if note else f"[{keys}]"

    def _ref(self, node: latexwalker.LatexMacroNode, **_options: object) -> str:
        return ", ".join(self._number(key) for key in self._keys(node))

    def _eqref(self, node: latexwalker.LatexMacroNode, **_options: object) -> str:
        return ", ".join(f"({self._number(key)})" for key in self._keys(node))

    def _named_ref(self, node: latexwalker.LatexMacroNode, **_options: object) -> str:
        names = []
        for key in self._keys(node):
            reference = self.labels.get(key)
            names.append(reference.name if reference else f"[{key}]")
        return ", ".join(names)

    def _number(self, key: str) -> str:
        reference = self.labels.get(key)
        return reference.number if reference else f"[{key}]"


def _ensuremath_as_math(latex: str) -> str:
    """``\\ensuremath{x}`` in text becomes ``\\(x\\)``; inside math the command is dropped later."""
    if "\\ensuremath" not in latex:
        return latex
    protected, spans = split_math(latex)
    out: list[str] = []
    pos = 0
    for match in re.finditer(r"\\ensuremath\s*(?=\{)", protected):
        if match.start() < pos:
            continue
        body, end = read_group(protected, match.end())
        out.append(protected[pos : match.start()] + "\\(" + body + "\\)")
        pos = end
    out.append(protected[pos:])
    return _PLACEHOLDER_PATTERN.sub(lambda m: _restore(spans, m), "".join(out))


def _restore(spans: list[MathSpan], match: re.Match[str]) -> str:
    index = int(match.group(1))
    return spans[index].delimited() if index < len(spans) else match.group(0)
