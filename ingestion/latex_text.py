"""Low-level LaTeX text helpers: comments, balanced groups, math spans.

These work on raw source text and never raise on malformed input: an unbalanced group is
treated as running to the end of the text.
"""

from __future__ import annotations

import re

from ingestion.formula_spans import find_formula_spans

_COMMENT_ENV = re.compile(r"\\begin\{comment\}.*?\\end\{comment\}", re.DOTALL)
_IFFALSE = re.compile(r"\\iffalse\b.*?\\fi\b", re.DOTALL)


def strip_comments(source: str) -> str:
    """Remove ``%`` comments (not ``\\%``), ``comment`` environments and ``\\iffalse`` blocks.

    A ``%`` is a comment when it is preceded by an even number of backslashes. A line that
    held only a comment disappears entirely, as TeX would not see a paragraph break there.
    """
    out_lines: list[str] = []
    for line in source.splitlines():
        cut = _comment_start(line)
        if cut is None:
            out_lines.append(line)
        elif line[:cut].strip():
            out_lines.append(line[:cut])
    text = "\n".join(out_lines)
    text = _COMMENT_ENV.sub("", text)
    return _IFFALSE.sub("", text)


_BRACE_OR_ESCAPE = re.compile(r"\\.|[{}]", re.DOTALL)


def brace_depth(text: str) -> int:
    """How deep groups nest in ``text`` (``\\{`` and ``\\}`` are characters, not groups)."""
    if text.count("{") < 2:
        return text.count("{")
    depth = deepest = 0
    for match in _BRACE_OR_ESCAPE.finditer(text):
        brace = match.group(0)
        if brace == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif brace == "}":
            depth = max(depth - 1, 0)
    return deepest


def uncommented(line: str) -> str:
    """One source line without its ``%`` comment."""
    cut = _comment_start(line)
    return line if cut is None else line[:cut]


def _comment_start(line: str) -> int | None:
    start = 0
    while True:
        pos = line.find("%", start)
        if pos < 0:
            return None
        backslashes = 0
        i = pos - 1
        while i >= 0 and line[i] == "\\":
            backslashes += 1
            i -= 1
        if backslashes % 2 == 0:
            return pos
        start = pos + 1


def read_group(text: str, pos: int, open_char: str = "{", close_char: str = "}") -> tuple[str, int]:
    """Read a balanced group starting at ``text[pos] == open_char``.

    Returns the inside of the group and the position just after its closing character.
    Escaped delimiters (``\\{``) do not count. An unclosed group runs to the end.
    """
    if pos >= len(text) or text[pos] != open_char:
        return "", pos
    depth = 0
    i = pos
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == open_char:
            depth += 1
        elif char == close_char:
            depth -= 1
            if depth == 0:
                return text[pos + 1 : i], i + 1
        i += 1
    return text[pos + 1 :], len(text)


def read_optional_argument(text: str, pos: int) -> tuple[str | None, int]:
    """Read ``[...]`` after optional whitespace (brackets inside braces do not close it)."""
    i = skip_spaces(text, pos)
    if i >= len(text) or text[i] != "[":
        return None, pos
    depth = 0
    brace_depth = 0
    j = i
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == "{":
            brace_depth += 1
        elif char == "}":
            brace_depth -= 1
        elif brace_depth == 0 and char == "[":
            depth += 1
        elif brace_depth == 0 and char == "]":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
        j += 1
    return None, pos


def read_required_argument(text: str, pos: int) -> tuple[str | None, int]:
    """Read ``{...}`` after optional whitespace."""
    i = skip_spaces(text, pos)
    if i >= len(text) or text[i] != "{":
        return None, pos
    return read_group(text, i)


def skip_spaces(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def normalize_whitespace(text: str) -> str:
    """Collapse runs of spaces and keep at most one blank line between paragraphs."""
    lines = [" ".join(line.split()) for line in text.strip().splitlines()]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text)


def extract_formulas(text: str) -> list[str]:
    """Every math span in ``text`` (inline and display), as LaTeX without its delimiters."""
    return [span.latex for span in find_formula_spans(text)]
