"""Math StackExchange HTML (post bodies, ARQMath topics) to readable text with the math kept as LaTeX."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag

# Elements whose content is not text to read: code that runs, styles, embedded documents and forms.
# Their subtrees are dropped whole; of the rest only text is kept (no tags, no attributes), so what
# is stored is text that another program can show without running anything.
_NOT_TEXT = {
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed", "applet",
    "form", "input", "button", "select", "textarea", "link", "meta", "base", "head", "title", "svg", "canvas",
    "audio", "video", "source", "track",
}  # fmt: skip
_BLOCKS = {"p", "div", "li", "ul", "ol", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "tr"}
_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)"))  # longest first
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.DOTALL)


def html_to_text(html: str) -> str:
    """Text of an MSE HTML fragment: math spans as ``$...$``/``$$...$$``, links by their text,
    images by their alt text, block quotes prefixed with ``>``, code kept verbatim."""
    return _soup_to_text(BeautifulSoup(html, "html.parser"))


def convert_post(html: str, post_id: int | str) -> tuple[str, list[Formula]]:
    """A post's text and its formulas, from one parse of its HTML."""
    soup = BeautifulSoup(html, "html.parser")
    formulas = _formulas(soup, post_id)  # before the walk: it reads the spans, the walk does not change them
    return _soup_to_text(soup), formulas


def _soup_to_text(soup: BeautifulSoup) -> str:
    parts: list[str] = []
    _walk(soup, parts)
    text = "".join(parts)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def math_spans(html: str) -> list[str]:
    """The LaTeX of every formula in an MSE HTML fragment, in order, without delimiters."""
    return [formula.latex for formula in post_formulas(html, "")]


def _walk(node: Tag, parts: list[str]) -> None:
    for child in node.children:
        if isinstance(child, NavigableString):
            # Runs of spaces in prose collapse; math and code (handled below) keep theirs.
            parts.append(re.sub(r"[ \t]{2,}", " ", str(child)))
            continue
        if not isinstance(child, Tag):
            continue
        name = child.name
        if name in _NOT_TEXT:
            continue
        if name == "span" and "math-container" in (child.get("class") or []):
            parts.append(_delimited_math(child))
        elif name == "img":
            alt = child.get("alt") or ""
            parts.append(f"[image: {alt}]" if alt else "[image]")
        elif name == "br":
            parts.append("\n")
        elif name == "pre":
            parts.append("\n```\n" + child.get_text().strip("\n") + "\n```\n")
        elif name == "blockquote":
            inner: list[str] = []
            _walk(child, inner)
            quoted = "\n".join("> " + line if line.strip() else ">" for line in "".join(inner).strip().splitlines())
            parts.append("\n" + quoted + "\n")
        elif name == "li":
            parts.append("\n- ")
            _walk(child, parts)
        else:
            if name in _BLOCKS:
                parts.append("\n")
            _walk(child, parts)
            if name in _BLOCKS:
                parts.append("\n")


def _delimited_math(span: Tag) -> str:
    """A formula span's LaTeX with its delimiters: MSE's own dumps keep ``$``/``$$`` inside the span,
    the ARQMath collection strips them (``<span class="math-container" id="N">x^2</span>``)."""
    latex = span.get_text()
    if _has_delimiters(latex):
        return latex
    latex = latex.strip()
    if not latex:
        return ""
    # Without delimiters a display formula is told by standing on its own line (or being an environment).
    if latex.startswith("\\begin{") or _on_own_line(span):
        return f"$${latex}$$"
    return f"${latex}$"


def _has_delimiters(latex: str) -> bool:
    latex = latex.strip()
    return any(
        latex.startswith(left) and latex.endswith(right) and len(latex) >= len(left) + len(right)
        for left, right in _DELIMITERS
    )


def _on_own_line(span: Tag) -> bool:
    parent = span.parent
    if parent is None or (parent.name not in _BLOCKS and parent.name != "[document]"):
        return False
    return _clear_side(span.previous_siblings, before=True) and _clear_side(span.next_siblings, before=False)


def _clear_side(siblings: Iterator[PageElement], before: bool) -> bool:
    """Whether nothing but white space stands between the span and a line break on one side."""
    for sibling in siblings:
        if isinstance(sibling, NavigableString):
            text = str(sibling)
            edge = text.rstrip(" \t") if before else text.lstrip(" \t")
            if not edge:
                continue
            return edge.endswith("\n") if before else edge.startswith("\n")
        if isinstance(sibling, Tag):
            return sibling.name == "br" or sibling.name in _BLOCKS
    return True


def _strip_delimiters(latex: str) -> str:
    latex = latex.strip()
    for left, right in _DELIMITERS:
        if latex.startswith(left) and latex.endswith(right) and len(latex) >= len(left) + len(right):
            return latex[len(left) : len(latex) - len(right)].strip()
    return latex


@dataclass(frozen=True, slots=True)
class Formula:
    """A formula of a post: ``post.index`` as id (the span's own id when the HTML has one)."""

    formula_id: str
    latex: str


def post_formulas(html: str, post_id: int | str) -> list[Formula]:
    """Every formula of a post with an id, found as the ARQMath organizers did: the
    ``math-container`` spans when present, else ``$...$`` and ``$$...$$`` in the text."""
    return _formulas(BeautifulSoup(html, "html.parser"), post_id)


def _formulas(soup: BeautifulSoup, post_id: int | str) -> list[Formula]:
    containers = soup.find_all("span", class_="math-container")
    if containers:
        return [
            Formula(str(span.get("id") or f"{post_id}.{index}"), _strip_delimiters(span.get_text()))
            for index, span in enumerate(containers)
        ]
    return [
        Formula(f"{post_id}.{index}", (m.group(1) or m.group(2)).strip())
        for index, m in enumerate(_MATH_SPAN.finditer(soup.get_text()))
    ]
