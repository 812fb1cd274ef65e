"""Sources on disk (files, directories, archives) to records, including bad input."""

from __future__ import annotations

import gzip
import io
import tarfile
import time
from pathlib import Path

import pytest

from ingestion import LatexIngestor, Severity, Source, StatementKind
from ingestion.ingest_limits import IngestLimits
from ingestion.problems import IngestProblem
from rag_app.indexing.ingest_report import IngestReport
from rag_app.pipeline import demo_corpus_path

PAPER = r"""\documentclass{article}
\newtheorem{theorem}{Theorem}
\newtheorem{lemma}[theorem]{Lemma}
\title{Test Paper}
\begin{document}
\input{body}
\end{document}
"""
BODY = r"""
\section{Results}
\begin{theorem}[Main]\label{thm:main}
Every $x$ satisfies $x = x$. % a comment that must vanish
\end{theorem}
\begin{lemma}\label{lem:aux}
Also $y = y$.
\end{lemma}
"""


def write_paper(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.tex").write_text(PAPER)
    (directory / "body.tex").write_text(BODY)
    return directory


def test_directory_with_input_file_is_one_paper_named_after_the_directory(tmp_path: Path) -> None:
    [result] = list(LatexIngestor().ingest([write_paper(tmp_path / "my-paper")]))
    assert result.paper_id == "my-paper"
    assert result.problems == []
    main, aux = result.records
    assert (main.kind, main.name, main.label) == (StatementKind.THEOREM, "Main", "thm:main")
    assert main.text == "Every $x$ satisfies $x = x$."
    assert main.formulas == ("x", "x = x")
    assert main.section == "Results" and main.title == "Test Paper"
    assert main.source is Source.LOCAL and main.url == ""
    assert aux.kind is StatementKind.LEMMA


def test_ids_are_stable_across_runs_and_distinct_within_a_paper(tmp_path: Path) -> None:
    paper = write_paper(tmp_path / "p")
    first = [r.id for r in next(iter(LatexIngestor().ingest([paper]))).records]
    second = [r.id for r in next(iter(LatexIngestor().ingest([paper]))).records]
    assert first == second and len(set(first)) == len(first)


def test_arxiv_tarball_and_gzipped_single_file(tmp_path: Path) -> None:
    source = write_paper(tmp_path / "src")
    tarball = tmp_path / "2501.01947.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for name in ("main.tex", "body.tex"):
            tar.add(source / name, arcname=name)
    single = tmp_path / "2502.00001.gz"
    single.write_bytes(gzip.compress((PAPER.replace("\\input{body}", BODY)).encode()))
    results = {r.paper_id: r for r in LatexIngestor().ingest([tarball, single])}
    assert set(results) == {"2501.01947", "2502.00001"}
    for paper_id, result in results.items():
        assert len(result.records) == 2
        assert result.records[0].source is Source.ARXIV
        assert result.records[0].url == f"https://arxiv.org/abs/{paper_id}"


def test_gzipped_tar_without_tar_suffix(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = PAPER.replace("\\input{body}", BODY).encode()
        info = tarfile.TarInfo("paper.tex")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "2503.12345v2.gz"
    archive.write_bytes(gzip.compress(buffer.getvalue()))
    [result] = list(LatexIngestor().ingest([archive]))
    assert (result.paper_id, result.version) == ("2503.12345", "v2") and len(result.records) == 2


def test_bad_inputs_are_reported_with_path_and_reason_and_the_rest_goes_on(tmp_path: Path) -> None:
    good = write_paper(tmp_path / "good")
    binary = tmp_path / "binary.tex"
    binary.write_bytes(b"\x00\x01\x02 not latex")
    empty = tmp_path / "empty.tex"
    empty.write_text("\\documentclass{article}\\begin{document}No statements here.\\end{document}")
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"this is not a tarball")
    pdf = tmp_path / "2501.00002.pdf"
    pdf.write_bytes(b"%PDF-1.5")
    missing = tmp_path / "missing.tex"
    results = list(LatexIngestor().ingest([binary, empty, broken, pdf, missing, good]))
    problems = {p.path: p for r in results for p in r.problems}
    assert "not a text file" in problems[str(binary)].reason
    assert "no theorem-like statements" in problems[str(empty)].reason
    assert "cannot unpack archive" in problems[str(broken)].reason
    assert "PDF-only" in problems[str(pdf)].reason
    assert "no such file" in problems[str(missing)].reason
    # A file with no statements is a note (nothing is wrong with it); the others were refused.
    assert problems[str(empty)].severity is Severity.NOTE
    assert all(p.severity is Severity.ERROR for path, p in problems.items() if path != str(empty))
    assert [len(r.records) for r in results if r.paper_id == "good"] == [2]


def test_missing_include_is_a_warning_with_line_number(tmp_path: Path) -> None:
    paper = tmp_path / "paper.tex"
    paper.write_text(PAPER.replace("\\input{body}", "\\input{nowhere}\n" + BODY))
    [result] = list(LatexIngestor().ingest([paper]))
    [problem] = result.problems
    assert problem.severity is Severity.WARNING and problem.line == 6
    assert "nowhere" in problem.reason
    assert len(result.records) == 2


def test_include_cycle_is_cut(tmp_path: Path) -> None:
    (tmp_path / "a.tex").write_text("\\begin{document}\\input{b}\\begin{theorem}A\\end{theorem}\\end{document}")
    (tmp_path / "b.tex").write_text("\\input{a}")
    [result] = list(LatexIngestor().ingest([tmp_path / "a.tex"]))
    assert any("cycle" in p.reason for p in result.problems)
    assert len(result.records) == 1


def test_demo_corpus_has_at_least_15_papers_and_200_statements() -> None:
    results = list(LatexIngestor().ingest([demo_corpus_path()]))
    assert len(results) >= 15
    assert sum(len(r.records) for r in results) >= 200
    assert all(r.problems == [] for r in results)
    areas = " ".join(r.records[0].title.lower() for r in results)
    for word in ("group", "analysis", "topolog", "prime", "graph", "probability"):
        assert word in areas or word in " ".join(r.paper_id for r in results)


def test_utf16_and_utf32_sources_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    # UTF-16 text is full of NUL bytes: the byte-order mark must be seen before the binary check.
    text = PAPER.replace("\\input{body}", BODY.replace("Every $x$", "Für jedes $x$"))
    for encoding in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-8"):
        bom = {
            "utf-16-le": b"\xff\xfe",
            "utf-16-be": b"\xfe\xff",
            "utf-32-le": b"\xff\xfe\x00\x00",
            "utf-8": b"\xef\xbb\xbf",
        }
        paper = tmp_path / encoding / "paper.tex"
        paper.parent.mkdir()
        paper.write_bytes(bom[encoding] + text.encode(encoding))
        [result] = list(LatexIngestor().ingest([paper]))
        assert result.problems == [], encoding
        assert result.records[0].text.startswith("Für jedes $x$"), encoding


def test_include_outside_the_paper_directory_is_refused_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "secret.tex").write_text("\\begin{theorem}Secret\\end{theorem}")
    paper = tmp_path / "paper" / "paper.tex"
    paper.parent.mkdir()
    outside = f"\\input{{{tmp_path / 'secret.tex'}}}\n\\input{{../secret}}\n"
    paper.write_text(PAPER.replace("\\input{body}", outside + BODY))
    [result] = list(LatexIngestor().ingest([paper]))
    assert [(p.severity, p.line) for p in result.problems] == [(Severity.WARNING, 6), (Severity.WARNING, 7)]
    assert all("outside the paper's directory refused" in p.reason for p in result.problems)
    assert "../secret" in result.problems[1].reason and result.problems[0].path == str(paper)
    assert not any("Secret" in r.text for r in result.records) and len(result.records) == 2


def write_files(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


def ingest_directory(directory: Path) -> tuple[list, list]:
    results = list(LatexIngestor().ingest([directory]))
    return [r for r in results if r.paper_id], [p for r in results for p in r.problems]


def test_an_include_with_the_main_files_name_in_a_subdirectory_is_not_the_main_file(tmp_path: Path) -> None:
    # Issue 26, defect 1: includes resolve by path, never by base name alone.
    write_files(
        tmp_path / "paper",
        {
            "notes.tex": "\\documentclass{article}\\newtheorem{theorem}{Theorem}\n"
            "\\begin{document}\\input{body}\\end{document}",
            "body.tex": "\\begin{theorem}Top.\\end{theorem}\n\\input{parts/notes}",
            "parts/notes.tex": "\\begin{theorem}Nested.\\end{theorem}",
        },
    )
    [paper], problems = ingest_directory(tmp_path / "paper")
    assert [r.text for r in paper.records] == ["Top.", "Nested."]
    assert problems == []


def test_an_include_differing_only_in_letter_case_is_read_with_a_warning(tmp_path: Path) -> None:
    write_files(
        tmp_path / "paper",
        {
            "main.tex": "\\documentclass{article}\\begin{document}\\input{slodowy}\\end{document}",
            "Slodowy.tex": "\\begin{lemma}Slices are transversal.\\end{lemma}",
        },
    )
    [paper], problems = ingest_directory(tmp_path / "paper")
    assert [r.text for r in paper.records] == ["Slices are transversal."]
    [warning] = problems
    assert warning.severity is Severity.WARNING and "Slodowy.tex" in warning.reason and "letter case" in warning.reason


def test_a_paper_that_yields_nothing_despite_theorem_environments_is_named(tmp_path: Path) -> None:
    paper = tmp_path / "odd.tex"
    # An environment that never ends swallows nothing but leaves no statement text.
    paper.write_text("\\documentclass{article}\\begin{document}\\begin{lemma}\\label{x}\\end{lemma}\\end{document}")
    [result] = list(LatexIngestor().ingest([paper]))
    [problem] = result.problems
    assert problem.path == str(paper) and "\\begin{lemma}" in problem.reason


def test_theorem_environments_and_macros_of_the_papers_own_sty_and_cls(tmp_path: Path) -> None:
    # Issue 26, defect 2.
    write_files(
        tmp_path / "paper",
        {
            "main.tex": "\\documentclass[11pt]{r10}\n\\usepackage{amsmath, envs}\n\\begin{document}\n"
            "\\begin{zork}Every $n \\in \\NN$ has $\\spc{X}$.\\end{zork}\n"
            "\\begin{warning}Beware of $\\NN$.\\end{warning}\n\\end{document}",
            "envs.sty": "\\ProvidesPackage{envs}\n\\RequirePackage{deeper}\n\\newtheorem{zork}{Lemma}\n"
            "\\newcommand{\\NN}{\\mathbb{N}}",
            "deeper.sty": "\\def\\spc#1{\\mathcal{#1}}",
            "r10.cls": "\\LoadClass{article}\n\\newtheorem{warning}{Warning}",
        },
    )
    [paper], problems = ingest_directory(tmp_path / "paper")
    assert problems == []
    zork, warning = paper.records
    assert (zork.kind, zork.text) == (StatementKind.LEMMA, "Every $n \\in \\mathbb{N}$ has $\\mathcal{X}$.")
    assert (warning.kind, warning.text) == (StatementKind.OTHER, "Beware of $\\mathbb{N}$.")
    assert warning.display_name == "Other" and warning.metadata["environment"] == "warning"


def test_files_the_main_document_does_not_include_are_fragments_not_papers(tmp_path: Path) -> None:
    # Issue 26, defect 4: a commented-out \input, a loose draft; a standalone document stays a paper.
    write_files(
        tmp_path / "paper",
        {
            "main.tex": "\\documentclass{article}\\newcommand{\\ep}{\\varepsilon}\n\\begin{document}\n"
            "% \\input{draft}\n\\begin{theorem}Kept for $\\ep$.\\end{theorem}\\end{document}",
            "draft.tex": "\\begin{lemma}Old $\\ep$.\\end{lemma}",
            "old/fragment.tex": "\\begin{theorem}Older.\\end{theorem}",
            "supplement.tex": "\\documentclass{article}\\begin{document}\\begin{lemma}Own paper.\\end{lemma}"
            "\\end{document}",
        },
    )
    papers, problems = ingest_directory(tmp_path / "paper")
    assert sorted(r.text for p in papers for r in p.records) == ["Kept for $\\varepsilon$.", "Own paper."]
    skipped = sorted(Path(p.path).name for p in problems if "fragment skipped" in p.reason)
    assert skipped == ["draft.tex", "fragment.tex"]
    assert all(p.severity is Severity.WARNING for p in problems)


def test_a_directory_of_loose_statement_files_without_a_document_keeps_them_as_papers(tmp_path: Path) -> None:
    write_files(tmp_path / "notes", {"a.tex": "\\begin{lemma}A.\\end{lemma}", "b.tex": "\\begin{lemma}B.\\end{lemma}"})
    papers, problems = ingest_directory(tmp_path / "notes")
    assert sorted(p.paper_id for p in papers) == ["a", "b"] and problems == []


def test_every_label_of_a_statement_is_kept_and_each_resolves(tmp_path: Path) -> None:
    # Issue 26, defect 7.
    paper = tmp_path / "labels.tex"
    paper.write_text(
        "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\n"
        "\\begin{lemma}\\label{lem:tensor}\\label{lem:hom}Tensor is left adjoint to Hom.\\end{lemma}\n"
        "\\begin{lemma}By Lemma~\\ref{lem:hom} and Lemma~\\ref{lem:tensor}, done.\\end{lemma}\\end{document}"
    )
    [result] = list(LatexIngestor().ingest([paper]))
    first, second = result.records
    assert first.label == "lem:tensor" and first.labels == ("lem:tensor", "lem:hom")
    assert second.text == "By Lemma 1 and Lemma 1, done." and second.labels == ()


def test_statements_inside_a_macro_that_discards_its_argument_are_not_extracted(tmp_path: Path) -> None:
    # Issue 26, defect 11.
    paper = tmp_path / "stam.tex"
    paper.write_text(
        "\\documentclass{article}\\newcommand{\\stam}[1]{}\\begin{document}\n"
        "\\stam{\\begin{lemma}Abandoned.\\end{lemma}}\n\\begin{lemma}Kept.\\end{lemma}\\end{document}"
    )
    [result] = list(LatexIngestor().ingest([paper]))
    assert [r.text for r in result.records] == ["Kept."]
    assert result.records[0].metadata["number"] == "1"


STYLES = Path(__file__).resolve().parents[1] / "fixtures" / "latex_styles"


def test_the_issue_38_knowledge_paper_keeps_both_theorems_and_expands_its_notation_once(tmp_path: Path) -> None:
    # Issue 38, point 1: today's reproduction lost the whole paper ("\height expands beyond 200000").
    paper = tmp_path / "kl.tex"
    paper.write_text(
        "\\documentclass{article}\\usepackage{amsthm}\\usepackage{knowledge}\n\\newtheorem{theorem}{Theorem}\n"
        "\\NewDocumentCommand{\\height}{m}{\\kl[\\height]{\\mathfrak{h}}(#1)}\n\\begin{document}\n"
        "\\begin{theorem}\\label{thm:tree}Every finite tree $T$ has $\\height{T}<\\omega$.\\end{theorem}\n"
        "\\begin{theorem}\\label{thm:plain}Any two bases of a vector space have the same size.\\end{theorem}\n"
        "\\end{document}"
    )
    [result] = list(LatexIngestor().ingest([paper]))
    assert result.problems == []
    assert [r.text for r in result.records] == [
        "Every finite tree $T$ has ${\\mathfrak{h}}(T)<\\omega$.",
        "Any two bases of a vector space have the same size.",
    ]


def test_a_runaway_macro_is_warned_once_at_its_definition_in_the_papers_own_package(tmp_path: Path) -> None:
    write_files(
        tmp_path / "paper",
        {
            "main.tex": "\\documentclass{article}\n\\usepackage{spins}\n\\newtheorem{lemma}{Lemma}\n\\begin{document}\n"
            "\\begin{lemma}\\label{a}First $\\spin$.\\end{lemma}\n\\begin{lemma}\\label{b}Plain.\\end{lemma}\n"
            "\\begin{lemma}\\label{c}Again $\\spin + \\spin$.\\end{lemma}\n\\end{document}",
            "spins.sty": "\\ProvidesPackage{spins}\n% a comment\n\\newcommand{\\spin}{\\spin\\spin}\n",
        },
    )
    [paper], problems = ingest_directory(tmp_path / "paper")
    assert [r.label for r in paper.records] == ["a", "b", "c"]
    assert paper.records[2].text == "Again $\\spin + \\spin$."
    [warning] = problems
    assert warning.severity is Severity.WARNING
    assert (Path(warning.path).name, warning.line) == ("spins.sty", 3)
    assert warning.reason == "macro \\spin expands more than 20000 times; its calls are left as written"


def test_a_paper_that_loses_some_statements_says_how_many_of_how_many(tmp_path: Path) -> None:
    paper = tmp_path / "lossy.tex"
    paper.write_text(
        "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\n"
        "\\begin{lemma}Kept.\\end{lemma}\n\\begin{lemma}\\label{empty}\\end{lemma}\n"
        "\\begin{lemma}Also kept.\\end{lemma}\n\\end{document}"
    )
    [result] = list(LatexIngestor().ingest([paper]))
    assert [r.text for r in result.records] == ["Kept.", "Also kept."]
    [warning] = result.problems
    assert warning.severity is Severity.WARNING and warning.path == str(paper)
    assert warning.reason == "2 statements extracted of the 3 theorem-like environments it begins"


@pytest.mark.parametrize("hostile", ["{" * 20_000 + "x" + "}" * 20_000, "{" * 20_000])
def test_a_brace_nest_is_refused_fast_with_its_reason_and_the_rest_is_kept(tmp_path: Path, hostile: str) -> None:
    paper = tmp_path / "nest.tex"
    paper.write_text(
        "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\n\\begin{lemma}Before.\\end{lemma}\n"
        f"\\begin{{lemma}}\\label{{lem:nest}}{hostile}\\end{{lemma}}\n\\begin{{lemma}}After.\\end{{lemma}}\n\\end{{document}}"
    )
    started = time.perf_counter()
    [result] = list(LatexIngestor().ingest([paper]))
    assert time.perf_counter() - started < 1.0
    assert [r.text for r in result.records] == ["Before.", "After."]
    # The refused statement is named once, as a refused part; it is not counted again as lost.
    [refused] = result.problems
    assert refused.reason == "lemma 2 (lem:nest) refused: its braces nest deeper than 100 levels"
    assert refused.refused_part


@pytest.mark.parametrize("style", ["class-proof", "ntheorem-proof"])
def test_proofs_declared_like_theorems_stay_proofs_of_their_statements(style: str) -> None:
    # Issue 38, point 3: llncs's \spnewtheorem*{proof} and ntheorem's \newtheorem*{proof}, pf, Proof.
    [result] = list(LatexIngestor().ingest([STYLES / style]))
    assert StatementKind.OTHER not in {r.kind for r in result.records}
    proved = {r.label: r.proof for r in result.records if r.proof}
    expected = {
        "class-proof": {
            "thm:hall": "Hall's condition holds: a set $S$ of vertices meets $k|S|$ edges.",
            "lem:count": "Count the edges from either side.",
        },
        "ntheorem-proof": {
            "thm:inf": "Any finite list $p_1, \\dots, p_n$ misses the prime factors of $p_1 \\cdots p_n + 1$.",
            "cor:div": "Euler's product for $\\zeta(s)$ as $s \\to 1$.",
            "thm:dir": "Dirichlet characters and $L(1, \\chi) \\neq 0$.",
        },
    }[style]
    assert proved == expected


def test_tex_distribution_inputs_figures_and_subfile_parts_raise_no_warning(tmp_path: Path) -> None:
    # Issue 38, point 5: only warnings a researcher can act on.
    write_files(
        tmp_path / "paper",
        {
            "main.tex": "\\documentclass{ours}\n\\input{glyphtounicode}\n\\input epsf\n\\input{missing-section}\n"
            "\\begin{document}\n\\subfile{parts/one}\n\\includestandalone{fig/pic}\n\\end{document}",
            "ours.cls": "\\LoadClass{article}\n\\input{fleqn.clo}\n\\input{size11}\n\\newtheorem{lemma}{Lemma}",
            "parts/one.tex": "\\documentclass[../main.tex]{subfiles}\n\\begin{document}\n\\input{../lib/defs}\n"
            "\\begin{lemma}Uses $\\D$.\\end{lemma}\n\\end{document}",
            "parts/two.tex": "\\documentclass[../main]{subfiles}\n\\begin{document}\nNo statements.\n\\end{document}",
            "lib/defs.tex": "\\newcommand{\\D}{\\mathbb{D}}",
            "fig/pic.tex": "\\documentclass[tikz]{standalone}\\begin{document}\\tikz\\draw (0,0) circle (1);"
            "\\end{document}",
        },
    )
    papers, problems = ingest_directory(tmp_path / "paper")
    assert [[r.text for r in p.records] for p in papers] == [["Uses $\\mathbb{D}$."]]
    assert sorted((Path(p.path).name, p.line, p.reason) for p in problems) == [
        ("main.tex", 4, "included file not found: \\input{missing-section}"),
        ("two.tex", None, "not included by main.tex (the main document of its directory): fragment skipped"),
    ]


# Issue 48, point 1: a paper with one bad part keeps its good parts; each refused part is named.
GOOD_AROUND = (
    "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\n"
    "\\begin{lemma}Every group of prime order is cyclic.\\end{lemma}\n%s\n"
    "\\begin{lemma}Every subgroup of an abelian group is normal.\\end{lemma}\n\\end{document}\n"
)
GOOD_TEXTS = ["Every group of prime order is cyclic.", "Every subgroup of an abelian group is normal."]


def test_a_section_that_inputs_the_main_file_loses_nothing(tmp_path: Path) -> None:
    paper = tmp_path / "loop"
    paper.mkdir()
    (paper / "main.tex").write_text(GOOD_AROUND % "\\input{sec}")
    (paper / "sec.tex").write_text("\\section{Loop}\\input{main}\n\\begin{lemma}Inside the loop.\\end{lemma}\n")
    [result] = list(LatexIngestor().ingest([paper]))
    assert [r.text for r in result.records] == [GOOD_TEXTS[0], "Inside the loop.", GOOD_TEXTS[1]]
    [cycle] = result.problems
    assert cycle.severity is Severity.WARNING and "include cycle through main.tex" in cycle.reason


def test_one_huge_statement_is_refused_and_the_rest_of_the_paper_kept(tmp_path: Path) -> None:
    paper = tmp_path / "huge.tex"
    huge = "The value $x_{%d}$ is positive. " * 5_000 % tuple(range(5_000))
    paper.write_text(GOOD_AROUND % f"\\begin{{lemma}}\\label{{lem:huge}}{huge}\\end{{lemma}}")
    [result] = list(LatexIngestor(IngestLimits(max_statement_source_chars=50_000)).ingest([paper]))
    assert [r.text for r in result.records] == GOOD_TEXTS
    [refused] = result.problems
    assert refused.refused_part and refused.severity is Severity.WARNING
    assert refused.reason.startswith("lemma 2 (lem:huge) refused: its source is ")
    assert "over the bound of 50,000" in refused.reason


def test_an_overlong_proof_is_dropped_and_its_statement_kept(tmp_path: Path) -> None:
    paper = tmp_path / "proof.tex"
    proof = "\\begin{proof}" + "Clear. " * 20_000 + "\\end{proof}"
    paper.write_text(GOOD_AROUND % f"\\begin{{lemma}}\\label{{lem:p}}Short.\\end{{lemma}}{proof}")
    [result] = list(LatexIngestor(IngestLimits(max_statement_source_chars=50_000)).ingest([paper]))
    assert [r.text for r in result.records] == [GOOD_TEXTS[0], "Short.", GOOD_TEXTS[1]]
    assert result.records[1].proof == ""
    [refused] = result.problems
    assert refused.refused_part and refused.reason.startswith("lemma 2 (lem:p) proof refused: its source is ")


def _include_bomb(directory: Path, levels: int = 6, fan_out: int = 10) -> None:
    """``b0`` reads ``b1`` ten times, each of which reads ``b2`` ten times ...: 10^6 reads in all."""
    for level in range(levels):
        includes = f"\\input{{b{level + 1}}}" * fan_out
        (directory / f"b{level}.tex").write_text(f"{includes} filler text\n")
    (directory / f"b{levels}.tex").write_text("leaf\n")


@pytest.mark.parametrize(
    ("limits", "bound"),
    [
        (IngestLimits(max_paper_files=300), "300 files read"),
        (IngestLimits(max_paper_chars=20_000), "20,000 characters"),
    ],
)
def test_an_include_bomb_is_cut_with_one_warning_and_the_paper_kept(
    tmp_path: Path, limits: IngestLimits, bound: str
) -> None:
    paper = tmp_path / "bomb"
    paper.mkdir()
    (paper / "main.tex").write_text(GOOD_AROUND % "\\input{b0}")
    _include_bomb(paper)
    [result] = list(LatexIngestor(limits).ingest([paper]))
    assert [r.text for r in result.records] == GOOD_TEXTS
    [bomb] = result.problems
    assert bomb.refused_part and f"the paper passed its bound of {bound} (an include bomb?)" in bomb.reason
    assert "more includes refused for the same reason" in bomb.reason


def test_an_unreadable_include_is_a_refused_part(tmp_path: Path) -> None:
    paper = tmp_path / "binary"
    paper.mkdir()
    (paper / "main.tex").write_text(GOOD_AROUND % "\\input{figure}")
    (paper / "figure.tex").write_bytes(b"\x00\x01 binary")
    [result] = list(LatexIngestor().ingest([paper / "main.tex"]))
    assert [r.text for r in result.records] == GOOD_TEXTS
    [refused] = result.problems
    assert refused.refused_part and refused.path == str(paper / "main.tex") and refused.line == 3
    assert refused.reason.startswith("\\input{figure} refused: included file unreadable: not a text file")


def test_the_report_counts_refused_parts_per_paper_and_papers_without_statements() -> None:
    report = IngestReport(
        problems=[
            IngestProblem("a.tex", "lemma 1 refused: ...", Severity.WARNING, refused_part=True),
            IngestProblem("a.tex", "\\input{x} refused: ...", Severity.WARNING, 3, refused_part=True),
            IngestProblem("a.tex", "macro \\foo ...", Severity.WARNING),
            IngestProblem("intro.tex", "no theorem-like statements found", Severity.NOTE),
        ]
    )
    assert report.errors == [] and len(report.warnings) == 3
    assert report.refused_parts == {"a.tex": 2}
    assert report.to_dict()["refused_parts"] == {"a.tex": 2} and report.to_dict()["no_statements"] == 1
    assert report.summary().endswith("0 errors, 3 warnings, 2 parts refused in 1 papers, 1 with no statements")
