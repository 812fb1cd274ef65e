"""User macros of a LaTeX document, collected from its source and expanded in statements.

Handles ``\\newcommand``/``\\renewcommand``/``\\providecommand`` (starred too) with arguments and an
optional first-argument default, ``\\def`` with undelimited parameters, ``\\DeclareMathOperator(*)``
and ``\\let``. Expansion is bounded in the number of expansions and in the size of the result: a
macro that expands forever raises :class:`MacroExpansionError`, which fails that paper only.

pylatexenc parses LaTeX but does not expand user macros, so this is a small expander of our own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ingestion.latex_text import read_group, read_optional_argument, skip_spaces


class MacroExpansionError(ValueError):
    """A macro expands without end or beyond the size bound."""


@dataclass(frozen=True, slots=True)
class Macro:
    name: str  # without the backslash
    body: str
    arguments: int = 0
    default: str | None = None  # the first argument is optional with this default


_CONTROL_WORD = re.compile(r"\\([A-Za-z@]+)|\\(.)", re.DOTALL)
_DEFINING = re.compile(
    r"\\(?P<cmd>newcommand|renewcommand|providecommand|DeclareRobustCommand|DeclareMathOperator"
    r"|def|gdef|edef|xdef|let)(?P<star>\*?)"
)
# Bodies that program TeX (look ahead, branch, build names) cannot be expanded by substitution;
# such macros are left as written rather than expanded wrongly.
_PROGRAMMING = re.compile(
    r"\\(?:@ifnextchar|@ifstar|@ifundefined|futurelet|expandafter|csname|ifx|ifdefined|ifthenelse|ifcase"
    r"|if@|ifmmode|ifnum|ifdim|mathchoice|aftergroup|noexpand|afterassignment|edef|xdef|@tfor|@for|loop"
    r"|NewDocumentCommand|DeclareDocumentCommand|peek_|IfNoValue|IfBooleanTF)"
)
# Commands TeX itself must see; a user "redefinition" of these is not ours to expand.
_PROTECTED = frozenset({"begin", "end", "label", "ref", "cite", "def", "newcommand", "renewcommand", "section"})


class MacroTable:
    """The macros a document defines, in definition order (later definitions win, as in TeX)."""

    def __init__(self, max_expansions: int = 20_000, max_length: int = 200_000) -> None:
        self.macros: dict[str, Macro] = {}
        self.max_expansions = max_expansions
        self.max_length = max_length

    def __len__(self) -> int:
        return len(self.macros)

    def __contains__(self, name: str) -> bool:
        return name in self.macros

    @classmethod
    def from_document(cls, document: str, max_expansions: int = 20_000, max_length: int = 200_000) -> MacroTable:
        table = cls(max_expansions, max_length)
        for macro, replace in _definitions(document):
            if macro.name in _PROTECTED or _PROGRAMMING.search(macro.body):
                table.macros.pop(macro.name, None) if replace else None
                continue
            if replace or macro.name not in table.macros:
                table.macros[macro.name] = macro
        return table

    def expand(self, text: str) -> str:
        """``text`` with every known macro expanded, recursively and within the bounds."""
        if not self.macros or "\\" not in text:
            return text
        out: list[str] = []
        rest = text
        pos = 0
        expansions = 0
        while True:
            match = _CONTROL_WORD.search(rest, pos)
            if match is None:
                out.append(rest[pos:])
                break
            out.append(rest[pos : match.start()])
            name = match.group(1)
            macro = self.macros.get(name) if name else None
            if macro is None:
                out.append(match.group(0))
                pos = match.end()
                continue
            expansions += 1
            if expansions > self.max_expansions:
                raise MacroExpansionError(f"macro \\{name} expands more than {self.max_expansions} times")
            replacement, end = self._apply(macro, rest, match.end())
            rest = replacement + rest[end:]
            pos = 0
            if len(rest) + sum(map(len, out)) > self.max_length:
                raise MacroExpansionError(f"macro \\{name} expands beyond {self.max_length} characters")
        return "".join(out)

    @staticmethod
    def _apply(macro: Macro, text: str, pos: int) -> tuple[str, int]:
        """The expansion of ``macro`` called at ``pos`` and the position after its arguments."""
        arguments: list[str] = []
        needed = macro.arguments
        if macro.default is not None and needed:
            optional, pos = read_optional_argument(text, pos)
            arguments.append(macro.default if optional is None else optional)
            needed -= 1
        for _ in range(needed):
            argument, pos = _read_argument(text, pos)
            arguments.append(argument)
        body = macro.body
        if arguments:
            body = re.sub(r"#([1-9])", lambda m: _argument(arguments, int(m.group(1))), body)
        # A control word directly followed by a letter would merge with it: keep them apart.
        if macro.body and re.search(r"\\[A-Za-z@]+$", body) and pos < len(text) and text[pos].isalpha():
            body += " "
        return body, pos


def _argument(arguments: list[str], number: int) -> str:
    return arguments[number - 1] if number <= len(arguments) else ""


def _read_argument(text: str, pos: int) -> tuple[str, int]:
    """One undelimited TeX argument: a braced group, a control sequence or a single character."""
    pos = skip_spaces(text, pos)
    if pos >= len(text):
        return "", pos
    if text[pos] == "{":
        return read_group(text, pos)
    if text[pos] == "\\":
        match = _CONTROL_WORD.match(text, pos)
        if match:
            return match.group(0), match.end()
    return text[pos], pos + 1


def _definitions(document: str) -> Iterator[tuple[Macro, bool]]:
    """Every macro definition in ``document`` and whether it replaces an earlier one."""
    for match in _DEFINING.finditer(document):
        command = match.group("cmd")
        pos = match.end()
        try:
            if command in ("def", "gdef", "edef", "xdef"):
                found = _parse_def(document, pos)
                replace = True
            elif command == "let":
                found = _parse_let(document, pos)
                replace = True
            elif command == "DeclareMathOperator":
                found = _parse_operator(document, pos, starred=bool(match.group("star")))
                replace = True
            else:
                found = _parse_newcommand(document, pos)
                replace = command != "providecommand"
        except IndexError:
            found = None
        if found is not None:
            yield found, replace


def _read_name(document: str, pos: int) -> tuple[str | None, int]:
    """The macro name after a defining command: ``{\\foo}`` or ``\\foo``."""
    pos = skip_spaces(document, pos)
    if pos < len(document) and document[pos] == "{":
        inner, pos = read_group(document, pos)
        inner = inner.strip()
        match = _CONTROL_WORD.fullmatch(inner)
        return (match.group(1) if match and match.group(1) else None), pos
    match = _CONTROL_WORD.match(document, pos)
    if match and match.group(1):
        return match.group(1), match.end()
    return None, pos


def _parse_newcommand(document: str, pos: int) -> Macro | None:
    name, pos = _read_name(document, pos)
    if name is None:
        return None
    count, pos = read_optional_argument(document, pos)
    default, pos = read_optional_argument(document, pos)
    pos = skip_spaces(document, pos)
    if pos >= len(document) or document[pos] != "{":
        return None
    body, _ = read_group(document, pos)
    try:
        arguments = int(count.strip()) if count else 0
    except ValueError:
        return None
    return Macro(name, body, min(max(arguments, 0), 9), default if arguments else None)


def _parse_def(document: str, pos: int) -> Macro | None:
    match = _CONTROL_WORD.match(document, skip_spaces(document, pos))
    if not match or not match.group(1):
        return None
    pos = match.end()
    brace = document.find("{", pos)
    if brace < 0:
        return None
    parameters = document[pos:brace].strip()
    # Only undelimited parameters (#1#2...) are supported; delimited ones are left unexpanded.
    if parameters and not re.fullmatch(r"(#[1-9])+", parameters.replace(" ", "")):
        return None
    body, _ = read_group(document, brace)
    return Macro(match.group(1), body, parameters.count("#"))


def _parse_let(document: str, pos: int) -> Macro | None:
    name, pos = _read_name(document, pos)
    if name is None:
        return None
    pos = skip_spaces(document, pos)
    if pos < len(document) and document[pos] == "=":
        pos = skip_spaces(document, pos + 1)
    match = _CONTROL_WORD.match(document, pos)
    if not match or not match.group(1) or match.group(1) == name:
        return None
    return Macro(name, match.group(0))


def _parse_operator(document: str, pos: int, starred: bool) -> Macro | None:
    name, pos = _read_name(document, pos)
    if name is None:
        return None
    pos = skip_spaces(document, pos)
    body, _ = read_group(document, pos)
    command = "\\operatorname*" if starred else "\\operatorname"
    return Macro(name, f"{command}{{{body}}}")
