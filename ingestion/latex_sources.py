"""Find the LaTeX papers inside what a user points at: files, directories, archives, arXiv e-prints.

A *paper* is one main file with the files it includes. Layouts understood:

- a plain ``.tex`` file;
- an arXiv e-print, named by its id (``2301.01234v2``, ``2301.01234.gz``, ``math0501001.gz``): a
  gzipped tar, a gzipped single ``.tex``, a tar or zip, or a PDF (skipped, with the reason);
- the bulk monthly layout, ``arXiv_src_YYMM_NNN.tar``, holding one e-print per paper;
- any ``.tar.gz``/``.tgz``/``.tar``/``.zip`` of one paper;
- a directory tree: each standalone document (``\\documentclass`` and ``\\begin{document}``) is a
  paper; drivers that include the same chapters (the HoTT book's ``hott-online.tex`` and its
  siblings) are one paper, read through the file that includes the others or else the largest.
  Documents that compile on their own but belong to a paper are not papers: a TikZ figure in the
  ``standalone`` class, a ``subfiles`` part whose main document is in the tree.

Archives are unpacked safely (:mod:`ingestion.safe_archive`) into a working directory.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ingestion.contained_paths import PathEscapeError, contained_path, safe_component
from ingestion.ingest_limits import IngestLimits
from ingestion.latex_files import included_names, read_latex_file
from ingestion.latex_statements import kind_for
from ingestion.latex_text import strip_comments
from ingestion.problems import IngestProblem, LatexSourceError, Severity
from ingestion.safe_archive import (
    UnsafeArchiveError,
    content_type,
    gunzip_bounded,
    read_head,
    reset_directory,
    unpack_tar,
    unpack_zip,
)

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".gz")
LATEX_SUFFIXES = (".tex", ".ltx", ".latex")

# New-style ids (2301.01234, 0704.0001) and old-style ones (math/0501001, also written math0501001
# in file names), each with an optional version.
_NEW_ID = re.compile(r"^(?P<id>\d{4}\.\d{4,5})(?P<version>v\d+)?$")
_OLD_ID = re.compile(r"^(?P<archive>[a-z\-]+(?:\.[A-Z]{2})?)/?(?P<number>\d{7})(?P<version>v\d+)?$")
_BULK_TAR = re.compile(r"^arXiv_src_\d{4}_\d{3}\.tar$")
_STACK_EXCHANGE_DUMP = re.compile(r"^posts\.xml(?:\.gz|\.7z)?$", re.IGNORECASE)
_DOCUMENT_CLASS = re.compile(r"\\documentclass\s*(?:\[(?P<options>[^\]]*)\])?\s*\{(?P<name>[^{}]*)\}")


@dataclass(frozen=True, slots=True)
class ArxivName:
    arxiv_id: str
    version: str  # "v2", or "" when the file name does not say


def parse_arxiv_name(name: str) -> ArxivName | None:
    """The arXiv id and version in a file name such as ``2301.01234v2.tar.gz``, else None."""
    stem = name
    for suffix in (*ARCHIVE_SUFFIXES, ".pdf", *LATEX_SUFFIXES):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    match = _NEW_ID.match(stem)
    if match:
        return ArxivName(match.group("id"), match.group("version") or "")
    match = _OLD_ID.match(stem)
    if match:
        return ArxivName(f"{match.group('archive')}/{match.group('number')}", match.group("version") or "")
    return None


def safe_paper_dir_name(paper_id: str) -> str:
    """A paper id as one path component (``math/0501001`` is ``math_0501001``)."""
    return safe_component(paper_id, fallback="paper")


@dataclass(frozen=True, slots=True)
class LatexPaper:
    """One main LaTeX file and the paper it makes."""

    paper_id: str
    main: Path
    origin: str  # the file, directory or archive the user named, for messages
    version: str = ""  # arXiv version, when the file name gives one


def archive_stem(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def is_bulk_tar(path: Path) -> bool:
    return bool(_BULK_TAR.match(path.name))


# Main-file names that say nothing about the paper; such a file is named after its directory.
GENERIC_MAIN_STEMS = frozenset({"main", "paper", "ms", "article", "manuscript", "root", "arxiv"})


def single_file_paper_id(path: Path) -> str:
    """``algebra.tex`` is paper "algebra"; ``hott-book/main.tex`` is paper "hott-book"."""
    if path.stem.lower() in GENERIC_MAIN_STEMS and path.parent.name:
        return path.resolve().parent.name
    return path.stem


@dataclass(frozen=True, slots=True)
class BulkMember:
    """One e-print copied out of a bulk tar into the staging directory."""

    path: Path
    origin: str  # ``arXiv_src_2301_001.tar:2301/2301.00004.gz``, for messages
    name: ArxivName | None


def bulk_tar_members(
    path: Path,
    staging: Path,
    limits: IngestLimits,
    wanted: Callable[[ArxivName | None], bool] = lambda _: True,
    pdf_severity: Severity = Severity.ERROR,
) -> Iterator[BulkMember | IngestProblem]:
    """Stream a bulk tar member by member into ``staging`` (never the whole month on disk at once).

    PDF-only (reported with ``pdf_severity``) and oversized members are problems; members whose
    name ``wanted`` refuses are passed over.
    """
    try:
        with tarfile.open(path) as bulk:
            for member in bulk:
                if not member.isfile():
                    continue
                name = Path(member.name).name
                arxiv = parse_arxiv_name(name)
                if not wanted(arxiv):
                    continue
                origin = f"{path}:{member.name}"
                if name.lower().endswith(".pdf"):
                    yield IngestProblem(origin, "PDF-only submission: no LaTeX source", pdf_severity)
                    continue
                if member.size > limits.max_file_bytes:
                    yield IngestProblem(origin, f"e-print of {member.size:,} bytes exceeds {limits.max_file_bytes:,}")
                    continue
                handle = bulk.extractfile(member)
                if handle is None:
                    continue
                staged = contained_path(staging, name)
                staged.write_bytes(handle.read())
                yield BulkMember(staged, origin, arxiv)
    except (tarfile.TarError, OSError, EOFError, PathEscapeError) as error:
        yield IngestProblem(str(path), f"cannot read bulk archive: {error}")


class PaperFinder:
    """Yields the papers (or the problems) in the paths a user names."""

    def __init__(self, workdir: Path, limits: IngestLimits | None = None) -> None:
        self.workdir = workdir
        self.limits = limits or IngestLimits()
        self._unpacked: set[Path] = set()  # directories given to an e-print in this run

    def find(self, path: Path) -> Iterator[LatexPaper | IngestProblem]:
        if not path.exists():
            yield IngestProblem(str(path), "no such file or directory")
        elif path.is_dir():
            yield from self._papers_in_tree(path, origin=str(path))
        elif is_bulk_tar(path):
            yield from self._bulk_tar(path)
        elif _STACK_EXCHANGE_DUMP.match(path.name):
            # Read as an e-print it would be one long "paper" with no statements.
            yield IngestProblem(
                str(path), f"a Stack Exchange dump, not LaTeX: ingest it with `rag-app ingest mse {path}`"
            )
        elif path.suffix.lower() in LATEX_SUFFIXES:
            yield LatexPaper(single_file_paper_id(path), path, str(path))
        elif path.suffix.lower() == ".pdf":
            yield IngestProblem(str(path), "PDF-only source: no LaTeX to extract statements from")
        elif is_archive(path) or parse_arxiv_name(path.name):
            yield self.eprint(path, str(path))
        else:
            yield IngestProblem(str(path), f"not a LaTeX file or archive (suffix {path.suffix or 'none'!r})")

    # ------------------------------------------------------------------ one paper per file
    def eprint(self, path: Path, origin: str) -> LatexPaper | IngestProblem:
        """One paper from an e-print or archive file, whatever its compression."""
        arxiv = parse_arxiv_name(path.name)
        paper_id = arxiv.arxiv_id if arxiv else archive_stem(path)
        version = arxiv.version if arxiv else ""
        # The archive's name (``...tar.gz`` included) names a directory inside this run's own only.
        target = self._unpack_directory(paper_id, version or "src")
        main_file = contained_path(target, f"{safe_paper_dir_name(paper_id)}.tex")
        try:
            kind = content_type(read_head(path))
            if kind == "gzip":
                data = gunzip_bounded(path, self.limits.max_file_bytes)
                kind = content_type(data[:512])
                if kind == "tar":
                    unpack_tar(data, target, self.limits)
                elif kind in ("pdf", "postscript"):
                    return IngestProblem(origin, f"{kind.upper()}-only submission: no LaTeX source")
                else:
                    main_file.write_bytes(data)
            elif kind == "tar":
                unpack_tar(path, target, self.limits)
            elif kind == "zip":
                unpack_zip(path, target, self.limits)
            elif kind in ("pdf", "postscript"):
                return IngestProblem(origin, f"{kind.upper()}-only submission: no LaTeX source")
            elif is_archive(path):
                return IngestProblem(origin, "cannot unpack archive: not gzip, tar or zip data")
            else:
                if path.stat().st_size > self.limits.max_file_bytes:
                    return IngestProblem(origin, f"file larger than {self.limits.max_file_bytes:,} bytes")
                main_file.write_bytes(path.read_bytes())
        except UnsafeArchiveError as error:
            return IngestProblem(origin, f"archive refused: {error}")
        except OSError as error:
            return IngestProblem(origin, f"cannot read: {error}")
        main = choose_main_file(target)
        if main is None:
            return IngestProblem(origin, "no decodable LaTeX file in the submission (binary or empty)")
        return LatexPaper(paper_id, main, origin, version)

    def _unpack_directory(self, paper_id: str, version: str) -> Path:
        """A fresh directory for one e-print. Two names that make the same safe name (``..tar.gz`` and
        ``...tar.gz``, or one e-print named twice) get two directories: a paper still being parsed
        is never unpacked over."""
        target = contained_path(self.workdir, paper_id, version)
        copy = 1
        while target in self._unpacked:
            copy += 1
            target = contained_path(self.workdir, paper_id, f"{version}-{copy}")
        self._unpacked.add(target)
        return reset_directory(target)

    def _bulk_tar(self, path: Path) -> Iterator[LatexPaper | IngestProblem]:
        """The monthly bulk layout: each member is one paper's e-print, named by its id."""
        staging = reset_directory(contained_path(self.workdir, f"bulk-{path.stem}"))
        for member in bulk_tar_members(path, staging, self.limits):
            yield member if isinstance(member, IngestProblem) else self.eprint(member.path, member.origin)

    # ------------------------------------------------------------------ directory trees
    def _papers_in_tree(self, directory: Path, origin: str) -> Iterator[LatexPaper | IngestProblem]:
        tex_files: dict[Path, str] = {}
        for file in sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink()):
            if file.suffix.lower() in LATEX_SUFFIXES:
                try:
                    tex_files[file] = strip_comments(read_latex_file(file))
                except LatexSourceError as error:
                    yield error.problem
            elif is_bulk_tar(file):
                yield from self._bulk_tar(file)
            elif is_archive(file):
                yield self.eprint(file, str(file))
        graph = IncludeGraph(tex_files)
        for fragment, main in graph.fragments().items():
            yield IngestProblem(
                str(fragment),
                f"not included by {main.name} (the main document of its directory): fragment skipped",
                Severity.WARNING,
            )
        for main in graph.papers():
            paper_id = main.parent.name if graph.single_paper_in(main.parent) else single_file_paper_id(main)
            yield LatexPaper(paper_id, main, origin)


class IncludeGraph:
    """Which LaTeX files include which, to tell main files from chapters and drivers."""

    def __init__(self, texts: dict[Path, str]) -> None:
        self.texts = texts
        # Every file by its resolved path, and by that path in lower case for includes written on a
        # case-insensitive file system (``\\input{slodowy}`` beside ``Slodowy.tex``).
        self._exact = {file.resolve(): file for file in texts}
        self._folded = {str(path).lower(): file for path, file in sorted(self._exact.items(), reverse=True)}
        self.includes: dict[Path, set[Path]] = {}
        for file, text in texts.items():
            targets = {target for name in included_names(text) if (target := self._resolve(file, name)) is not None}
            targets.discard(file)
            self.includes[file] = targets
        self._closure: dict[Path, set[Path]] = {}
        self._classes: dict[Path, tuple[str, str]] = {}
        self._papers: list[Path] | None = None
        self._document_lists: tuple[list[Path], list[Path]] | None = None

    def _resolve(self, includer: Path, name: str) -> Path | None:
        """The file ``includer`` reads for ``\\input{name}``: by path, beside the includer first, then in
        each directory above it (one of which is the main file's, where TeX runs); never by base name
        alone, so ``\\input{parts/notes}`` is not the main ``notes.tex``."""
        directory = includer.parent.resolve()
        candidates = [c.resolve() for d in (directory, *directory.parents) for c in (d / name, d / f"{name}.tex")]
        exact = next((self._exact[c] for c in candidates if c in self._exact), None)
        return exact or next((self._folded[k] for c in candidates if (k := str(c).lower()) in self._folded), None)

    def closure(self, file: Path, max_depth: int = 16) -> set[Path]:
        if file not in self._closure:
            seen: set[Path] = set()
            frontier = [file]
            for _ in range(max_depth):
                frontier = [t for f in frontier for t in self.includes.get(f, ()) if t not in seen]
                seen.update(frontier)
                if not frontier:
                    break
            # A file reached again through a cycle (a section that inputs the main file) is not
            # part of itself: were it, a main file would count as included and its paper vanish.
            seen.discard(file)
            self._closure[file] = seen
        return self._closure[file]

    def is_standalone(self, file: Path) -> bool:
        """Has ``\\begin{document}`` and ``\\documentclass`` (itself or in what it includes), and is not
        a piece of a paper that compiles on its own (:meth:`is_figure`, :meth:`is_subfile_part`)."""
        text = self.texts[file]
        if "\\begin{document}" not in text or self.is_figure(file) or self.is_subfile_part(file):
            return False
        return "\\documentclass" in text or any("\\documentclass" in self.texts[f] for f in self.closure(file))

    def is_figure(self, file: Path) -> bool:
        """A picture in the ``standalone`` class (a TikZ figure the paper reads with
        ``\\includestandalone``), with no statements of its own."""
        name, _ = self._document_class(file)
        return name == "standalone" and not _has_theorem_like(self.texts[file])

    def is_subfile_part(self, file: Path) -> bool:
        """A ``subfiles`` part (``\\documentclass[../main.tex]{subfiles}``) whose main document is in the
        tree: a part of that paper, compiled on its own only while it is written."""
        name, options = self._document_class(file)
        return name == "subfiles" and bool(options) and self._resolve(file, options) is not None

    def _document_class(self, file: Path) -> tuple[str, str]:
        """The class ``file`` declares and its options, or empty strings."""
        if file not in self._classes:
            found = _DOCUMENT_CLASS.search(self.texts[file])
            name, options = (found.group("name"), found.group("options") or "") if found else ("", "")
            self._classes[file] = (name.strip(), options.strip())
        return self._classes[file]

    def size(self, file: Path) -> int:
        return len(self.texts[file]) + sum(len(self.texts[f]) for f in self.closure(file))

    def _has_content(self, file: Path) -> bool:
        # Drivers of one book share the chapters that hold its statements; independent documents
        # may share a preamble or a table of contents, which does not make them one paper.
        return _has_theorem_like(self.texts[file])

    def papers(self) -> list[Path]:
        """Main files: standalone documents, one per group sharing content, plus loose fragments."""
        if self._papers is not None:
            return self._papers
        standalone, mains = self._documents()
        groups: list[list[Path]] = []
        for main in sorted(mains, key=self.size, reverse=True):
            shared = {f for f in self.closure(main) if self._has_content(f)}
            for group in groups:
                if shared & {f for g in group for f in self.closure(g)}:
                    group.append(main)
                    break
            else:
                groups.append([main])
        chosen = [group[0] for group in groups]  # the largest of each group
        # Loose files with statements that no file includes (notes, a bare chapter), outside any
        # paper's directory; inside one they are fragments (see :meth:`fragments`).
        for file in self._loose():
            outside_papers = self._paper_around(file, mains) is None
            if outside_papers and _has_theorem_like(self.texts[file]) and not (self.closure(file) & set(standalone)):
                chosen.append(file)
        self._papers = sorted(chosen)
        return self._papers

    def fragments(self) -> dict[Path, Path]:
        """Files in a paper's directory that no document includes (old drafts, commented-out
        ``\\input``s, pieces), each with the main file of that paper: they are not part of it."""
        standalone, mains = self._documents()
        # A driver that reads a document (``hott-a4.tex``: options, then ``\\input{main}``) or a file
        # with its own ``\\documentclass`` is not a piece of another paper.
        loose = [
            f
            for f in self._loose()
            if ("\\documentclass" not in self.texts[f] or self.is_subfile_part(f))
            and not (self.closure(f) & set(standalone))
        ]
        found = {file: self._paper_around(file, mains) for file in loose}
        return {file: main for file, main in sorted(found.items()) if main is not None}

    def _documents(self) -> tuple[list[Path], list[Path]]:
        """The standalone documents, and those of them no other one includes (the mains)."""
        if self._document_lists is None:
            standalone = [f for f in self.texts if self.is_standalone(f)]
            # A standalone file included by another standalone one is part of it (a driver's main.tex).
            included_by_standalone = {g for f in standalone for g in self.closure(f)}
            self._document_lists = (standalone, [f for f in standalone if f not in included_by_standalone])
        return self._document_lists

    def _loose(self) -> list[Path]:
        """Files that are not documents of their own and that no file includes."""
        included_anywhere = set().union(*self.includes.values())
        return [f for f in self.texts if f not in included_anywhere and not self.is_standalone(f)]

    def _paper_around(self, file: Path, mains: list[Path]) -> Path | None:
        """The main document whose directory holds ``file`` (the nearest one), if any."""
        holders = [m for m in mains if file.parent == m.parent or m.parent in file.parents]
        return max(holders, key=lambda m: len(m.parent.parts)) if holders else None

    def single_paper_in(self, directory: Path) -> bool:
        return sum(1 for main in self.papers() if main.parent == directory) == 1


def theorem_like_names(text: str) -> list[str]:
    """The theorem-like environments ``text`` begins (by their usual names), in order, once each."""
    names = re.findall(r"\\begin\{([A-Za-z]+)\*?\}", text)
    return list(dict.fromkeys(name for name in names if kind_for(name) is not None))


def _has_theorem_like(text: str) -> bool:
    return bool(theorem_like_names(text))


def choose_main_file(directory: Path) -> Path | None:
    """The main file of a one-paper submission.

    The standalone document that includes the others; else the largest with its includes; else,
    as the reference thesis does, the largest ``.tex`` file that decodes.
    """
    texts: dict[Path, str] = {}
    for file in sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix.lower() in LATEX_SUFFIXES):
        try:
            texts[file] = strip_comments(read_latex_file(file))
        except LatexSourceError:
            continue
    if not texts:
        return None
    graph = IncludeGraph(texts)
    standalone = [f for f in texts if graph.is_standalone(f)]
    if standalone:
        return max(standalone, key=lambda f: (len(graph.closure(f) & set(standalone)), graph.size(f)))
    return max(texts, key=lambda f: len(texts[f]))
