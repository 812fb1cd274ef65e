"""The labels a statement and its proof reference: ``\\ref``, ``\\cref`` lists, ranges, ``\\hyperref[..]``, ...

Read from the LaTeX with the paper's macros expanded (a ``\\newcommand{\\thmref}[1]{Theorem~\\ref{#1}}``
is seen through), before the text is made readable (which prints "Lemma 3.2" in place of the label).
Each label is kept once, in the order first referenced, with where it was first referenced. What it
marks is resolved by the paper's :class:`LabelTargets`: the statement holding the label (its own, or
an equation or item inside it or its proof), else the section it sits in. A label the paper does not
define stays a reference, unresolved: another paper may define it (the Stacks project's chapters
reference each other as ``algebra-lemma-NAK``), which the index's statement graph resolves.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

from ingestion.citing_sentences import SentenceEnds, readable_sentence
from ingestion.latex_text import read_group
from ingestion.records import LabelReference

# Commands whose braced argument is a comma-separated list of labels (LaTeX, hyperref, cleveref,
# varioref, nameref, ntheorem's \thref, subcaption's \subref, zref-clever's \zcref).
_LIST_COMMANDS = (
    "ref", "eqref", "pageref", "cref", "Cref", "cpageref", "Cpageref", "autoref", "Autoref", "vref", "Vref",
    "vpageref", "labelcref", "namecref", "nameCref", "lcnamecref", "nameref", "Nameref", "thref", "subref", "zcref",
)  # fmt: skip
# Commands whose two braced arguments are the first and last label of a range (cleveref).
_RANGE_COMMANDS = ("crefrange", "Crefrange", "cpagerefrange", "Cpagerefrange", "vrefrange", "Vrefrange")
_COMMAND = re.compile(
    r"\\(?:(?P<hyperref>hyperref)\s*\[(?P<target>[^\]]*)\]"
    r"|(?P<range>" + "|".join(_RANGE_COMMANDS) + r")\*?\s*(?=\{)"
    r"|(?P<list>" + "|".join(_LIST_COMMANDS) + r")\*?\s*(?:\[[^\]]*\]\s*)?(?=\{))"
)
_LABEL = re.compile(r"\\label\s*(?:\[[^\]]*\]\s*)?\{((?:[^{}]|\{[^{}]*\})*)\}")


def referenced_labels(latex: str) -> list[str]:
    """Every label ``latex`` references, in order, with repeats (one ``\\cref{a,b}`` gives both)."""
    return [label for label, _, _ in referenced_label_spans(latex)]


def referenced_label_spans(latex: str) -> list[tuple[str, int, int]]:
    """Every label ``latex`` references, in order, with repeats, each with the span of the command
    that references it (a citing sentence is cut around it)."""
    if "ref" not in latex:  # most statements, at no cost: every command above contains "ref"
        return []
    found: list[tuple[str, int, int]] = []
    for match in _COMMAND.finditer(latex):
        if match.group("hyperref"):
            _, end = read_group(latex, match.end())
            found.append((match.group("target").strip(), match.start(), end))
            continue
        first, after = read_group(latex, match.end())
        if match.group("range"):
            last, after = read_group(latex, after)
            found += [(first.strip(), match.start(), after), (last.strip(), match.start(), after)]
        else:
            found += [(label.strip(), match.start(), after) for label in first.split(",")]
    return [(label, start, end) for label, start, end in found if label]


def statement_references(
    statement: str,
    proof: str,
    resolve: Callable[[str], tuple[str, str]] | None = None,
    sentences: SentenceReader | None = None,
) -> tuple[LabelReference, ...]:
    """The labels referenced in ``statement`` then in ``proof``, each once, where first referenced;
    ``resolve`` gives each label's (statement id, section) in its paper (:meth:`LabelTargets.resolve`);
    ``sentences`` reads the sentence around each label's first reference (:class:`SentenceReader`)."""
    first_place = first_places(statement, proof, referenced_labels)
    sentence_of = sentences.first_sentences(statement, proof) if sentences is not None else {}
    return tuple(
        LabelReference(label, where, *(resolve(label) if resolve else ("", "")), sentence_of.get(label, ""))
        for label, where in first_place.items()
    )


@dataclass(frozen=True)
class SentenceReader:
    """Reads the citing sentence of each label a statement references (:mod:`ingestion.citing_sentences`):
    ``convert`` makes LaTeX readable as the paper's statements are; ``labels``: the labels the paper defines."""

    convert: Callable[[str], str]
    labels: Container[str]

    def first_sentences(self, statement: str, proof: str) -> dict[str, str]:
        """Each label's sentence where it is first referenced, statement first; one sentence read once."""
        found: dict[str, str] = {}
        for latex in (statement, proof):
            spans = [span for span in referenced_label_spans(latex) if span[0] not in found]
            if not spans:
                continue
            ends = SentenceEnds(latex)
            read: dict[str, str] = {}
            for label, start, end in spans:
                if label in found:
                    continue
                source = ends.sentence(start, end)
                if source not in read:  # two references in one sentence: read once
                    read[source] = readable_sentence(source, self.labels, referenced_labels(source), self.convert)
                found[label] = read[source]
        return found


def first_places(statement: str, proof: str, read: Callable[[str], list[str]]) -> dict[str, str]:
    """What ``read`` finds in ``statement`` then in ``proof`` (labels, cite keys), each once, in order,
    with where it was first found (``statement`` or ``proof``)."""
    found: dict[str, str] = {}
    for where, latex in (("statement", statement), ("proof", proof)):
        for name in read(latex):
            found.setdefault(name, where)
    return found


class LabelTargets:
    """Every ``\\label`` of one document and what it marks: the statement whose source span holds it
    (``spans``: each statement's start and end, in document order), else the section it sits in
    (``section_at(offset)``). Statement ids are set once the paper's records exist
    (:meth:`set_statement_ids`), so that a reference to a later statement resolves too."""

    def __init__(self, document: str, spans: Sequence[tuple[int, int]], section_at: Callable[[int], str]) -> None:
        starts = [start for start, _ in spans]
        self._statement_of: dict[str, int] = {}
        self._section_of: dict[str, str] = {}
        for match in _LABEL.finditer(document):
            label = match.group(1).strip()
            if not label or label in self._statement_of or label in self._section_of:
                continue  # a label defined twice: LaTeX keeps the first
            index = bisect.bisect_right(starts, match.start()) - 1
            if index >= 0 and match.start() < spans[index][1]:
                self._statement_of[label] = index
            else:
                self._section_of[label] = section_at(match.start())
        self._ids: list[str] = []

    def set_statement_ids(self, ids: Sequence[str]) -> None:
        """The record id of each statement span, in the same order ("" for a statement not kept)."""
        self._ids = list(ids)

    def resolve(self, label: str) -> tuple[str, str]:
        """(statement id, section) that ``label`` marks; ("", "") where the paper does not define it,
        or defines it inside a statement that was not kept."""
        index = self._statement_of.get(label)
        if index is not None:
            return (self._ids[index] if index < len(self._ids) else ""), ""
        return "", self._section_of.get(label, "")

    def __contains__(self, label: str) -> bool:
        return label in self._statement_of or label in self._section_of
