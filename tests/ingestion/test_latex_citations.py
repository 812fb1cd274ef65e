"""The keys a statement cites, and the arXiv ids a paper's bibliography gives them, in every form."""

from __future__ import annotations

from pathlib import Path

from ingestion.latex_citations import (
    arxiv_bibliography,
    bibliography_files,
    cited_keys,
    entry_arxiv_id,
    paper_arxiv_bibliography,
    statement_citations,
)
from ingestion.latex_ingestor import LatexIngestor
from ingestion.latex_sources import LatexPaper
from ingestion.records import Citation


def test_every_cite_command_gives_its_keys_in_order() -> None:
    latex = (
        r"By \cite{a} and \cite[Thm.~2.1]{b, c}, \citep[see][p.~3]{d}, \citet*{e}, \Cite{f}, \parencite{g},"
        r" \textcite{h}, \autocite{i}, \footcite{j}, \citeauthor{k}; \nocite{z} and \recite{y} are not cites."
    )
    assert cited_keys(latex) == list("abcdefghijk")
    assert cited_keys("no citations here") == []


def test_each_key_once_where_first_cited_with_its_arxiv_id() -> None:
    found = statement_citations(r"As \cite{ab, cd} shows", r"By \cite{ab} and \cite{ef}.", {"ab": "2101.01234"})
    assert found == (
        Citation("ab", "statement", "2101.01234"),
        Citation("cd", "statement", ""),
        Citation("ef", "proof", ""),
    )


def test_each_bibliography_form_names_its_arxiv_papers() -> None:
    bibitems = r"""
    \begin{thebibliography}{9}
    \bibitem[{Ab}(2001)]{ab} A. B., Title, arXiv preprint arXiv:2101.01234v2.
    \bibitem{cd} C. D., \emph{Other}, \url{https://arxiv.org/abs/math.AG/0601001}.
    \bibitem{ef} E. F., Journal 12 (2003) 1--20.
    \bibitem{gh} G. H., \arxiv{1905.00123}.
    \end{thebibliography}"""
    assert arxiv_bibliography([bibitems]) == {"ab": "2101.01234", "cd": "math/0601001", "gh": "1905.00123"}
    biblatex = r"""\entry{key1}{article}{}
      \field{eprint}{1905.00001}
      \field{eprinttype}{arxiv}
    \endentry
    \entry{key2}{article}{}
      \verb{eprint}
      \verb hep-th/9901001
      \endverb
      \field{eprinttype}{arXiv}
    \endentry
    \entry{key3}{article}{}
      \field{journal}{Ann. Math.}
    \endentry"""
    assert arxiv_bibliography([biblatex]) == {"key1": "1905.00001", "key2": "hep-th/9901001"}
    bib = """
    @comment{ not an entry, arXiv:1111.11111 }
    @ARTICLE{acv, AUTHOR = {Abramovich, Dan}, EPRINT = {math/0106211}, EPRINTTYPE = {arXiv},}
    @article{new, title = {T}, eprint = "2301.00042", archivePrefix = "arXiv"}
    @misc{note, note = {\\href{http://arxiv.org/abs/1302.1207/}{arXiv:1302.1207}}}
    @book{old, title = {A book}, year = 1977, pages = {2001.1234}}
    """
    assert arxiv_bibliography([bib]) == {"acv": "math/0106211", "new": "2301.00042", "note": "1302.1207"}
    amsrefs = r"\bib{kk}{article}{author={K}, arXiv={math/0501001v3}}"
    assert arxiv_bibliography([amsrefs]) == {"kk": "math/0501001"}


def test_broken_bibliographies_read_what_they_can() -> None:
    assert arxiv_bibliography(["@article{open, eprint = {2101.00001}, archivePrefix={arXiv}"]) == {"open": "2101.00001"}
    assert arxiv_bibliography([r"\bibitem{", "@", r"\entry{}{", "}{{{"]) == {}


def test_the_bbl_beside_the_main_file_and_the_bib_files_it_names_but_none_outside(tmp_path: Path) -> None:
    paper = tmp_path / "paper"
    paper.mkdir()
    main = paper / "main.tex"
    document = r"\bibliography{refs,../outside}\addbibresource{more.bib}"
    main.write_text(document)
    (paper / "main.bbl").write_text(r"\bibitem{a} arXiv:2101.00001")
    (paper / "refs.bib").write_text(
        "@article{a, eprint={2999.99999}, archivePrefix={arXiv}}\n@article{b, eprint={2101.00002}}"
    )
    (paper / "more.bib").write_text("@article{c, note={arXiv:2101.00003}}")
    (tmp_path / "outside.bib").write_text("@article{d, note={arXiv:2101.00004}}")
    assert [path.name for path in bibliography_files(main, document)] == ["main.bbl", "refs.bib", "more.bib"]
    # the .bbl arXiv compiled with wins a key the .bib gives too
    assert paper_arxiv_bibliography(main, document) == {"a": "2101.00001", "b": "2101.00002", "c": "2101.00003"}


def test_a_paper_ingests_with_its_citations_counted(tmp_path: Path) -> None:
    main = tmp_path / "main.tex"
    cites = ",".join(f"k{i}" for i in range(10_000))  # 10,000 keys in one proof are fine
    main.write_text(
        "\\documentclass{article}\\newtheorem{theorem}{Theorem}\\begin{document}\n"
        "\\begin{theorem}\\label{t} Every $x$ is $y$, by \\cite[Thm.~1]{ab}.\\end{theorem}\n"
        f"\\begin{{proof}} See \\cite{{cd}} and \\cite{{{cites}}}.\\end{{proof}}\n"
        "\\begin{thebibliography}{9}\\bibitem{ab} A. B., arXiv:2101.01234.\\bibitem{cd} C. D., a book.\n"
        "\\end{thebibliography}\\end{document}"
    )
    result = LatexIngestor().ingest_paper(LatexPaper("paper", main, str(main)))
    [record] = result.records
    assert record.citations[:2] == (Citation("ab", "statement", "2101.01234"), Citation("cd", "proof", ""))
    assert len(record.citations) == 10_002 and (result.citations, result.arxiv_citations) == (10_002, 1)


def test_a_long_run_of_spaces_after_arxiv_is_read_in_linear_time() -> None:
    """Issue 61, defect 10: "arXiv" then 400 spaces backtracked for over a minute (a hung ingest where papers
    are not isolated). The whitespace runs are possessive now; 20,000 spaces would take hours the old way."""
    import time

    started = time.perf_counter()
    for text in ("arXiv" + " " * 20_000 + "x", "eprint" + " " * 20_000 + "x", "archiveprefix =" + " " * 20_000):
        assert entry_arxiv_id(text) == ""
    assert time.perf_counter() - started < 5  # milliseconds here; a hang, not a speed target, is what fails
    assert entry_arxiv_id("arXiv preprint arXiv:   2101.01234v2") == "2101.01234"
    assert entry_arxiv_id("eprint = { arXiv:2101.01234 }") == "2101.01234"
