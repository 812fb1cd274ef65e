"""Typed records that flow from ingestion into the retriever.

A :class:`StatementRecord` is one retrievable unit: a theorem-like statement from a LaTeX
source (later also a Math StackExchange answer). Records are immutable; their id is derived
from their content so that ingesting the same source twice yields the same ids.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from ingestion.unreadable_text import readable, unreadable_at


class Source(StrEnum):
    """Where a statement came from."""

    ARXIV = "arxiv"
    MSE = "mse"
    LOCAL = "local"


class StatementKind(StrEnum):
    """Canonical statement kinds; custom LaTeX environments are mapped onto these."""

    THEOREM = "theorem"
    LEMMA = "lemma"
    PROPOSITION = "proposition"
    COROLLARY = "corollary"
    DEFINITION = "definition"
    CONJECTURE = "conjecture"
    REMARK = "remark"
    EXAMPLE = "example"
    CLAIM = "claim"
    FACT = "fact"
    OBSERVATION = "observation"
    EXERCISE = "exercise"
    PROBLEM = "problem"
    QUESTION = "question"
    NOTATION = "notation"
    ASSUMPTION = "assumption"
    AXIOM = "axiom"
    HYPOTHESIS = "hypothesis"
    SITUATION = "situation"  # the Stacks project's standing assumptions ("Situation 10.3.1")
    CONSTRUCTION = "construction"
    ANSWER = "answer"
    OTHER = "other"

    @property
    def title(self) -> str:
        return self.value.capitalize()


MetadataValue = str | int | float | bool


def statement_id(source: str, paper_id: str, kind: str, text: str, occurrence: int = 0) -> str:
    """Content-derived id: the same statement in the same paper always gets the same id.

    ``occurrence`` separates verbatim repeats of one statement inside one paper.
    """
    payload = "\x1f".join([source, paper_id, kind, " ".join(readable(text).split()), str(occurrence)])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class LabelReference:
    """One label a statement references (``\\ref``, ``\\cref``, ...): where (``statement`` or ``proof``) and,
    when its own paper defines the label, what it marks: a statement's id (the statement carrying the
    label, or holding the equation or item labelled), or the name of the section it sits in. Neither:
    unresolved within the paper (another paper of the index may define it). ``sentence``: the sentence
    around its first reference, readable (:mod:`ingestion.citing_sentences`): what the citer says of it."""

    label: str
    where: str = "statement"
    statement_id: str = ""
    section: str = ""
    sentence: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LabelReference:
        return cls(
            data["label"],
            data.get("where", "statement"),
            data.get("statement_id", ""),
            data.get("section", ""),
            data.get("sentence", ""),
        )


@dataclass(frozen=True, slots=True)
class Citation:
    """One bibliography key a statement cites (``\\cite``, ``\\citep``, ...): where (``statement`` or
    ``proof``) and, when the paper's bibliography gives one, the arXiv id of the cited paper (without
    its version: ``2101.01234``, ``math/0601001``); a paper of the index with that id is the edge's end."""

    key: str
    where: str = "statement"
    arxiv_id: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Citation:
        return cls(data["key"], data.get("where", "statement"), data.get("arxiv_id", ""))


_TEXT_FIELDS = ("text", "paper_id", "name", "label", "section", "url", "proof", "title")


@dataclass(frozen=True, slots=True)
class StatementRecord:
    """One statement chunk with its provenance.

    ``text`` keeps the mathematics as LaTeX; ``formulas`` lists the math spans found in it.
    """

    id: str
    source: Source
    kind: StatementKind
    text: str
    paper_id: str
    name: str = ""
    formulas: tuple[str, ...] = ()
    label: str = ""
    section: str = ""
    url: str = ""
    proof: str = ""
    title: str = ""
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    # Every label the statement carries at its own level (``label`` is the first): a paper may
    # \ref any of them.
    labels: tuple[str, ...] = ()
    # The labels its statement and proof reference, in order, each once (ingestion.latex_references).
    references: tuple[LabelReference, ...] = ()
    # The bibliography keys its statement and proof cite, in order, each once (ingestion.latex_citations).
    citations: tuple[Citation, ...] = ()

    def __post_init__(self) -> None:
        # Every record the index holds can be encoded (ingestion.unreadable_text): a lone surrogate, NUL or a
        # non-character in a source is cleaned up here, on every way in (LaTeX, MSE dumps, CSV, uploads).
        for name in _TEXT_FIELDS:
            value = getattr(self, name)
            if unreadable_at(value) is not None:
                object.__setattr__(self, name, readable(value))
        if any(unreadable_at(formula) is not None for formula in self.formulas):
            object.__setattr__(self, "formulas", tuple(readable(formula) for formula in self.formulas))

    @property
    def display_name(self) -> str:
        """A human heading such as ``Lemma (Nakayama)``."""
        heading = self.kind.title
        return f"{heading} ({self.name})" if self.name else heading

    @property
    def source_title(self) -> str:
        """What a reader knows the statement's paper by, never an internal id: its title; else its arXiv
        identifier, its Math StackExchange post, or the file it was read from."""
        if self.title:
            return self.title
        if self.source is Source.ARXIV:
            return f"arXiv:{self.paper_id}"
        if self.source is Source.MSE:
            return f"Math StackExchange post {self.metadata.get('docno') or self.paper_id.removeprefix('mse-')}"
        return f"an untitled paper (file {self.paper_id})"

    @property
    def docno(self) -> str:
        """A key for relevance judgments that survives changes to the text.

        ``metadata["docno"]`` when the source has its own (a dataset row, a Math StackExchange post id),
        else ``paper#label`` for a labelled statement, else the content-derived id.
        """
        explicit = self.metadata.get("docno")
        if explicit:
            return str(explicit)
        if self.label:
            return f"{self.paper_id}#{self.label}"
        return self.id

    def search_text(self) -> str:
        """The text the retriever indexes: heading, section context and the statement."""
        parts = [self.display_name + "."]
        if self.section:
            parts.insert(0, self.section + ".")
        parts.append(self.text)
        context = self.metadata.get("context")
        if context:  # a Math StackExchange answer is read with the question it answers
            parts.append(f"Question: {context}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        # Field by field, not dataclasses.asdict: asdict copies every nested value through generic recursion
        # (about 150 µs a record, ten times this), and each search answered over HTTP writes ten records.
        data = _fields_of(self)
        data["source"] = self.source.value
        data["kind"] = self.kind.value
        data["formulas"] = list(self.formulas)
        data["labels"] = list(self.labels)
        data["references"] = [_fields_of(reference) for reference in self.references]
        data["citations"] = [_fields_of(citation) for citation in self.citations]
        data["metadata"] = copy.deepcopy(self.metadata)  # its own copy: records are shared (kept between searches)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatementRecord:
        return cls(
            id=data["id"],
            source=Source(data["source"]),
            kind=StatementKind(data["kind"]),
            text=data["text"],
            paper_id=data["paper_id"],
            name=data.get("name", ""),
            formulas=tuple(data.get("formulas", ())),
            label=data.get("label", ""),
            section=data.get("section", ""),
            url=data.get("url", ""),
            proof=data.get("proof", ""),
            title=data.get("title", ""),
            metadata=dict(data.get("metadata", {})),
            labels=tuple(data.get("labels", ())),
            references=tuple(LabelReference.from_dict(item) for item in data.get("references", ())),
            citations=tuple(Citation.from_dict(item) for item in data.get("citations", ())),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def paper_key(record: StatementRecord) -> str:
    """The paper a statement belongs to for paper search and duplicate groups: an MSE post belongs to its
    question's thread (statements of one paper are never duplicates of each other)."""
    if record.source is Source.MSE and record.metadata.get("question_id"):
        return f"mse-{record.metadata['question_id']}"
    return record.paper_id


def _fields_of(record: StatementRecord | LabelReference | Citation) -> dict[str, Any]:
    """A record's fields by name, each value as it is (its tuples and dicts are copied by the caller)."""
    return {item.name: getattr(record, item.name) for item in fields(record)}
