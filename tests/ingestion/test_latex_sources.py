"""arXiv e-print formats, main-file choice and hostile archives."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from ingestion import LatexIngestor, Severity
from ingestion.ingest_limits import IngestLimits
from ingestion.latex_sources import choose_main_file, parse_arxiv_name
from tests.archives import tar_bytes

PAPER = rb"""\documentclass{amsart}
\newtheorem{theorem}{Theorem}
\newcommand{\R}{\mathbb{R}}
\begin{document}
\title{A paper}
\input{sections/body}
\end{document}
"""
BODY = rb"""\section{Results}
\begin{theorem}[Main]\label{thm:main} Every $x \in \R$ is real. \end{theorem}
\begin{proof} Obvious. \end{proof}
"""


def one(path: Path, limits: IngestLimits | None = None):
    results = list(LatexIngestor(limits).ingest([path]))
    assert len(results) == 1, results
    return results[0]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("2301.01234v2.tar.gz", ("2301.01234", "v2")),
        ("2301.01234.gz", ("2301.01234", "")),
        ("0704.0001v1", ("0704.0001", "v1")),
        ("math0501001.gz", ("math/0501001", "")),
        ("hep-th0501001v3.pdf", ("hep-th/0501001", "v3")),
        ("paper.tar.gz", None),
    ],
)
def test_arxiv_ids_and_versions_from_file_names(name: str, expected: tuple[str, str] | None) -> None:
    parsed = parse_arxiv_name(name)
    assert ((parsed.arxiv_id, parsed.version) if parsed else None) == expected


@pytest.mark.parametrize("layout", ["tar.gz", "gz-tar", "gz-single", "plain", "tar", "zip", "no-suffix"])
def test_every_eprint_format_gives_the_same_statement(tmp_path: Path, layout: str) -> None:
    files = {"main.tex": PAPER, "sections/body.tex": BODY}
    single = PAPER.replace(rb"\input{sections/body}", BODY)
    if layout == "tar.gz":
        path = tmp_path / "2301.00001v1.tar.gz"
        path.write_bytes(tar_bytes(files, "w:gz"))
    elif layout == "gz-tar":
        path = tmp_path / "2301.00001v1.gz"
        path.write_bytes(gzip.compress(tar_bytes(files)))
    elif layout == "gz-single":
        path = tmp_path / "2301.00001v1.gz"
        path.write_bytes(gzip.compress(single))
    elif layout == "plain":
        path = tmp_path / "2301.00001v1.tex"
        path.write_bytes(single)
    elif layout == "tar":
        path = tmp_path / "2301.00001v1.tar"
        path.write_bytes(tar_bytes(files))
    elif layout == "zip":
        path = tmp_path / "2301.00001v1.zip"
        with zipfile.ZipFile(path, "w") as zipped:
            for name, data in files.items():
                zipped.writestr(name, data)
    else:  # arXiv's e-print endpoint serves files named by the bare id
        path = tmp_path / "2301.00001v1"
        path.write_bytes(gzip.compress(tar_bytes(files)))
    result = one(path)
    [record] = result.records
    assert record.text == r"Every $x \in \mathbb{R}$ is real."
    assert (record.name, record.label, record.proof, record.section) == ("Main", "thm:main", "Obvious.", "Results")
    assert record.metadata["number"] == "1"
    if layout != "plain":
        assert (result.paper_id, result.version) == ("2301.00001", "v1")
        assert record.url == "https://arxiv.org/abs/2301.00001"


def test_main_file_is_the_document_that_includes_the_others(tmp_path: Path) -> None:
    (tmp_path / "driver.tex").write_text("\\documentclass{book}\\begin{document}\\input{chapter}\\end{document}")
    (tmp_path / "chapter.tex").write_text("\\begin{lemma} x \\end{lemma}")
    (tmp_path / "figure.tex").write_text("\\documentclass{standalone}\\begin{document}tikz\\end{document}")
    assert choose_main_file(tmp_path) == tmp_path / "driver.tex"
    # No document at all: the largest file that decodes, as the reference thesis does.
    other = tmp_path / "fragments"
    other.mkdir()
    (other / "small.tex").write_text("\\begin{lemma} a \\end{lemma}")
    (other / "large.tex").write_text("\\begin{lemma} a much longer lemma \\end{lemma}" * 3)
    (other / "binary.tex").write_bytes(b"\x00" * 5000)
    assert choose_main_file(other) == other / "large.tex"


def test_pdf_only_submissions_are_skipped_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "2301.00002.gz").write_bytes(gzip.compress(b"%PDF-1.5 binary"))
    (tmp_path / "2301.00003v1.pdf").write_bytes(b"%PDF-1.5")
    results = list(LatexIngestor().ingest(sorted(tmp_path.iterdir())))
    reasons = sorted(p.reason for r in results for p in r.problems)
    assert [r.startswith("PDF-only") for r in reasons] == [True, True], reasons


def test_bulk_monthly_tar_holds_one_eprint_per_paper(tmp_path: Path) -> None:
    good = gzip.compress(tar_bytes({"main.tex": PAPER, "sections/body.tex": BODY}))
    bulk = tmp_path / "arXiv_src_2301_001.tar"
    bulk.write_bytes(
        tar_bytes({"2301/2301.00004.gz": good, "2301/2301.00005.pdf": b"%PDF", "2301/2301.00006.gz": b"not gzip"})
    )
    results = list(LatexIngestor().ingest([bulk]))
    assert {r.paper_id for r in results if r.records} == {"2301.00004"}
    problems = {p.path.rsplit("/", 1)[-1]: p.reason for r in results for p in r.problems}
    assert problems["2301.00005.pdf"].startswith("PDF-only")
    assert "not gzip, tar or zip" in problems["2301.00006.gz"]


def _tar_with(member: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("main.tex")
        info.size = len(PAPER)
        tar.addfile(info, io.BytesIO(PAPER))
        tar.addfile(member, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = size
    return info


@pytest.mark.parametrize(
    ("archive", "reason"),
    [
        (_tar_with(_member("../../escape.tex", size=3), b"bad"), "path traversal"),
        (_tar_with(_member("/etc/evil.tex", size=3), b"bad"), "absolute path"),
        (_tar_with(_member("link.tex", tarfile.SYMTYPE, "/etc/passwd")), "link in archive"),
        (_tar_with(_member("hard.tex", tarfile.LNKTYPE, "main.tex")), "link in archive"),
        (_tar_with(_member("dev", tarfile.CHRTYPE)), "device or FIFO"),
        (_tar_with(_member("fifo", tarfile.FIFOTYPE)), "device or FIFO"),
    ],
)
def test_hostile_tar_members_refuse_the_paper_and_write_nothing_outside(
    tmp_path: Path, archive: bytes, reason: str
) -> None:
    path = tmp_path / "in" / "2301.00007.tar.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(archive))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = one(path)
    finally:
        os.chdir(cwd)
    assert not result.records
    assert reason in result.problems[0].reason and "archive refused" in result.problems[0].reason
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["2301.00007.tar.gz", "in"]


def test_decompression_bombs_and_huge_files_are_refused(tmp_path: Path) -> None:
    limits = IngestLimits(max_file_bytes=1_000_000, max_unpacked_bytes=2_000_000, max_archive_members=50)
    bomb = tmp_path / "2301.00008.gz"
    bomb.write_bytes(gzip.compress(b"\\begin{lemma}" + b" " * 20_000_000))  # 20 MB from about 20 kB
    assert "decompression bomb" in one(bomb, limits).problems[0].reason
    many = tmp_path / "2301.00009.tar"
    many.write_bytes(tar_bytes({f"f{i}.tex": b"x" for i in range(60)}))
    assert "more than 50 members" in one(many, limits).problems[0].reason
    big = tmp_path / "2301.00010.tar"
    big.write_bytes(tar_bytes({"main.tex": PAPER, "data.tex": b"%" * 1_500_000}))
    assert "limit 1,000,000" in one(big, limits).problems[0].reason
    zipped = tmp_path / "2301.00011.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("main.tex", b" " * 3_000_000)
    assert "decompression bomb" in one(zipped, limits).problems[0].reason


def test_a_runaway_macro_costs_that_macro_not_its_paper_nor_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tex"
    bad.write_text(
        "\\documentclass{article}\\newtheorem{theorem}{Theorem}\\newcommand{\\x}{\\x\\x}"
        "\\begin{document}\\begin{theorem} $\\x$ \\end{theorem}\\end{document}"
    )
    good = tmp_path / "good.tex"
    good.write_bytes(PAPER.replace(rb"\input{sections/body}", BODY))
    results = {r.paper_id: r for r in LatexIngestor(IngestLimits(max_macro_expansions=1000)).ingest([bad, good])}
    assert [r.text for r in results["bad"].records] == ["$\\x$"]
    [warning] = results["bad"].problems
    assert warning.severity is Severity.WARNING and warning.line == 1
    assert "macro \\x expands more than 1000 times; its calls are left as written" in warning.reason
    assert len(results["good"].records) == 1
