"""Find the LaTeX papers inside what a user points at: files, directories and archives.

A *paper* is one main file (the one holding ``\\begin{document}``) with the files it includes.
Archives are unpacked into a working directory first. Nothing here parses statements.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ingestion.latex_files import included_names, read_latex_file
from ingestion.latex_text import strip_comments
from ingestion.problems import IngestProblem, LatexSourceError

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".gz")


@dataclass(frozen=True, slots=True)
class LatexPaper:
    """One main LaTeX file and the id of the paper it makes."""

    paper_id: str
    main: Path
    origin: str  # the file, directory or archive the user named, for messages


def archive_stem(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


# Main-file names that say nothing about the paper; such a file is named after its directory.
GENERIC_MAIN_STEMS = frozenset({"main", "paper", "ms", "article", "manuscript", "root", "arxiv"})


def single_file_paper_id(path: Path) -> str:
    """``algebra.tex`` is paper "algebra"; ``hott-book/main.tex`` is paper "hott-book"."""
    if path.stem.lower() in GENERIC_MAIN_STEMS and path.parent.name:
        return path.resolve().parent.name
    return path.stem


def discover_papers(path: Path, workdir: Path) -> Iterator[LatexPaper | IngestProblem]:
    """Yield each paper found under ``path``; unreadable inputs are yielded as problems."""
    if not path.exists():
        yield IngestProblem(str(path), "no such file or directory")
    elif path.is_dir():
        yield from _papers_in_directory(path, workdir, origin=str(path))
    elif is_archive(path):
        try:
            unpacked = _unpack(path, workdir)
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as error:
            yield IngestProblem(str(path), f"cannot unpack archive: {error}")
            return
        yield from _papers_in_directory(unpacked, workdir, origin=str(path))
    elif path.suffix.lower() in (".tex", ".ltx", ".latex"):
        yield LatexPaper(single_file_paper_id(path), path, str(path))
    elif path.suffix.lower() == ".pdf":
        yield IngestProblem(str(path), "PDF-only source: no LaTeX to extract statements from")
    else:
        yield IngestProblem(str(path), f"not a LaTeX file or archive (suffix {path.suffix or 'none'!r})")


def _papers_in_directory(directory: Path, workdir: Path, origin: str) -> Iterator[LatexPaper | IngestProblem]:
    tex_files: dict[Path, str] = {}
    for file in sorted(p for p in directory.rglob("*") if p.is_file()):
        if file.suffix.lower() in (".tex", ".ltx"):
            try:
                tex_files[file] = strip_comments(read_latex_file(file))
            except LatexSourceError as error:
                yield error.problem
        elif is_archive(file):
            yield from discover_papers(file, workdir)

    included = {name for text in tex_files.values() for name in included_names(text)}
    included |= {name + ".tex" for name in included}

    def is_included(file: Path) -> bool:
        return file.name in included

    mains = [f for f, text in tex_files.items() if "\\begin{document}" in text and not is_included(f)]
    fragments = [f for f, text in tex_files.items() if "\\begin{document}" not in text and not is_included(f)]
    mains_per_directory: dict[Path, int] = defaultdict(int)
    for main in mains:
        mains_per_directory[main.parent] += 1
    for main in mains:
        # A directory holding one paper is named after it (an arXiv id, a project name).
        paper_id = main.parent.name if mains_per_directory[main.parent] == 1 else main.stem
        yield LatexPaper(paper_id, main, origin)
    for fragment in fragments:
        yield LatexPaper(fragment.stem, fragment, origin)


def _unpack(archive: Path, workdir: Path) -> Path:
    """Unpack an archive into ``workdir/<stem>`` (path traversal refused) and return that dir."""
    target = workdir / archive_stem(archive)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    name = archive.name.lower()
    if name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.namelist():
                if member.startswith("/") or ".." in Path(member).parts:
                    raise OSError(f"unsafe path in archive: {member}")
            zipped.extractall(target)
    elif name.endswith(".gz") and not name.endswith((".tar.gz", ".tgz")):
        # arXiv serves single-file submissions gzipped, and multi-file ones as a tar inside .gz.
        with gzip.open(archive) as handle:
            data = handle.read()
        if _is_tar(data):
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(target, filter="data")
        else:
            (target / f"{archive_stem(archive)}.tex").write_bytes(data)
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
    return target


def _is_tar(data: bytes) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)):
            return True
    except tarfile.TarError:
        return False
