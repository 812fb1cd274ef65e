"""LaTeX sources to statement records: the ingestion stage for papers.

For each paper: flatten its includes, collect its macros and theorem environments, number its
statements and sections as LaTeX would, then turn each statement into readable text (macros
expanded, math normalized, references resolved) and split the over-long ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_citations import paper_arxiv_bibliography, statement_citations
from ingestion.latex_files import LatexFlattener, read_latex_file
from ingestion.latex_front_matter import document_abstract, document_authors, document_title
from ingestion.latex_macros import MacroTable, definition_line
from ingestion.latex_numbering import number_document
from ingestion.latex_readable import ReadableLatex
from ingestion.latex_references import LabelTargets, SentenceReader, statement_references
from ingestion.latex_sources import LatexPaper, PaperFinder, parse_arxiv_name, theorem_like_names
from ingestion.latex_statements import (
    ExtractedStatement,
    Headings,
    TheoremEnvironment,
    extract_statements,
    proof_environments,
    theorem_environments,
)
from ingestion.latex_text import brace_depth, extract_formulas, read_group
from ingestion.problems import IngestProblem, LatexSourceError, Severity
from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from ingestion.stacks_tags import read_tags, stacks_url, tags_file_for
from ingestion.statement_split import split_statement
from ingestion.theorem_packages import rewrite_theorem_packages

# The note for a source that holds no theorem-like environment (counted as "no statements").
NO_STATEMENTS = "no theorem-like statements found"


def arxiv_abs_url(paper_id: str) -> str:
    """The arXiv abstract page of ``paper_id``, or "" when it is not an arXiv identifier as written
    (``2501.01947``, ``2501.01947v2``, ``math/0501001``)."""
    name = parse_arxiv_name(paper_id)
    return f"https://arxiv.org/abs/{paper_id}" if name and name.arxiv_id + name.version == paper_id else ""


@dataclass
class PaperStatements:
    """The outcome of ingesting one paper: its records, or why there are none."""

    paper_id: str
    path: str
    records: list[StatementRecord] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    version: str = ""
    title: str = ""
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    references: int = 0  # labels its statements and proofs reference (each once per statement)
    unresolved_references: int = 0  # of those, labels the paper does not define (another paper may)
    citations: int = 0  # bibliography keys its statements and proofs cite (each once per statement)
    arxiv_citations: int = 0  # of those, keys its bibliography gives an arXiv id


class LatexIngestor:
    """Turn files, directories and archives of LaTeX into :class:`StatementRecord` lists.

    One bad paper never stops the others: its problems are reported in its result.
    """

    def __init__(self, limits: IngestLimits | None = None) -> None:
        self.limits = limits or IngestLimits()
        self.flattener = LatexFlattener(
            self.limits.max_include_depth, self.limits.max_paper_chars, self.limits.max_paper_files
        )

    def ingest(self, paths: Iterable[Path]) -> Iterator[PaperStatements]:
        with tempfile.TemporaryDirectory(prefix="rag-app-unpack-") as workdir:
            finder = PaperFinder(Path(workdir), self.limits)
            for path in paths:
                for found in finder.find(Path(path)):
                    if isinstance(found, IngestProblem):
                        yield PaperStatements(paper_id="", path=found.path, problems=[found])
                    else:
                        yield self.ingest_paper(found)

    def ingest_paper(self, paper: LatexPaper) -> PaperStatements:
        result = PaperStatements(paper_id=paper.paper_id, path=str(paper.main), version=paper.version)
        try:
            flat = self.flattener.flatten(paper.main)
        except LatexSourceError as error:
            result.problems.append(error.problem)
            return result
        result.problems.extend(flat.problems)
        macros = self._fill(result, flat.text, paper, definitions="\n".join(flat.packages))
        result.problems.extend(_unexpandable_macro_warnings(macros, flat.files, paper.main))
        if not result.records:
            used = theorem_like_names(flat.text)
            if used:
                begun = ", ".join(f"\\begin{{{name}}}" for name in used[:5])
                reason = f"no statements extracted although it uses {begun}"
                result.problems.append(IngestProblem(str(paper.main), reason))
            else:
                # A paper without theorem environments (common in applied mathematics), a book's
                # introduction: nothing is wrong with it, it holds nothing to index.
                result.problems.append(IngestProblem(str(paper.main), NO_STATEMENTS, Severity.NOTE))
        return result

    def records_from_document(self, document: str, paper: LatexPaper) -> list[StatementRecord]:
        result = PaperStatements(paper_id=paper.paper_id, path=str(paper.main), version=paper.version)
        self._fill(result, document, paper)
        return result.records

    def _fill(self, result: PaperStatements, document: str, paper: LatexPaper, definitions: str = "") -> MacroTable:
        """``definitions``: the paper's own packages and class, whose macros and theorem environments
        count as if its preamble held them (before it, so that the paper's own definitions win).
        Returns the paper's macros, with those that could not be expanded."""
        document, definitions = rewrite_theorem_packages(document), rewrite_theorem_packages(definitions)
        preamble = definitions + "\n" + document if definitions else document
        limits = (self.limits.max_macro_expansions, self.limits.max_expanded_chars)
        packages = MacroTable.from_package(definitions, *limits) if definitions else None
        macros = MacroTable.from_document(document, *limits, base=packages)
        declarations = _declarations_expanded(preamble, macros)
        environments = theorem_environments(declarations, macros)
        document = _discarded_removed(document, macros)
        numbering = number_document(document, environments)
        readable = ReadableLatex(numbering.labels)

        def clean(latex: str) -> str:
            return readable.convert(macros.expand(latex)) if latex else ""

        begin = document.find("\\begin{document}")
        body_offset = begin if begin >= 0 else 0
        proofs = proof_environments(declarations)
        statements = [s for s in extract_statements(document, environments, proofs) if s.offset >= body_offset]

        # Headings and names on one line; a section title is cleaned once, not once per statement in it.
        @functools.cache
        def clean_line(latex: str) -> str:
            return clean(latex).replace("\n", " ")

        headings = Headings(document)
        targets = LabelTargets(
            document,
            [(statement.offset, statement.end) for statement in statements],
            lambda offset: clean_line(next((title for title in reversed(headings.at(offset)) if title), "")),
        )
        first_records: list[int | None] = []  # each statement's first record in result.records (None: not kept)
        references: list[tuple[str, str]] = []  # each statement's statement and proof source, macros expanded

        bound = self.limits.max_statement_source_chars
        result.title = clean_line(document_title(document)[:bound])
        result.authors = [clean_line(author[:bound]) for author in document_authors(document)]
        result.abstract = clean(document_abstract(document)[:bound])
        tags_file = tags_file_for(paper.main.parent)
        tags = read_tags(tags_file) if tags_file else {}
        url = arxiv_abs_url(paper.paper_id)
        source = Source.ARXIV if url else Source.LOCAL
        seen: Counter[tuple[str, str]] = Counter()
        kept = refused = 0
        for statement in statements:
            first_records.append(None)
            references.append(("", ""))
            number = numbering.statement_numbers.get(statement.offset, "")
            why_refused = self._why_refused(statement.text)
            if why_refused:
                result.problems.append(_refused(statement, number, why_refused, paper))
                refused += 1
                continue
            expanded = macros.expand(statement.text)
            text = readable.convert(expanded)
            if not text:
                continue
            kept += 1
            parts = split_statement(text, self.limits.max_statement_chars)
            section = clean_line(statement.section)
            metadata = self._metadata(statement, result, paper, numbering.statement_numbers.get(statement.offset, ""))
            if statement.subsection:
                metadata["subsection"] = clean_line(statement.subsection)
            why_proof_refused = self._why_refused(statement.proof)
            # a refused proof's references are still read, from its source as written
            proof_source = statement.proof if why_proof_refused else macros.expand(statement.proof)
            proof = "" if why_proof_refused or not statement.proof else readable.convert(proof_source)
            if why_proof_refused:
                result.problems.append(_refused(statement, number, why_proof_refused, paper, part="proof"))
            references[-1] = (expanded, f"{statement.proof_heading}\n{proof_source}")
            first_records[-1] = len(result.records)
            name = clean_line(statement.name)
            if statement.kind is StatementKind.DEFINITION:
                terms = defined_terms(expanded, readable.convert)
                if terms:
                    metadata["defined_terms"] = "; ".join(terms)
            for index, part in enumerate(parts, start=1):
                key = (statement.kind.value, part)
                occurrence = seen[key]
                seen[key] += 1
                part_metadata = dict(metadata)
                if len(parts) > 1:
                    part_metadata.update(part=index, parts=len(parts))
                result.records.append(
                    StatementRecord(
                        id=statement_id(source.value, paper.paper_id, statement.kind.value, part, occurrence),
                        source=source,
                        kind=statement.kind,
                        text=part,
                        paper_id=paper.paper_id,
                        name=name,
                        formulas=tuple(extract_formulas(part)),
                        label=statement.label,
                        labels=statement.labels,
                        section=section,
                        url=url or stacks_url(tags, paper.paper_id, statement.label),
                        proof=proof if index == 1 else "",
                        title=result.title,
                        metadata=part_metadata,
                    )
                )
        self._add_references(result, targets, first_records, references, SentenceReader(readable.convert, targets))
        self._add_citations(result, first_records, references, lambda: paper_arxiv_bibliography(paper.main, document))
        # Some statements lost (a paper that yields none has its own error, in ``ingest_paper``); those
        # refused were each reported with their reason.
        begun = _begins_counted(document[body_offset:], environments) - refused
        if 0 < kept < begun:
            result.problems.append(
                IngestProblem(
                    str(paper.main),
                    f"{kept} statements extracted of the {begun} theorem-like environments it begins",
                    Severity.WARNING,
                )
            )
        return macros

    @staticmethod
    def _add_references(
        result: PaperStatements,
        targets: LabelTargets,
        first_records: list[int | None],
        sources: list[tuple[str, str]],
        sentences: SentenceReader | None = None,
    ) -> None:
        """Give each statement's first record the labels its statement and proof reference, resolved
        within the paper (the ids of later statements are known only now), each with its citing
        sentence; count the unresolved."""
        targets.set_statement_ids([result.records[row].id if row is not None else "" for row in first_records])
        for row, (statement, proof) in zip(first_records, sources, strict=True):
            if row is None:
                continue
            found = statement_references(statement, proof, targets.resolve, sentences)
            if found:
                result.records[row] = dataclasses.replace(result.records[row], references=found)
                result.references += len(found)
                result.unresolved_references += sum(1 for ref in found if ref.label not in targets)

    @staticmethod
    def _add_citations(
        result: PaperStatements,
        first_records: list[int | None],
        sources: list[tuple[str, str]],
        bibliography: Callable[[], Mapping[str, str]],
    ) -> None:
        """Give each statement's first record the keys its statement and proof cite, with the arXiv ids
        the paper's bibliography gives them (read only when a statement cites)."""
        arxiv_ids: Mapping[str, str] | None = None
        for row, (statement, proof) in zip(first_records, sources, strict=True):
            if row is None or ("cite" not in statement and "cite" not in proof):
                continue
            if arxiv_ids is None:
                arxiv_ids = bibliography()
            found = statement_citations(statement, proof, arxiv_ids)
            if found:
                result.records[row] = dataclasses.replace(result.records[row], citations=found)
                result.citations += len(found)
                result.arxiv_citations += sum(1 for citation in found if citation.arxiv_id)

    def _why_refused(self, latex: str) -> str:
        """Why a statement's (or proof's) source is over the bounds, or "" when it is not."""
        bound = self.limits.max_statement_source_chars
        if len(latex) > bound:
            return f"its source is {len(latex):,} characters, over the bound of {bound:,}"
        if brace_depth(latex) > self.limits.max_brace_depth:
            return f"its braces nest deeper than {self.limits.max_brace_depth} levels"
        return ""

    @staticmethod
    def _metadata(
        statement: ExtractedStatement, result: PaperStatements, paper: LatexPaper, number: str
    ) -> dict[str, str | int | float | bool]:
        metadata: dict[str, str | int | float | bool] = {"environment": statement.environment}
        if number:
            metadata["number"] = number
        if result.authors:
            metadata["authors"] = "; ".join(result.authors)
        if paper.version:
            metadata["arxiv_version"] = paper.version
        metadata["file"] = paper.main.name
        # what another paper's reference to its section resolves by (the statement graph)
        if statement.section_label:
            metadata["section_label"] = statement.section_label
        if statement.subsection_label:
            metadata["subsection_label"] = statement.subsection_label
        return metadata


_EMPHASIS = re.compile(r"\\(?:emph|textbf|textit|textsl|bf|em|it)\s*\{")


def defined_terms(latex: str, clean: Callable[[str], str]) -> list[str]:
    """The terms a definition introduces: what it sets in emphasis or bold (``\\emph{Noetherian}``)."""
    terms: list[str] = []
    for match in _EMPHASIS.finditer(latex):
        inner, _ = read_group(latex, match.end() - 1)
        term = " ".join(clean(inner).split())
        if term and term not in terms and len(term) <= 80:
            terms.append(term)
    return terms


def _declarations_expanded(document: str, macros: MacroTable) -> str:
    """The document with calls of theorem-declaring macros expanded (the HoTT book's ``\\defthm``)."""
    subset = macros.only(lambda macro: "newtheorem" in macro.body, min_length=2 * len(document))
    declaring = subset.macros
    if not declaring:
        return document
    begin = document.find("\\begin{document}")
    preamble, body = (document[:begin], document[begin:]) if begin >= 0 else (document, "")
    # Definitions themselves must not be expanded, only their calls.
    calls = re.sub(
        r"\\(?:def|gdef|newcommand|renewcommand)\*?\s*\{?\\(?:" + "|".join(map(re.escape, declaring)) + r")\b",
        "",
        preamble,
    )
    return subset.expand(calls) + body


def _discarded_removed(document: str, macros: MacroTable) -> str:
    """The document's body without the calls of macros that discard their arguments
    (``\\newcommand{\\stam}[1]{}``): what such a call holds is an abandoned draft LaTeX never prints."""
    subset = macros.only(lambda macro: macro.arguments > 0 and not macro.body.strip(), min_length=2 * len(document))
    begin = document.find("\\begin{document}")
    if not subset.macros or begin < 0:
        return document
    return document[:begin] + subset.expand(document[begin:])


def _refused(statement: ExtractedStatement, number: str, why: str, paper: LatexPaper, part: str = "") -> IngestProblem:
    """A statement (or its proof) over the bounds, left out with its reason; the paper's others are kept.
    Named by kind, number, label and first words: its line is in the flattened text, not in a file."""
    # Its label names it; without one, its first words do.
    label = f"({statement.label})" if statement.label else '"' + " ".join(statement.text[:60].split()) + '..."'
    which = " ".join(filter(None, (statement.kind.value, number, label, part)))
    return IngestProblem(str(paper.main), f"{which} refused: {why}", Severity.WARNING, refused_part=True)


def _begins_counted(body: str, environments: dict[str, TheoremEnvironment]) -> int:
    """How many theorem-like environments ``body`` begins."""
    if not environments:
        return 0
    names = "|".join(re.escape(name) for name in sorted(environments, key=len, reverse=True))
    return len(re.findall(r"\\begin\{(?:" + names + r")\}", body))


def _unexpandable_macro_warnings(macros: MacroTable, files: list[Path], main: Path) -> list[IngestProblem]:
    """One warning per macro whose expansion passed a bound, at its (last) definition: its calls were
    left as written, and the paper's statements extracted all the same."""
    if not macros.unexpandable:
        return []
    sources = {}
    for file in files:  # in the order TeX reads them: the last definition is the one in force
        with contextlib.suppress(LatexSourceError):
            sources[file] = read_latex_file(file)
    problems = []
    for name, reason in macros.unexpandable.items():
        path, line = str(main), None
        for file, source in sources.items():
            found = definition_line(source, name)
            if found is not None:
                path, line = str(file), found
        reason = f"macro \\{name} {reason}; its calls are left as written"
        problems.append(IngestProblem(path, reason, Severity.WARNING, line))
    return problems
