"""Random LaTeX never crashes or hangs the parser (hypothesis)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import LatexIngestor
from ingestion.latex_macros import MacroTable
from ingestion.latex_readable import ReadableLatex, split_math
from ingestion.latex_sources import LatexPaper

# Fragments that stress the scanners: unbalanced groups, stray delimiters, nested environments.
FRAGMENTS = [
    "\\begin{theorem}",
    "\\end{theorem}",
    "\\begin{proof}",
    "\\end{proof}",
    "\\begin{lemma}[",
    "]",
    "{",
    "}",
    "$",
    "$$",
    "\\(",
    "\\)",
    "\\[",
    "\\]",
    "\\label{a}",
    "\\ref{a}",
    "\\cite{",
    "\\newcommand{\\x}{\\x}",
    "\\newcommand{\\y}[2][d]{#1#2}",
    "\\def\\z#1{#1#1}",
    "\\x",
    "\\y",
    "\\z",
    "%",
    "\\%",
    "\\section{",
    "\\emph{",
    "\\begin{align}",
    "\\end{align}",
    "\\\\",
    "&",
    "#",
    "^",
    "_",
    "~",
    "\\iffalse",
    "\\fi",
    "\\input{",
    "x = y",
    "\\newtheorem{lem}[thm]{Lemma}[section]",
    "\\begin{lem}",
    "\\end{lem}",
    "\\appendix",
    "\u00e9",
    "\n\n",
]
latex = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=60).map("".join)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(latex)
def test_readable_conversion_never_raises(text: str) -> None:
    protected, spans = split_math(text)
    assert isinstance(protected, str) and all(span.body for span in spans)
    assert isinstance(ReadableLatex().convert(text), str)


@settings(max_examples=150, deadline=2000)
@given(latex)
def test_macro_expansion_terminates(text: str) -> None:
    table = MacroTable.from_document(text, max_expansions=200, max_length=20_000)
    # A runaway macro is left as written, never an exception: the bound holds for what comes back.
    assert len(table.expand(text)) <= 20_000 + len(text)


@settings(max_examples=100, deadline=3000, suppress_health_check=[HealthCheck.too_slow])
@given(latex)
def test_whole_documents_never_crash(text: str) -> None:
    document = "\\documentclass{article}\\newtheorem{theorem}{Theorem}\\begin{document}" + text + "\\end{document}"
    ingestor = LatexIngestor(IngestLimits(max_macro_expansions=200, max_expanded_chars=20_000, max_statement_chars=200))
    paper = LatexPaper("random", Path("random.tex"), "random.tex")
    for record in ingestor.records_from_document(document, paper):
        assert record.text.strip()
