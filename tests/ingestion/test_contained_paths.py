"""Paths built from names found in input stay inside the run's own directories (issue 48, point 2)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from ingestion.contained_paths import PathEscapeError, contained_path, ensure_inside, safe_component
from ingestion.ingest_limits import IngestLimits
from ingestion.latex_sources import LatexPaper, PaperFinder, bulk_tar_members
from ui.uploads import save_upload

HOSTILE_NAMES = ["..", "...", ".", "", "../../etc/passwd", "/etc/passwd", "a/../../b", "..\\..\\x", "\x00", ".bashrc"]
PAPER = (
    b"\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\\begin{lemma}Kept.\\end{lemma}\\end{document}"
)


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _everything_under(directory: Path) -> set[Path]:
    return {path.relative_to(directory) for path in directory.rglob("*")}


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_every_hostile_name_becomes_one_component_inside_the_directory(tmp_path: Path, name: str) -> None:
    component = safe_component(name)
    assert component and "/" not in component and "\\" not in component and not component.startswith(".")
    path = contained_path(tmp_path, name, name)
    assert path.parent.parent == tmp_path


def test_ids_and_file_names_keep_their_readable_form(tmp_path: Path) -> None:
    assert safe_component("math/0501001") == "math_0501001"
    assert safe_component("2301.01234v2.tar.gz") == "2301.01234v2.tar.gz"
    assert contained_path(tmp_path, "2301.01234", "v2") == tmp_path / "2301.01234" / "v2"


def test_a_kept_relative_path_that_leaves_the_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "link").symlink_to(tmp_path.parent)
    assert ensure_inside(tmp_path / "inside", Path("dir/Posts.xml")) == tmp_path / "inside" / "dir" / "Posts.xml"
    for escaping in (Path("../x"), Path("/etc/passwd"), Path("link/x"), Path(".")):
        with pytest.raises(PathEscapeError):
            ensure_inside(tmp_path / "inside", escaping)


@pytest.mark.parametrize("archive_name", ["...tar.gz", "..tar.gz", ".tar.gz", "..zip", "...gz"])
def test_an_archive_named_dots_unpacks_inside_the_runs_own_directory(tmp_path: Path, archive_name: str) -> None:
    # The probe: an archive named `...tar.gz` deleted TMPDIR/src and unpacked there.
    run = tmp_path / "tmp"
    workdir = run / "rag-app-unpack-x"
    workdir.mkdir(parents=True)
    (run / "src").mkdir()
    (run / "src" / "KEEP").write_text("a neighbour's file")
    sources = tmp_path / "in"
    sources.mkdir()
    data = _tar_gz({"main.tex": PAPER}) if not archive_name.endswith(".zip") else b"not a zip"
    (sources / archive_name).write_bytes(data)
    found = list(PaperFinder(workdir).find(sources / archive_name))
    assert (run / "src" / "KEEP").read_text() == "a neighbour's file"
    assert _everything_under(run) - {Path("src"), Path("src/KEEP")} == {
        p.relative_to(run) for p in workdir.rglob("*")
    } | {Path("rag-app-unpack-x")}
    papers = [item for item in found if isinstance(item, LatexPaper)]
    assert all(paper.main.resolve().is_relative_to(workdir.resolve()) for paper in papers)


def test_two_archives_with_the_same_safe_name_get_two_directories(tmp_path: Path) -> None:
    sources = tmp_path / "in"
    sources.mkdir()
    (sources / "..tar.gz").write_bytes(_tar_gz({"main.tex": PAPER}))
    (sources / "...tar.gz").write_bytes(_tar_gz({"main.tex": PAPER.replace(b"Kept", b"Other")}))
    finder = PaperFinder(tmp_path / "work")
    first, second = (finder.find(sources / name) for name in ("..tar.gz", "...tar.gz"))
    [paper_one], [paper_two] = list(first), list(second)
    assert isinstance(paper_one, LatexPaper) and isinstance(paper_two, LatexPaper)
    assert paper_one.main.parent != paper_two.main.parent and b"Kept" in paper_one.main.read_bytes()


def test_a_bulk_tar_member_named_dot_dot_is_staged_inside(tmp_path: Path) -> None:
    bulk = tmp_path / "arXiv_src_2301_001.tar"
    with tarfile.open(bulk, "w") as tar:
        for name in ("2301/..", "2301/2301.00001.gz"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
    staging = tmp_path / "staging"
    staging.mkdir()
    staged = list(bulk_tar_members(bulk, staging, IngestLimits()))
    assert {member.path.parent for member in staged} == {staging}  # type: ignore[union-attr]
    assert _everything_under(tmp_path) == {Path("arXiv_src_2301_001.tar"), Path("staging")} | {
        Path("staging") / p for p in _everything_under(staging)
    }


@pytest.mark.parametrize("name", ["../../evil.tex", "/etc/cron.d/x.tex", "..\\..\\x.tex", "../.tex.tex"])
def test_an_uploaded_file_name_is_written_inside_the_uploads_directory(tmp_path: Path, name: str) -> None:
    uploads = tmp_path / "data" / "uploads"
    path = save_upload(name, PAPER, uploads, 10**6)
    assert path.parent == uploads and path.read_bytes() == PAPER
