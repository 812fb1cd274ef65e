"""Find theorem-like environments in a flattened LaTeX document.

Custom environments declared with ``\\newtheorem`` (and thmtools' ``\\declaretheorem``) are
mapped to canonical kinds by their printed title ("Main Theorem" is a theorem), falling back
to the environment name's usual abbreviations (``thm``, ``lem``, ``defn``, ...).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from pylatexenc.latex2text import LatexNodes2Text

from ingestion.latex_macros import MacroTable
from ingestion.latex_text import (
    normalize_whitespace,
    read_optional_argument,
    read_required_argument,
)
from ingestion.records import StatementKind
from ingestion.statement_kinds import (  # noqa: F401 - kind_for, title_kind: their old home
    KIND_KEYWORDS,
    is_proof_environment,
    kind_for,
    title_kind,
    without_accents,
)


@dataclass(frozen=True, slots=True)
class TheoremEnvironment:
    """A theorem-like environment the document can use, with how it is numbered."""

    name: str
    title: str
    kind: StatementKind
    counter: str = ""  # the counter it steps: its own name, or the one it shares
    within: str = ""  # the sectioning counter that resets it ("section" gives 3.2)
    numbered: bool = True
    # A ``\\newenvironment`` wrapper whose first argument is printed: "title" when it is the heading
    # (``\\begin{thm}{Exercise}``: the kind comes from it), "name" when it is the statement's name.
    title_argument: str = ""


_NEWTHEOREM = re.compile(r"\\(?:sp)?newtheorem(?P<star>\*?)\s*\{(?P<name>[^{}]+)\}")
_DECLARETHEOREM = re.compile(
    r"\\declaretheorem\s*(?:\[(?P<opts>[^\]]*)\])?\s*\{(?P<name>[^{}]+)\}(?:\s*\[(?P<after>[^\]]*)\])?"
)
_OPTION = re.compile(r"(?:^|,)\s*(?P<key>[A-Za-z]+)\s*=\s*\{?(?P<value>[^,}]+)\}?")
_NEWENVIRONMENT = re.compile(r"\\(?:re)?newenvironment\*?\s*\{(?P<name>[^{}#\\]+)\}")
_BEGIN_CODE_MACRO = re.compile(r"\s*\\(?P<macro>[A-Za-z@]+)\s*$")
_STEPPED_COUNTER = re.compile(r"\\(?:refstepcounter|stepcounter)\s*\{(?P<counter>[^{}]+)\}")


_HEADING_TEXT = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=False)


def _title_macros_resolved(title: str, macros: Callable[[], MacroTable]) -> str:
    """``\\protect\\lemmaname`` (LyX, babel) to what the document defines it as ("Lemme")."""
    if "\\" not in title:
        return title
    return macros().expand(re.sub(r"\\protect\b\s*", "", title))


def _is_bare_heading(title: str) -> bool:
    """ "Exercise", "Lemma 3", "Remarks.": a heading that only says the kind, not a name."""
    words = re.sub(r"[\d.:\s]+$", "", title.strip()).lower()
    return words in KIND_KEYWORDS or (words.endswith("s") and words[:-1] in KIND_KEYWORDS)


def _wrapper_environments(
    document: str, known: dict[str, TheoremEnvironment], macros: Callable[[], MacroTable]
) -> dict[str, TheoremEnvironment]:
    """Theorem-like environments defined with ``\\newenvironment``: those wrapping a theorem-like one
    (``{\\begin{theorem}[#1]}{\\end{theorem}}``) and those of a theorem-like name whose begin code
    prints their first argument as the heading (``\\newenvironment{thm}{\\claim}{\\endclaim}`` with
    ``\\def\\claim#1{...}``)."""
    found: dict[str, TheoremEnvironment] = {}
    for match in _NEWENVIRONMENT.finditer(document):
        name = match.group("name").strip()
        count, pos = read_optional_argument(document, match.end())
        default, pos = read_optional_argument(document, pos)
        begin_code, _ = read_required_argument(document, pos)
        if begin_code is None or is_proof_environment(name):
            continue
        arguments = int(count) if count and count.strip().isdigit() else 0
        wrapped = re.search(r"\\begin\s*\{([^{}]+)\}", begin_code)
        inner = known.get(wrapped.group(1)) if wrapped else None
        if wrapped and inner is None and kind_for(wrapped.group(1)) is not None:
            inner_kind = kind_for(wrapped.group(1)) or StatementKind.OTHER
            inner = TheoremEnvironment(wrapped.group(1), inner_kind.title, inner_kind, wrapped.group(1))
        if inner is not None:
            takes_name = arguments > 0 and default is None and "#1" in begin_code
            found[name] = TheoremEnvironment(
                name, inner.title, inner.kind, inner.counter, inner.within, inner.numbered, "name" if takes_name else ""
            )
            continue
        kind = kind_for(name)
        if kind is None:
            continue
        only_macro = _BEGIN_CODE_MACRO.match(begin_code)
        heading_macro = macros().macros.get(only_macro.group("macro")) if only_macro else None
        prints_argument = (arguments > 0 and default is None and "#1" in begin_code) or (
            heading_macro is not None and arguments == 0 and heading_macro.arguments > 0
        )
        # A heading printed by the begin code carries a number only where that code steps a counter
        # (``\\def\\claim#1{\\refstepcounter{thm}\\textbf{\\thethm. #1.}}``).
        stepped = _STEPPED_COUNTER.search(begin_code + (heading_macro.body if heading_macro else ""))
        numbered = not name.endswith("*") and (not prints_argument or stepped is not None)
        counter = stepped.group("counter").strip() if stepped else name.rstrip("*")
        found[name] = TheoremEnvironment(
            name, kind.title, kind, counter, "", numbered, "title" if prints_argument else ""
        )
    return found


def theorem_environments(document: str, macros: MacroTable | None = None) -> dict[str, TheoremEnvironment]:
    """Every theorem-like environment declared in ``document`` plus undeclared common names.

    ``\\theoremstyle{definition}`` before a declaration only changes typesetting; the kind comes
    from the title, so a "Remark" declared under the definition style is still a remark. ``macros``:
    the document's macros (read from it, when needed, if not given), for titles such as
    ``\\protect\\lemmaname`` and for wrappers whose begin code is a macro taking the heading.
    """
    table = functools.cache(lambda: macros if macros is not None else MacroTable.from_document(document))
    environments: dict[str, TheoremEnvironment] = {}
    for match in _NEWTHEOREM.finditer(document):
        name = match.group("name").strip()
        if "#" in name or "\\" in name:  # a \newtheorem inside a macro definition
            continue
        pos = match.end()
        shared, pos = read_optional_argument(document, pos)
        title, pos = read_required_argument(document, pos)
        within, _ = read_optional_argument(document, pos) if shared is None else (None, pos)
        title = normalize_whitespace(_title_macros_resolved(title or name, table))
        if is_proof_environment(name, title):
            continue
        kind = kind_for(name, title) or StatementKind.OTHER
        numbered = not match.group("star")
        counter = (shared or name).strip()
        own = TheoremEnvironment(name, title, kind, counter, (within or "").strip(), numbered)
        environments[name] = own
        if numbered:
            environments[name + "*"] = TheoremEnvironment(name + "*", title, kind, counter, own.within, False)
    for match in _DECLARETHEOREM.finditer(document):
        name = match.group("name").strip()
        options = {
            m.group("key").lower(): m.group("value").strip()
            for m in _OPTION.finditer(",".join(filter(None, (match.group("opts"), match.group("after")))))
        }
        title = options.get("name") or options.get("title") or name.capitalize()
        if is_proof_environment(name, title):
            continue
        kind = kind_for(name, title) or StatementKind.OTHER
        numbered = options.get("numbered", "yes").lower() != "no"
        counter = options.get("sibling") or options.get("sharenumber") or options.get("sharecounter") or name
        within = options.get("numberwithin") or options.get("parent") or ""
        environments[name] = TheoremEnvironment(name, title, kind, counter, within, numbered)
        environments[name + "*"] = TheoremEnvironment(name + "*", title, kind, counter, within, False)
    environments.update(_wrapper_environments(document, environments, table))
    for name in set(re.findall(r"\\begin\{([A-Za-z]+\*?)\}", document)):
        if name not in environments and not is_proof_environment(name):
            kind = kind_for(name)
            if kind is not None:
                environments[name] = TheoremEnvironment(
                    name, kind.title, kind, name.rstrip("*"), "", not name.endswith("*")
                )
    return environments


def proof_environments(document: str) -> frozenset[str]:
    """The environments that hold proofs in ``document``: ``proof`` and ``proof*``, any used one of a
    proof's name (``pf``), and any declared one whose title says proof (``\\newtheorem{Proof}{Proof of
    the main theorem}``)."""
    names = {"proof", "proof*"}
    for match in _NEWTHEOREM.finditer(document):
        title, _ = read_required_argument(document, read_optional_argument(document, match.end())[1])
        if is_proof_environment(match.group("name").strip(), title or ""):
            names.add(match.group("name").strip())
    names.update(name for name in re.findall(r"\\begin\{([A-Za-z]+\*?)\}", document) if is_proof_environment(name))
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class ExtractedStatement:
    """A statement as found in the source, before it becomes a record."""

    environment: str
    kind: StatementKind
    name: str
    label: str
    text: str
    proof: str
    section: str
    subsection: str
    offset: int
    labels: tuple[str, ...] = ()  # every label at the statement's own level; ``label`` is the first
    end: int = 0  # where its source ends (after its proof, when the proof follows it)
    section_label: str = ""  # the label of the section it sits in (another paper may reference it)
    subsection_label: str = ""
    proof_heading: str = ""  # its proof's optional heading, where references hide too


# A label may hold one level of braces: \label{thm:E_{1,s}}.
_LABEL = re.compile(r"\\label\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
# "\\[" opens a display, but not in "\\\\[2pt]" (a line break with its spacing).
_NESTING = re.compile(r"\\(?P<edge>begin|end)\s*\{[^{}]*\}|(?<!\\)\\\[|(?<!\\)\\\]")
_LABEL_AFTER_HEADING = re.compile(r"\s*\\label\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_HEADING = re.compile(r"\\(?P<level>chapter|section|subsection)\*?(?=[\s\[{])")


def split_label(body: str) -> tuple[str, str]:
    """The statement's label (its first ``\\label`` given at its own level, not inside a nested
    environment or display such as an equation's) and its text with every ``\\label`` removed."""
    labels, text = split_labels(body)
    return (labels[0] if labels else ""), text


def split_labels(body: str) -> tuple[tuple[str, ...], str]:
    """Every label given at the statement's own level, in order, and its text without labels."""
    labels = [m.group(1).strip() for m in _LABEL.finditer(body) if _nesting_depth(body, m.start()) == 0]
    return tuple(dict.fromkeys(label for label in labels if label)), normalize_whitespace(_LABEL.sub("", body))


def _nesting_depth(body: str, position: int) -> int:
    """How many environments (``\\begin``/``\\end``) and ``\\[ ... \\]`` displays are open at ``position``."""
    depth = 0
    for match in _NESTING.finditer(body, 0, position):
        opens = match.group("edge") == "begin" or match.group(0) == "\\["
        depth = depth + 1 if opens else max(0, depth - 1)
    return depth


class Headings:
    """Positions of chapter/section/subsection titles, with the label each heading carries, for looking up
    where a statement (or a label) sits."""

    def __init__(self, document: str) -> None:
        self.sections: list[tuple[int, str]] = []
        self.subsections: list[tuple[int, str]] = []
        self.section_labels: list[tuple[int, str]] = []
        self.subsection_labels: list[tuple[int, str]] = []
        for match in _HEADING.finditer(document):
            _, pos = read_optional_argument(document, match.end())
            title, after = read_required_argument(document, pos)
            if title is None:
                continue
            # its label: inside the title, or right after it (\section{Foo}\label{section-foo})
            inside = _LABEL.search(title)
            following = _LABEL_AFTER_HEADING.match(document, after)
            label = (inside or following).group(1).strip() if inside or following else ""
            title = normalize_whitespace(_LABEL.sub("", title)).replace("\n", " ")
            if match.group("level") == "subsection":
                self.subsections.append((match.start(), title))
                self.subsection_labels.append((match.start(), label))
            else:
                self.sections.append((match.start(), title))
                self.section_labels.append((match.start(), label))
                # A new section ends the previous subsection.
                self.subsections.append((match.start(), ""))
                self.subsection_labels.append((match.start(), ""))

    def at(self, offset: int) -> tuple[str, str]:
        return _latest(self.sections, offset), _latest(self.subsections, offset)

    def labels_at(self, offset: int) -> tuple[str, str]:
        """The labels of the section and subsection around ``offset`` ("" where unlabelled)."""
        return _latest(self.section_labels, offset), _latest(self.subsection_labels, offset)


def _latest(entries: list[tuple[int, str]], offset: int) -> str:
    index = bisect.bisect_right([pos for pos, _ in entries], offset) - 1
    return entries[index][1] if index >= 0 else ""


def _braced_annotation(document: str, start: int, end: int) -> tuple[str | None, int]:
    """``{(see [3, III§3])}`` right after ``\\begin{proposition}``: some authors give the note in
    braces instead of brackets. It is the statement's name, not the first words of its text."""
    position = start
    while position < end and document[position] in " \t\n":
        position += 1
    if not document.startswith("{", position):
        return None, start
    content, after = read_required_argument(document, position)
    if content is None or after > end:
        return None, start
    stripped = content.strip()
    if stripped.startswith("(") and stripped.endswith(")"):
        return stripped[1:-1].strip(), after
    return None, start


def extract_statements(
    document: str, environments: dict[str, TheoremEnvironment], proofs: frozenset[str] = frozenset({"proof"})
) -> list[ExtractedStatement]:
    """Every theorem-like environment in ``document``, with its name, label and proof (the first
    environment of a name in ``proofs`` inside it, or the one right after it)."""
    if not environments:
        return []
    names = sorted(environments, key=len, reverse=True)
    begin_pattern = re.compile(r"\\begin\{(" + "|".join(re.escape(name) for name in names) + r")\}")
    headings = Headings(document)
    statements = []
    for match in begin_pattern.finditer(document):
        env = environments[match.group(1)]
        body_start = match.end()
        body_end, after = _matching_end(document, env.name, body_start)
        kind = env.kind
        if env.title_argument:
            heading, body_start = read_required_argument(document, body_start)
            heading = normalize_whitespace(heading or "").replace("\n", " ")
            if env.title_argument == "title":
                kind = title_kind(heading) or kind
                heading = "" if _is_bare_heading(heading) else heading
            name: str | None = heading
        else:
            name, body_start = read_optional_argument(document, body_start)
            if name is None:
                name, body_start = _braced_annotation(document, body_start, body_end)
        body = document[body_start:body_end]
        body, inner_proof = _split_inner_proof(body, proofs)
        labels, text = split_labels(body)
        if not text:
            continue
        section, subsection = headings.at(match.start())
        following, following_end, proof_heading = _following_proof(document, after, proofs)
        section_label, subsection_label = headings.labels_at(match.start())
        statements.append(
            ExtractedStatement(
                environment=env.name,
                kind=kind,
                name=normalize_whitespace(name or "").replace("\n", " "),
                label=labels[0] if labels else "",
                labels=labels,
                text=text,
                proof=inner_proof or following,
                section=section,
                subsection=subsection,
                offset=match.start(),
                end=max(after, following_end),
                section_label=section_label,
                subsection_label=subsection_label,
                proof_heading="" if inner_proof else proof_heading,
            )
        )
    return statements


def _matching_end(document: str, env_name: str, start: int) -> tuple[int, int]:
    """Position of the ``\\end{env}`` matching an already-open ``\\begin{env}``."""
    escaped = re.escape(env_name)
    pattern = re.compile(r"\\(begin|end)\{" + escaped + r"\}")
    depth = 1
    for match in pattern.finditer(document, start):
        depth += 1 if match.group(1) == "begin" else -1
        if depth == 0:
            return match.start(), match.end()
    return len(document), len(document)


@functools.lru_cache(maxsize=64)
def _proof_begin(proofs: frozenset[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(name) for name in sorted(proofs, key=len, reverse=True))
    return re.compile(r"\\begin\{(" + names + r")\}")


def _split_inner_proof(body: str, proofs: frozenset[str]) -> tuple[str, str]:
    """A proof written inside the statement's environment is the proof, not the statement."""
    match = _proof_begin(proofs).search(body)
    if match is None:
        return body, ""
    end, after = _matching_end(body, match.group(1), match.end())
    _, inner = read_optional_argument(body, match.end())
    return body[: match.start()] + body[after:], normalize_whitespace(_LABEL.sub("", body[inner:end]))


_PROOF_PREFIX = re.compile(r"(?:\\noindent\b|\\medskip\b|\\smallskip\b|\\bigskip\b|\\par\b|\s)*")


def _following_proof(document: str, pos: int, proofs: frozenset[str]) -> tuple[str, int, str]:
    """The proof environment directly after a statement, if there is one, where it ends (0: none), and
    its heading (``\\begin{proof}[Proof of Lemma~\\ref{lem:count}]``: read for references only)."""
    pos = _PROOF_PREFIX.match(document, pos).end()
    match = _proof_begin(proofs).match(document, pos)
    if match is None:
        return "", 0, ""
    end, after = _matching_end(document, match.group(1), match.end())
    heading, start = read_optional_argument(document, match.end())
    return normalize_whitespace(_LABEL.sub("", document[start:end])), after, heading or ""
