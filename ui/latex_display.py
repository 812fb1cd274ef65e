"""Make LaTeX in answers and statements render in Streamlit's Markdown.

Streamlit renders ``$...$`` and ``$$...$$`` but not ``\\(...\\)`` or ``\\[...\\]``, nor the
display environments of papers; code spans and blocks are left untouched.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_DISPLAY_ENV = re.compile(
    r"\\begin\{(equation|align|gather|multline|eqnarray|displaymath)(\*?)\}(.*?)\\end\{\1\2\}", re.DOTALL
)


def to_streamlit_markdown(text: str) -> str:
    parts = []
    last = 0
    for match in _CODE.finditer(text):
        parts.append(_convert(text[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(_convert(text[last:]))
    return "".join(parts)


def _convert(text: str) -> str:
    text = re.sub(r"\\\[(.+?)\\\]", lambda m: f"\n$$\n{m.group(1).strip()}\n$$\n", text, flags=re.DOTALL)
    text = re.sub(r"\\\((.+?)\\\)", lambda m: f"${m.group(1).strip()}$", text, flags=re.DOTALL)

    def display(match: re.Match[str]) -> str:
        body = match.group(3).strip()
        if match.group(1) in ("align", "eqnarray"):
            body = f"\\begin{{aligned}}{body}\\end{{aligned}}"
        body = re.sub(r"\\(label|nonumber|notag)(\{[^}]*\})?", "", body)
        return f"\n$$\n{body}\n$$\n"

    text = _DISPLAY_ENV.sub(display, text)
    # "$$" glued to text on one line does not render as display math in Markdown.
    return re.sub(r"\$\$(.+?)\$\$", lambda m: f"\n$$\n{m.group(1).strip()}\n$$\n", text, flags=re.DOTALL)


_MATH_OR_CODE = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|(?<!\\)\$[^$]*?(?<!\\)\$", re.DOTALL)
_CITATION = re.compile(r"(?<![\\\[])\[(\d+)\](?!\()")


def link_citations(markdown: str, anchor: str, count: int) -> str:
    """Turn ``[n]`` (1 ≤ n ≤ count) outside math and code into a link to ``#{anchor}-{n}``.

    Run it on the output of :func:`to_streamlit_markdown`, whose math is in dollar signs.
    """

    def link(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f"[\\[{number}\\]](#{anchor}-{number})" if 1 <= number <= count else match.group(0)

    parts = []
    last = 0
    for match in _MATH_OR_CODE.finditer(markdown):
        parts.append(_CITATION.sub(link, markdown[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(_CITATION.sub(link, markdown[last:]))
    return "".join(parts)
