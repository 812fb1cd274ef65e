"""Numbers of sections, statements and equations as LaTeX would print them, keyed by label.

With these, ``Lemma \\ref{lem:key}`` in a statement reads "Lemma 3.2" and ``\\cref{lem:key}`` reads
"Lemma 3.2" too. The model covers what papers use: chapters, sections and subsections (starred ones
unnumbered, letters after ``\\appendix``), theorem counters that are shared (``\\newtheorem{lem}[thm]``,
``\\newaliascnt``) or reset within a sectioning unit (``[section]``), and equation counters with
``\\numberwithin``. Multi-line displays (``align``) count as one equation: an approximation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.latex_statements import TheoremEnvironment

_SECTIONING = ("part", "chapter", "section", "subsection", "subsubsection")
_COUNTER_WITHIN = re.compile(
    r"\\newcounter\s*\{([^{}]+)\}\s*\[([^\]]+)\]|\\(?:numberwithin|counterwithin\*?)\s*\{([^{}]+)\}\s*\{([^{}]+)\}"
)
_NUMBERED_DISPLAYS = ("equation", "align", "gather", "multline", "eqnarray", "flalign", "alignat")


@dataclass(frozen=True, slots=True)
class Reference:
    """What a label points at: "Lemma" and "3.2", or "Section" and "4"."""

    title: str
    number: str

    @property
    def name(self) -> str:
        return f"{self.title} {self.number}".strip()


@dataclass(frozen=True, slots=True)
class Numbering:
    """Labels resolved to references, and the number of each statement by its source offset."""

    labels: dict[str, Reference]
    statement_numbers: dict[int, str]


def _letters(number: int) -> str:
    return chr(ord("A") + number - 1) if 1 <= number <= 26 else str(number)


def number_document(document: str, environments: dict[str, TheoremEnvironment]) -> Numbering:
    """Walk ``document`` once, stepping counters as LaTeX does, and record every label's target."""
    aliases = dict(re.findall(r"\\newaliascnt\s*\{([^{}]+)\}\s*\{([^{}]+)\}", document))
    equation_within = ""
    numberwithin = re.search(r"\\numberwithin\s*\{equation\}\s*\{([^{}]+)\}", document)
    if numberwithin:
        equation_within = numberwithin.group(1).strip()

    def counter_of(env: TheoremEnvironment) -> str:
        counter = env.counter or env.name.rstrip("*")
        seen: set[str] = set()
        while counter in aliases and counter not in seen:
            seen.add(counter)
            counter = aliases[counter]
        return counter

    # A counter is reset within the unit declared for the environment that owns it.
    within_of: dict[str, str] = {}
    for env in environments.values():
        if env.within and counter_of(env) not in within_of:
            within_of[counter_of(env)] = env.within
    within_of.setdefault("equation", equation_within)
    # Counters of the document's own (a heading macro's ``\\refstepcounter{thm}``), reset within a unit.
    for match in _COUNTER_WITHIN.finditer(document):
        counter, unit = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        within_of.setdefault(counter.strip(), unit.strip())

    counters: dict[str, int] = dict.fromkeys(_SECTIONING, 0)
    has_chapters = "\\chapter" in document
    appendix = False

    def step(counter: str) -> None:
        counters[counter] = counters.get(counter, 0) + 1
        # Stepping a unit resets the units below it and every counter declared within it.
        if counter in _SECTIONING:
            for lower in _SECTIONING[_SECTIONING.index(counter) + 1 :]:
                counters[lower] = 0
        for other, unit in within_of.items():
            if unit == counter and other != counter:
                counters[other] = 0

    def format_counter(counter: str) -> str:
        value = counters.get(counter, 0)
        if counter == "chapter" or (counter == "section" and not has_chapters):
            return _letters(value) if appendix else str(value)
        if counter in _SECTIONING and counter != "part":
            parent = _SECTIONING[_SECTIONING.index(counter) - 1]
            return f"{format_counter(parent)}.{value}" if parent != "part" else str(value)
        unit = within_of.get(counter, "")
        return f"{format_counter(unit)}.{value}" if unit else str(value)

    labels: dict[str, Reference] = {}
    statement_numbers: dict[int, str] = {}
    # The innermost numbered thing a \label would point at.
    stack: list[Reference] = []
    last_section: Reference | None = None
    names = "|".join(re.escape(name) for name in sorted(environments, key=len, reverse=True)) or "(?!)"
    displays = "|".join(_NUMBERED_DISPLAYS)
    token = re.compile(
        r"\\(?P<unit>part|chapter|section|subsection|subsubsection)(?P<star>\*?)(?=[\s\[{])"
        r"|\\(?P<appendix>appendix)\b"
        rf"|\\(?P<edge>begin|end)\{{(?P<env>(?:{names})|(?:{displays})\*?)\}}"
        r"|\\label\s*\{(?P<label>(?:[^{}]|\{[^{}]*\})*)\}"
    )
    # Nothing before \begin{document} is typeset: a ``\begin{theorem}`` in a wrapper's definition
    # steps no counter.
    body = max(document.find("\\begin{document}"), 0)
    for match in token.finditer(document, body):
        if match.group("unit"):
            unit = match.group("unit")
            if match.group("star"):
                continue
            step(unit)
            title = "Chapter" if unit == "chapter" else "Part" if unit == "part" else "Section"
            last_section = Reference(
                "Appendix" if appendix and unit == _top(has_chapters) else title, format_counter(unit)
            )
            stack.clear()
        elif match.group("appendix"):
            appendix = True
            counters[_top(has_chapters)] = 0
        elif match.group("edge") == "begin":
            env_name = match.group("env")
            if env_name in environments:
                env = environments[env_name]
                if env.numbered:
                    counter = counter_of(env)
                    step(counter)
                    number = format_counter(counter)
                    statement_numbers[match.start()] = number
                    stack.append(Reference(env.title, number))
                else:
                    stack.append(Reference(env.title, ""))
            elif env_name.endswith("*"):
                stack.append(Reference("", ""))
            else:
                step("equation")
                stack.append(Reference("Equation", format_counter("equation")))
        elif match.group("edge") == "end":
            if stack:
                stack.pop()
        else:
            target = stack[-1] if stack else last_section
            if target is not None and target.number:
                labels.setdefault(match.group("label").strip(), target)
    return Numbering(labels, statement_numbers)


def _top(has_chapters: bool) -> str:
    return "chapter" if has_chapters else "section"
