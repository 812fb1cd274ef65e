"""What a statement uses and what uses it, read from the index's statement graph as records a reader
(the Python API, ``rag-app show``, the chat's source cards) shows and opens.

The graph (:mod:`retriever.storage.statement_graph`) holds ids and labels; the records come from Chroma,
in one read per view.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ingestion.records import StatementKind, StatementRecord
from retriever.store.statement_index import StatementIndex
from retriever.types import SearchHit

# The citing sentences a view shows ("How it is cited"); `cited_as_count` says how many there are.
SHOWN_CITING_SENTENCES = 5
# A citing sentence of fewer words ("Apply Lemma 3.") is shown after the fuller ones.
_FULL_SENTENCE_WORDS = 8

# The most statements one walk of the graph visits (`show --depth`, `/v1/statements?depth=5`): a survey's
# statements can reference hundreds, and five levels of them would read the whole index.
MAX_WALKED = 500


class StatementNotFoundError(KeyError):
    """No statement of the index has that id or label."""

    def __str__(self) -> str:  # KeyError quotes its argument; this is a sentence
        return str(self.args[0])


class AmbiguousLabelError(ValueError):
    """A bare label that several papers define: the message lists them as PAPER#LABEL."""


@dataclass(frozen=True, slots=True)
class StatementLink:
    """A statement named from another: enough to show it in a list and open it."""

    id: str
    kind: str
    name: str
    label: str
    paper_id: str
    paper_title: str

    @classmethod
    def of(cls, record: StatementRecord) -> StatementLink:
        return cls(record.id, record.kind.value, record.name, record.label, record.paper_id, record.source_title)

    @property
    def display_name(self) -> str:
        heading = self.kind.capitalize()
        return f"{heading} ({self.name})" if self.name else heading

    def to_dict(self) -> dict[str, str]:
        return {**dataclasses.asdict(self), "display_name": self.display_name}


@dataclass(frozen=True, slots=True)
class StatementUse:
    """One label a statement references, and what it resolved to: a statement, a section, or neither."""

    label: str
    where: str  # "statement" or "proof"
    statement: StatementLink | None = None
    section: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "where": self.where,
            "statement": self.statement.to_dict() if self.statement else None,
            "section": self.section,
        }


@dataclass(frozen=True, slots=True)
class PaperCitation:
    """One key a statement cites, with the arXiv id its bibliography gives and, when that paper is in the
    index, the paper: its id, title and how many of its statements the index holds."""

    key: str
    where: str  # "statement" or "proof"
    arxiv_id: str = ""
    paper_id: str = ""  # "" when the cited paper is not in the index
    paper_title: str = ""
    statements: int = 0

    @property
    def in_index(self) -> bool:
        return bool(self.paper_id)

    def to_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "in_index": self.in_index}


@dataclass(frozen=True, slots=True)
class CitingMention:
    """How one statement cites another: the sentence around its reference, where it is (``statement`` or
    ``proof``), and the citing statement to open."""

    sentence: str
    where: str
    statement: StatementLink

    def to_dict(self) -> dict[str, object]:
        return {"sentence": self.sentence, "where": self.where, "statement": self.statement.to_dict()}


@dataclass(frozen=True, slots=True)
class StatementView:
    """A statement with what it uses, what uses it, and the definitions in its scope (``rag-app show``)."""

    record: StatementRecord
    uses: list[StatementUse] = field(default_factory=list)
    used_by: list[StatementLink] = field(default_factory=list)
    definitions: list[StatementLink] = field(default_factory=list)  # nearest first
    cites: list[PaperCitation] = field(default_factory=list)  # the keys it cites, in order
    cited_by: list[StatementLink] = field(default_factory=list)  # statements of other papers citing its paper
    cited_by_count: int = 0  # all of them (``cited_by`` holds the first 50)
    # "How it is cited": the first sentences citing it (the fullest first), and how many there are
    cited_as: list[CitingMention] = field(default_factory=list)
    cited_as_count: int = 0

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``rag-app show --json`` (a contract: fields are only ever added)."""
        return {
            "id": self.record.id,
            **self.record.to_dict(),
            "display_name": self.record.display_name,
            "docno": self.record.docno,
            "uses": [use.to_dict() for use in self.uses],
            "used_by": [link.to_dict() for link in self.used_by],
            "definitions": [link.to_dict() for link in self.definitions],
            "cites": [citation.to_dict() for citation in self.cites],
            "cited_by": [link.to_dict() for link in self.cited_by],
            "cited_by_count": self.cited_by_count,
            "cited_as": [mention.to_dict() for mention in self.cited_as],
            "cited_as_count": self.cited_as_count,
        }


_DOCNO = re.compile(r"^(?P<paper>[^#]+)#(?P<label>.+)$")


class StatementLinks:
    """Reads one index's statement graph as links: views, definitions in scope, counts for hits."""

    def __init__(self, index: StatementIndex) -> None:
        self.index = index
        self.graph = index.graph

    def find(self, id_or_label: str) -> str:
        """The statement id that ``id_or_label`` names: an id, ``PAPER#LABEL``, ``PAPER-LABEL`` (the Stacks
        project's full labels) or a label only one paper defines."""
        key = id_or_label.strip()
        if self.index.store.existing_ids([key]):
            return key
        docno = _DOCNO.match(key)
        found = self.graph.by_label(docno["label"], docno["paper"]) if docno else self.graph.by_label(key)
        if len(found) == 1:
            return found[0]
        if not found:
            raise StatementNotFoundError(
                f"no statement has the id or label {key!r} in {self.index.directory} "
                "(a label is given as PAPER#LABEL, or alone when one paper defines it)"
            )
        names = ", ".join(f"{r.paper_id}#{r.label}" for r in self.index.store.get(found[:10]))
        raise AmbiguousLabelError(f"the label {key!r} is defined in several papers: {names}; name one as PAPER#LABEL")

    def view(self, id_or_label: str, depth: int = 2) -> StatementView:
        """The statement with its uses, used-by and the definitions it depends on up to ``depth``."""
        statement_id = self.find(id_or_label)
        edges = self.graph.uses(statement_id)
        used_by = self.graph.used_by(statement_id)
        definitions = self._definition_ids(statement_id, depth)
        cited = self.graph.citations(statement_id)
        citing, citing_count = self.graph.citing(statement_id)
        sentences = self.graph.citing_text.sentences([statement_id]).get(statement_id, [])
        wanted = [statement_id, *(e.target_id for e in edges if e.target_id), *used_by, *definitions,
                  *(c.one_statement_id for c in cited if c.one_statement_id), *citing]  # fmt: skip
        records = {record.id: record for record in self.index.store.get(list(dict.fromkeys(wanted)))}
        if statement_id not in records:
            raise StatementNotFoundError(f"the statement {statement_id!r} is not in {self.index.directory}")
        link = {i: StatementLink.of(record) for i, record in records.items()}
        uses = [StatementUse(e.label, e.where, link.get(e.target_id), e.section) for e in edges]
        record = records[statement_id]
        # its own paper's first, then by paper and label: the order a reader scans a list of places
        users = sorted((link[i] for i in used_by if i in link),
                       key=lambda user: (user.paper_id != record.paper_id, user.paper_id, user.label))  # fmt: skip
        cites = [
            PaperCitation(c.key, c.where, c.arxiv_id, c.paper_id, link[c.one_statement_id].paper_title, c.statements)
            if c.one_statement_id in link
            else PaperCitation(c.key, c.where, c.arxiv_id)
            for c in cited
        ]
        definitions_found = [link[i] for i in definitions if i in link]
        citing_links = [link[i] for i in citing if i in link]
        order = {user.id: position for position, user in enumerate(users)}
        shown = [s for s in sentences if s.source_id in order]
        fullest = sorted(shown, key=lambda s: (len(s.sentence.split()) < _FULL_SENTENCE_WORDS, order[s.source_id]))
        mentions = [CitingMention(s.sentence, s.where, link[s.source_id]) for s in fullest[:SHOWN_CITING_SENTENCES]]
        return StatementView(
            record, uses, users, definitions_found, cites, citing_links, citing_count, mentions, len(sentences)
        )

    def definitions_for(self, id_or_label: str, depth: int = 2) -> list[StatementLink]:
        """The definitions a statement depends on, nearest first: those it references (depth 1), then
        those its referenced statements reference, up to ``depth``."""
        ids = self._definition_ids(self.find(id_or_label), depth)
        by_id = {record.id: record for record in self.index.store.get(ids)}
        return [StatementLink.of(by_id[i]) for i in ids if i in by_id]

    def citing_sentences(self, ids: Sequence[str], limit: int = 5) -> dict[str, list[str]]:
        """For each of ``ids`` that others cite, the first ``limit`` sentences that cite it (how others cite it)."""
        found = self.graph.citing_text.sentences(ids, limit=limit)
        return {statement_id: [c.sentence for c in citing] for statement_id, citing in found.items()}

    def definition_records(self, statement_id: str, depth: int = 1, limit: int = 2) -> list[StatementRecord]:
        """The first ``limit`` definitions a statement (by id) depends on, nearest first, whole records."""
        ids = self._definition_ids(statement_id, depth)[:limit]
        by_id = {record.id: record for record in self.index.store.get(ids)} if ids else {}
        return [by_id[i] for i in ids if i in by_id]

    def _definition_ids(self, statement_id: str, depth: int, max_statements: int = MAX_WALKED) -> list[str]:
        """Breadth first over the uses edges (a cycle is walked once), keeping the definitions: one read of
        the graph per level, and at most ``max_statements`` statements walked however wide the graph is."""
        seen, frontier, definitions = {statement_id}, [statement_id], []
        for _ in range(max(0, depth)):
            following = []
            for edges in self.graph.uses_of_many(frontier).values():
                for edge in edges:
                    if edge.target_id and edge.target_id not in seen and len(seen) < max_statements:
                        seen.add(edge.target_id)
                        following.append(edge.target_id)
            kinds = self.graph.kinds(following)
            definitions += [i for i in following if kinds.get(i) == StatementKind.DEFINITION.value]
            frontier = following
            if not frontier:
                break
        return definitions

    def counted(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` with how many statements each uses and is used by (``search --json``)."""
        counts = self.graph.counts([hit.record.id for hit in hits])
        return [
            dataclasses.replace(hit, uses_count=counts[hit.record.id][0], used_by_count=counts[hit.record.id][1])
            for hit in hits
        ]
