"""User macros of a LaTeX document, collected from its source and expanded in statements.

Handles ``\\newcommand``/``\\renewcommand``/``\\providecommand`` (starred too, the body braced or a
single token as in ``\\newcommand\\sheaf\\mathscr``) with arguments and an optional first-argument
default, xparse's ``\\NewDocumentCommand`` family (``m``, ``o``, ``O{default}`` and ``s`` arguments),
``\\def`` with undelimited parameters, ``\\DeclareMathOperator(*)`` and ``\\let`` (which copies the
meaning the macro has at that moment, as TeX's does). Expansion is bounded in the number of
expansions and in the size of the result: a macro whose expansion passes a bound costs that macro,
not the text: its calls are left as written and it is listed in :attr:`MacroTable.unexpandable`.

pylatexenc parses LaTeX but does not expand user macros, so this is a small expander of our own.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Callable

from pylatexenc import latex2text, latexwalker

from ingestion.latex_text import read_group, read_optional_argument, skip_spaces, uncommented
from ingestion.macro_definitions import CONTROL_WORD as _CONTROL_WORD
from ingestion.macro_definitions import DEFINING, Macro, definitions


class _RunawayError(Exception):
    """An expansion passed a bound; ``expanded`` counts each macro's expansions in it."""

    def __init__(self, expanded: Counter[str], reason: str) -> None:
        super().__init__(reason)
        self.expanded = expanded
        self.reason = reason


# A control sequence written out but never to be expanded again: a macro's name inside its own
# body where TeX does not expand it, or the LaTeX command a ``\let`` copied. It cannot occur in a
# source (a private-use character) and becomes a backslash when the expansion is done.
_VERBATIM_ESCAPE = "\ue000"
# How many different runaway macros one text may cost before it is left as written altogether.
_MAX_RUNAWAYS = 8


# Text ending in a control word, which a letter written right after would lengthen (``\\circ`` + ``c``).
_ENDS_IN_CONTROL_WORD = re.compile(r"\\[A-Za-z@]+$")
_LETTER_START = re.compile(r"[A-Za-z@]")
# Bodies that program TeX (look ahead, branch, build names) cannot be expanded by substitution;
# such macros are left as written rather than expanded wrongly.
_PROGRAMMING = re.compile(
    r"\\(?:@ifnextchar|@ifstar|@ifundefined|futurelet|expandafter|csname|ifx|ifdefined|ifthenelse|ifcase"
    r"|if@|ifmmode|ifnum|ifdim|mathchoice|aftergroup|noexpand|afterassignment|edef|xdef|@tfor|@for|loop"
    r"|NewDocumentCommand|DeclareDocumentCommand|peek_|IfNoValue|IfBooleanTF"
    # Boxes measured or built at run time (the common ``\\DHLhksqrt`` redefinition of ``\\sqrt``).
    r"|mathpalette|setbox|sbox|savebox)"
)
# Commands TeX itself must see; a user "redefinition" of these is not ours to expand.
_PROTECTED = frozenset({"begin", "end", "label", "ref", "cite", "def", "newcommand", "renewcommand", "section"})


class MacroTable:
    """The macros a document defines, in definition order (later definitions win, as in TeX).

    ``unexpandable``: the macros whose expansion passed a bound, each with the reason; from then on
    their calls are left as written (one runaway macro costs one macro, never the paper).
    """

    def __init__(self, max_expansions: int = 20_000, max_length: int = 200_000) -> None:
        self.macros: dict[str, Macro] = {}
        self.max_expansions = max_expansions
        self.max_length = max_length
        self.unexpandable: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.macros)

    def __contains__(self, name: str) -> bool:
        return name in self.macros

    @classmethod
    def from_document(
        cls, document: str, max_expansions: int = 20_000, max_length: int = 200_000, base: MacroTable | None = None
    ) -> MacroTable:
        """The document's macros; ``base``: what was defined before it (the paper's own packages),
        which its definitions replace and its ``\\let`` can copy."""
        return cls._collect(document, max_expansions, max_length, lambda _macro, _command, _table: True, base)

    @classmethod
    def _collect(
        cls,
        source: str,
        max_expansions: int,
        max_length: int,
        wanted: Callable[[Macro, str, MacroTable], bool],
        base: MacroTable | None = None,
    ) -> MacroTable:
        """The definitions in ``source`` that ``wanted`` accepts (given the defining command and the
        table so far), as TeX would keep them: later definitions win, ``\\providecommand`` does not
        replace, ``\\let`` copies the meaning of the moment."""
        table = cls(max_expansions, max_length)
        if base is not None:
            table.macros = dict(base.macros)
        for macro, replace, command in definitions(source):
            if not wanted(macro, command, table):
                continue
            if command == "let":
                macro = table._meaning_copied(macro)
            if macro.name in _PROTECTED or _PROGRAMMING.search(macro.body):
                table.macros.pop(macro.name, None) if replace else None
                continue
            if replace or macro.name not in table.macros:
                table.macros[macro.name] = macro
        return table

    def _meaning_copied(self, let: Macro) -> Macro:
        """``\\let\\new\\old`` (``let.body`` is ``\\old``): a copy of what ``\\old`` means now. A
        command this table does not define is LaTeX's own; ``\\new`` prints it, and a later
        redefinition of ``\\old`` does not change it (so ``\\def\\old{..\\new..}`` does not loop)."""
        target = let.body[1:]
        meaning = self.macros.get(target)
        if meaning is not None:
            return dataclasses.replace(meaning, name=let.name)
        return dataclasses.replace(let, body=_VERBATIM_ESCAPE + target)

    def only(self, keep: Callable[[Macro], bool], min_length: int = 0) -> MacroTable:
        """A table of the macros ``keep`` accepts, its size bound at least ``min_length``."""
        table = MacroTable(self.max_expansions, max(self.max_length, min_length))
        table.macros = {name: macro for name, macro in self.macros.items() if keep(macro)}
        return table

    @classmethod
    def from_package(cls, package: str, max_expansions: int = 20_000, max_length: int = 200_000) -> MacroTable:
        """The author's notation in a paper's own ``.sty``/``.cls``: new commands only.

        A package or class also redefines LaTeX's own commands to typeset (``\\item``, ``\\section``,
        ``\\par``) and defines internals (``\\@title``); expanding those would print typesetting code
        into statements, so redefinitions, internal (``@``) names and the commands LaTeX already has
        are left out.
        """
        known = standard_command_names()

        def authors_notation(macro: Macro, command: str, table: MacroTable) -> bool:
            if "@" in macro.name:
                return False
            if command.startswith(("renew", "Renew")):  # only the notation an earlier package gave
                return macro.name in table.macros
            return macro.name not in known

        return cls._collect(package, max_expansions, max_length, authors_notation)

    def expand(self, text: str) -> str:
        """``text`` with every known macro expanded, recursively and within the bounds.

        When an expansion passes a bound, the runaway macro (:meth:`_culprit`) is added to
        :attr:`unexpandable` and the text expanded again without it, its calls left as written. So a
        ``\\def\\a{\\a\\a}`` bomb costs one bounded attempt and the macro ``\\a``.
        """
        if not self.macros or "\\" not in text:
            return text
        for _ in range(_MAX_RUNAWAYS):
            try:
                return self._expand(text).replace(_VERBATIM_ESCAPE, "\\")
            except _RunawayError as runaway:
                self.unexpandable[self._culprit(runaway.expanded)] = runaway.reason
        return text

    def _culprit(self, expanded: Counter[str]) -> str:
        """The macro to blame for a runaway expansion: of those that call themselves (directly or
        through others), the one expanded most often; a macro merely called by it (``\\R`` in
        ``\\def\\a{\\R\\R\\a}``) is innocent. Failing that (a non-recursive blow-up), the most expanded."""
        recursive = [name for name in expanded if self._calls_itself(name)]
        return max(recursive or expanded, key=lambda name: expanded[name])

    def _calls_itself(self, name: str) -> bool:
        """Whether ``\\name``'s body leads back to ``\\name`` through the macros of this table."""
        seen: set[str] = set()
        frontier = [name]
        while frontier:
            macro = self.macros.get(frontier.pop())
            if macro is None:
                continue
            for call in _called_names(macro):
                if call == name:
                    return True
                if call not in seen and call not in self.unexpandable:
                    seen.add(call)
                    frontier.append(call)
        return False

    def _expand(self, text: str) -> str:
        out: list[str] = []
        out_length = 0
        rest = text
        pos = 0
        expansions = 0
        expanded: Counter[str] = Counter()  # per macro, to name the runaway
        while True:
            match = _CONTROL_WORD.search(rest, pos)
            if match is None:
                out.append(rest[pos:])
                break
            if match.start() > pos:
                out.append(rest[pos : match.start()])
                out_length += match.start() - pos
            name = match.group(1)
            macro = self.macros.get(name) if name and name not in self.unexpandable else None
            if macro is None:
                out.append(match.group(0))
                out_length += len(match.group(0))
                pos = match.end()
                continue
            expanded[name] += 1
            expansions += 1
            if expansions > self.max_expansions:
                raise _RunawayError(expanded, f"expands more than {self.max_expansions} times")
            replacement, end = self._apply(macro, rest, match.end())
            if out:  # ``\\mapsto\\compose{t}``: ``\\mapsto t``, not ``\\mapstot``
                replacement = _apart(out[-1], replacement) + replacement
            rest = replacement + rest[end:]
            pos = 0
            if len(rest) + out_length > self.max_length:
                raise _RunawayError(expanded, f"expands beyond {self.max_length} characters")
        return "".join(out)

    @staticmethod
    def _apply(macro: Macro, text: str, pos: int) -> tuple[str, int]:
        """The expansion of ``macro`` called at ``pos`` and the position after its arguments."""
        arguments: list[str] = []
        for kind, default in macro.parameters():
            if kind == "o":
                optional, pos = read_optional_argument(text, pos)
                arguments.append(default if optional is None else optional)
            elif kind == "s":
                star = skip_spaces(text, pos)
                starred = star < len(text) and text[star] == "*"
                pos = star + 1 if starred else pos
                arguments.append("")  # only bodies that branch on it (left unexpanded) could use it
            else:
                argument, pos = _read_argument(text, pos)
                arguments.append(argument)
        body = _expandable_body(macro)
        if arguments:
            body = _PARAMETER.sub(lambda m: _substituted(m, arguments), body)
        # A control word directly followed by a letter would merge with it: keep them apart.
        body += _apart(body, text[pos : pos + 1])
        return body, pos


def _called_names(macro: Macro) -> set[str]:
    """The control words a macro's body calls (its own name where TeX never expands it excluded)."""
    return {match.group(1) for match in _CONTROL_WORD.finditer(_expandable_body(macro)) if match.group(1)}


def _expandable_body(macro: Macro) -> str:
    """The body to expand: as written, or with its own name kept where TeX never expands it."""
    return _own_name_kept(macro) if "\\" + macro.name in macro.body else macro.body


_OPTIONAL_ARGUMENT_START = re.compile(r"\\[A-Za-z@]+\*?\s*(?=\[)")


@functools.lru_cache(maxsize=4096)
def _own_name_kept(macro: Macro) -> str:
    """The macro's body with its own name, where it stands in an optional argument, kept as written.

    TeX does not expand a key (``\\kl[\\height]{...}``, the knowledge package's idiom for linking a
    notation to its definition), so a macro can name itself there and still expand once; expanded
    again, it would grow without end.
    """
    own = re.compile(r"\\" + re.escape(macro.name) + r"(?![A-Za-z@])")
    pieces: list[str] = []
    done = 0
    for match in _OPTIONAL_ARGUMENT_START.finditer(macro.body):
        if match.start() < done:
            continue
        _, end = read_optional_argument(macro.body, match.end())
        pieces.append(macro.body[done : match.end()])
        pieces.append(own.sub(lambda _: _VERBATIM_ESCAPE + macro.name, macro.body[match.end() : end]))
        done = end
    pieces.append(macro.body[done:])
    return "".join(pieces)


def _argument(arguments: list[str], number: int) -> str:
    return arguments[number - 1] if number <= len(arguments) else ""


# A parameter with the control word before it and the character after it, if any.
_PARAMETER = re.compile(r"(\\[A-Za-z@]+)?#([1-9])(?=(.?))", re.DOTALL)


def _substituted(parameter: re.Match[str], arguments: list[str]) -> str:
    """An argument in place of its parameter, kept apart from a control word beside it: TeX reads
    the body as tokens, so ``\\lVert#1`` with ``v`` is ``\\lVert v``, never ``\\lVertv``."""
    command = parameter.group(1) or ""
    argument = _argument(arguments, int(parameter.group(2)))
    return command + _apart(command, argument) + argument + _apart(argument, parameter.group(3))


def _apart(left: str, right: str) -> str:
    """A space when ``left`` ends in a control word that ``right``'s first letter would lengthen
    (``\\circ`` then ``c``), else nothing: text joined during expansion reads as TeX's tokens did."""
    return " " if _LETTER_START.match(right) and _ENDS_IN_CONTROL_WORD.search(left) else ""


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


# TeX and LaTeX commands that packages redefine for typesetting and pylatexenc does not list.
_TYPESETTING = frozenset(
    {
        *("par", "item", "relax", "newline", "linebreak", "noindent", "indent", "vskip", "hskip", "hbox", "vbox"),
        *("label", "ref", "cite", "caption", "footnote", "maketitle", "title", "author", "date", "thanks"),
        *("address", "email", "keywords", "subjclass", "abstract", "tableofcontents", "bibliography"),
        *("bibliographystyle", "appendix", "chapter", "part", "paragraph", "subparagraph", "normalsize"),
        *("small", "large", "Large", "LARGE", "tiny", "footnotesize", "scriptsize", "huge", "Huge"),
        *("selectfont", "fontsize", "rm", "sf", "tt", "bf", "it", "sl", "sc", "em", "S", "P"),
        *("theoremstyle", "newtheorem", "proof", "qed", "qedsymbol", "endproof"),
    }
)


@functools.cache
def standard_command_names() -> frozenset[str]:
    """Commands LaTeX and its common packages define (as pylatexenc knows them), plus typesetting ones."""
    names = {spec.macroname for spec in latexwalker.get_default_latex_context_db().iter_macro_specs()}
    names |= {spec.macroname for spec in latex2text.get_default_latex_context_db().iter_macro_specs()}
    return frozenset(names | _TYPESETTING)


def definition_line(source: str, name: str) -> int | None:
    """The line (1-based) of the last definition of ``\\name`` in ``source``, comments ignored."""
    defining = re.compile(DEFINING.pattern + r"\s*\{?\s*\\" + re.escape(name) + r"(?![A-Za-z@])")
    found = None
    for number, line in enumerate(source.splitlines(), start=1):
        if defining.search(uncommented(line)):
            found = number
    return found
