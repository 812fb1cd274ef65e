"""Macro definitions read from a LaTeX source: ``\\newcommand`` and its family, xparse's
``\\NewDocumentCommand``, ``\\def``, ``\\let`` and ``\\DeclareMathOperator`` (see
:mod:`ingestion.latex_macros`, which expands them)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ingestion.latex_text import read_group, read_optional_argument, skip_spaces

CONTROL_WORD = re.compile(r"\\([A-Za-z@]+)|\\(.)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Macro:
    name: str  # without the backslash
    body: str
    arguments: int = 0
    default: str | None = None  # the first argument is optional with this default
    # xparse argument types in order ("m" mandatory, "o" optional, "s" star) with the optional ones'
    # defaults; empty for the classic forms, which ``arguments`` and ``default`` describe.
    signature: tuple[tuple[str, str], ...] = ()

    def parameters(self) -> tuple[tuple[str, str], ...]:
        """Each argument's type and default, whatever form defined the macro."""
        if self.signature:
            return self.signature
        if self.default is not None and self.arguments:
            return (("o", self.default),) + (("m", ""),) * (self.arguments - 1)
        return (("m", ""),) * self.arguments


DEFINING = re.compile(
    r"\\(?P<cmd>newcommand|renewcommand|providecommand|DeclareRobustCommand|DeclareMathOperator"
    r"|NewDocumentCommand|RenewDocumentCommand|ProvideDocumentCommand|DeclareDocumentCommand"
    r"|def|gdef|edef|xdef|let)(?P<star>\*?)"
)


def definitions(document: str) -> Iterator[tuple[Macro, bool, str]]:
    """Every macro definition in ``document``, whether it replaces an earlier one, and its command."""
    for match in DEFINING.finditer(document):
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
            elif command.endswith("DocumentCommand"):
                found = _parse_document_command(document, pos)
                replace = not command.startswith("Provide")
            else:
                found = _parse_newcommand(document, pos)
                replace = command != "providecommand"
        except IndexError:
            found = None
        if found is not None:
            yield found, replace, command


def _read_name(document: str, pos: int) -> tuple[str | None, int]:
    """The macro name after a defining command: ``{\\foo}`` or ``\\foo``."""
    pos = skip_spaces(document, pos)
    if pos < len(document) and document[pos] == "{":
        inner, pos = read_group(document, pos)
        inner = inner.strip()
        match = CONTROL_WORD.fullmatch(inner)
        return (match.group(1) if match and match.group(1) else None), pos
    match = CONTROL_WORD.match(document, pos)
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
    if pos >= len(document):
        return None
    if document[pos] == "{":
        body, _ = read_group(document, pos)
    else:  # \newcommand\sheaf\mathscr: the body is one token
        token = CONTROL_WORD.match(document, pos)
        body = token.group(0) if token else document[pos]
    try:
        arguments = int(count.strip()) if count else 0
    except ValueError:
        return None
    return Macro(name, body, min(max(arguments, 0), 9), default if arguments else None)


def _parse_def(document: str, pos: int) -> Macro | None:
    match = CONTROL_WORD.match(document, skip_spaces(document, pos))
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
    match = CONTROL_WORD.match(document, pos)
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


_XPARSE_TYPE = re.compile(r"\s*(?P<prefix>[+!]*)\s*(?P<kind>[mosO])")


def _parse_document_command(document: str, pos: int) -> Macro | None:
    """``\\NewDocumentCommand{\\name}{m O{default} o s}{body}``; other argument types are not
    supported and leave the macro unexpanded."""
    name, pos = _read_name(document, pos)
    if name is None:
        return None
    pos = skip_spaces(document, pos)
    if pos >= len(document) or document[pos] != "{":
        return None
    spec, pos = read_group(document, pos)
    pos = skip_spaces(document, pos)
    if pos >= len(document) or document[pos] != "{":
        return None
    body, _ = read_group(document, pos)
    signature: list[tuple[str, str]] = []
    at = 0
    while at < len(spec.rstrip()):
        match = _XPARSE_TYPE.match(spec, at)
        if match is None:
            return None
        at = match.end()
        kind = match.group("kind")
        if kind == "O":
            at = skip_spaces(spec, at)
            if at >= len(spec) or spec[at] != "{":
                return None
            default, at = read_group(spec, at)
            signature.append(("o", default))
        else:
            signature.append((kind, ""))
    if len(signature) > 9:
        return None
    return Macro(name, body, len(signature), signature=tuple(signature))
