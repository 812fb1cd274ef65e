from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app.answering.answer import Answer
from rag_app.answering.stages import AnswerStatus, Checks, Generation, Relevance, Retrieval
from retriever.types import SearchHit
from ui.export import answer_markdown, arxiv_id, bibtex_entries, bibtex_entry, source_heading, source_origin
from ui.uploads import UploadError, save_upload


def arxiv(**overrides: object) -> StatementRecord:
    values: dict[str, object] = {
        "id": "a1", "source": Source.ARXIV, "kind": StatementKind.LEMMA, "text": "$x = x$", "paper_id": "2401.01234",
        "name": "Reflexivity", "title": "Equality & its discontents: $\\mathbb{Z}$", "url": "https://arxiv.org/abs/2401.01234",
        "metadata": {"number": "10.12.3", "authors": "A. Author, B. Writer and C. Third", "published": "2024-01-05",
                     "primary_category": "math.LO", "doi": "10.1000/xyz"},
    }  # fmt: skip
    values.update(overrides)
    return StatementRecord(**values)  # type: ignore[arg-type]


def test_headings_and_origins() -> None:
    assert source_heading(arxiv()) == "Lemma 10.12.3 (Reflexivity)"
    assert source_heading(arxiv(metadata={}, kind=StatementKind.DEFINITION, name="Noetherian ring")) == (
        "Definition (Noetherian ring)"
    )
    mse = StatementRecord("m", Source.MSE, StatementKind.ANSWER, "t", "mse-1", name="Why?", title="Why is 1 > 0?")
    assert source_heading(mse) == "Answer" and source_origin(mse) == "Math StackExchange: Why is 1 > 0?"
    assert source_origin(arxiv()).endswith("A. Author, B. Writer, C. Third — arXiv:2401.01234")
    assert arxiv_id(arxiv(paper_id="math/0101001v2", url="")) == "math/0101001"
    assert arxiv_id(mse) is None
    assert source_heading(arxiv(name="Cayley--Hamilton")) == "Lemma 10.12.3 (Cayley\u2013Hamilton)"
    assert source_heading(arxiv(name="$a--b$")) == "Lemma 10.12.3 ($a--b$)", "math is left alone"


def test_bibtex_for_arxiv_sources_only() -> None:
    entry = bibtex_entry(arxiv())
    assert entry is not None and entry.startswith("@misc{arxiv:2401.01234,")
    assert "title = {{Equality \\& its discontents: $\\mathbb{Z}$}}" in entry  # braces kept for LaTeX
    assert "author = {A. Author and B. Writer and C. Third}" in entry
    for line in ("year = {2024}", "eprint = {2401.01234}", "archivePrefix = {arXiv}", "primaryClass = {math.LO}"):
        assert line in entry
    local = StatementRecord("l", Source.LOCAL, StatementKind.LEMMA, "t", "notes")
    assert bibtex_entry(local) is None
    hits = [SearchHit(arxiv(), 1.0, 1), SearchHit(arxiv(id="a2"), 0.9, 2), SearchHit(local, 0.5, 3)]
    assert bibtex_entries(hits).count("@misc") == 1, "one entry per paper"


def test_answer_markdown_has_numbered_references() -> None:
    question, hits = "Is $x = x$?", [SearchHit(arxiv(), 1.0, 1)]
    answer = Answer(
        question,
        Retrieval.of_hits(hits, question),
        Relevance(np.ones(1), 0.5),
        Generation("answer@v1", "synthesis", sources=tuple(hits)),
        Checks("Yes [1].", AnswerStatus.ANSWERED, cited=[1]),
    )
    text = answer_markdown(answer)
    assert text.startswith("**Q:** Is $x = x$?\n\nYes [1].\n\n**References**")
    assert "[1] Lemma 10.12.3 (Reflexivity). Equality & its discontents" in text
    assert text.rstrip().endswith("<https://arxiv.org/abs/2401.01234>")


def test_uploads_are_checked_and_saved_with_safe_names(tmp_path: Path) -> None:
    saved = save_upload("../../evil name.tex", b"\\begin{theorem}x\\end{theorem}", tmp_path, 1000)
    assert saved == tmp_path / "evil_name.tex" and saved.read_bytes().startswith(b"\\begin")
    with pytest.raises(UploadError, match=r"paper.pdf: not a LaTeX source"):
        save_upload("paper.pdf", b"%PDF", tmp_path, 1000)
    with pytest.raises(UploadError, match=r"big.tar.gz: 0.0 MB is over the limit"):
        save_upload("big.tar.gz", b"x" * 2000, tmp_path, 1000)
    with pytest.raises(UploadError, match="empty"):
        save_upload("empty.tex", b"", tmp_path, 1000)


def test_two_uploads_named_main_tex_are_two_papers_and_the_same_one_again_is_no_third(tmp_path: Path) -> None:
    """Issue 61, defect 11: every `main.tex` was saved in `uploads/` and so was paper "uploads": each upload
    replaced the statements of the one before."""
    from rag_app import MathRAG
    from tests.conftest import make_settings

    rag = MathRAG(make_settings(tmp_path))
    first = (
        b"\\documentclass{article}\\begin{document}"
        b"\\begin{theorem}Every group has an identity.\\end{theorem}\\end{document}"
    )
    second = first.replace(b"Every group has an identity", b"Every ring has a zero")
    uploads = tmp_path / "uploads"
    paths = [save_upload("main.tex", data, uploads, 10_000) for data in (first, second, first)]
    assert paths[0] == paths[2] != paths[1] and paths[0].name == "main.tex"
    for path in paths:
        assert rag.ingest([path]).errors == []
    papers = {hit.record.paper_id for hit in rag.search("identity of a group zero of a ring", k=5)}
    assert papers == {paths[0].parent.name, paths[1].parent.name} and rag.index.count() == 2
    assert save_upload("algebra.tex", first, uploads, 10_000) == uploads / "algebra.tex"  # a real name stays
