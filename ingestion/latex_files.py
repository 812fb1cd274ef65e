"""Reading LaTeX files and flattening ``\\input``/``\\include`` trees into one text."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.latex_text import strip_comments
from ingestion.problems import IngestProblem, LatexSourceError, Severity

_INCLUDE = re.compile(
    r"\\(?P<cmd>input|include|subfile)\s*\{(?P<name>[^{}]*)\}"
    r"|\\input\s+(?P<bare>[^\s{}\\]+)"
    r"|\\(?P<imp>import|subimport|includefrom|subincludefrom|inputfrom|subinputfrom)\*?"
    r"\s*\{(?P<dir>[^{}]*)\}\s*\{(?P<file>[^{}]*)\}"
)
# The packages and classes a file loads; those that sit in the paper's directory are the paper's own.
_PACKAGE = re.compile(
    r"\\(?P<cmd>usepackage|RequirePackage|documentclass|LoadClass)\s*(?:\[[^\]]*\]\s*)?\{(?P<names>[^{}]*)\}"
)

# Files of the TeX distribution that papers and classes read by name (``\\input{glyphtounicode}``,
# ``\\input epsf``, a class's ``\\input{fleqn.clo}``): TeX finds them in its own tree, so a paper does
# not ship them and their absence is nothing for its author to fix.
_TEX_DISTRIBUTION_FILES = frozenset(
    {
        "glyphtounicode",
        "glyphtounicode-cmr",
        "epsf",
        "epsfig",
        "psfig",
        "xy",
        "xypic",
        "pictex",
        "prepictex",
        "postpictex",
        "pstricks",
        "texdraw",
        "amssym",
        "amstex",
        "mssymb",
        "tikz",
        "pgf",
        "miniltx",
        "diagxy",
    }
)
# What only TeX's tree holds: class options, definitions, configuration, font and language files.
_TEX_DISTRIBUTION_SUFFIXES = (".clo", ".def", ".cfg", ".fd", ".ldf", ".dfu", ".sty", ".cls", ".code.tex")


def is_tex_distribution_file(name: str) -> bool:
    """Whether ``\\input{name}`` reads a file of the TeX distribution, not one of the paper's."""
    name = name.strip().lower()
    return name.endswith(_TEX_DISTRIBUTION_SUFFIXES) or name.removesuffix(".tex") in _TEX_DISTRIBUTION_FILES


# UTF-32's marks begin with UTF-16's, so they are tried first.
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def read_latex_file(path: Path) -> str:
    """Read a LaTeX file as text; binary or unreadable files raise :class:`LatexSourceError`."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise LatexSourceError(str(path), f"cannot read file: {error.strerror or error}") from error
    # A byte-order mark says the encoding; UTF-16/32 text is full of NUL bytes, so look for it first.
    encoding = next((name for bom, name in _BYTE_ORDER_MARKS if data.startswith(bom)), None)
    if encoding:
        try:
            return data.decode(encoding)  # these codecs drop the mark itself
        except UnicodeDecodeError as error:
            raise LatexSourceError(
                str(path), f"not valid {encoding} text after its byte-order mark: {error.reason}"
            ) from error
    if b"\x00" in data[:8192]:
        raise LatexSourceError(str(path), "not a text file (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Older arXiv sources are often Latin-1; every byte string decodes as Latin-1.
        return data.decode("latin-1")


@dataclass
class FlattenedLatex:
    """A main file with every include inlined and comments removed."""

    main: Path
    text: str
    files: list[Path] = field(default_factory=list)
    # The paper's own packages and class (``.sty``/``.cls`` in its directory), in load order: read for
    # their definitions (theorem environments, macros), never as the paper's text.
    packages: list[str] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    chars: int = 0  # characters read so far, every inclusion counted
    refused_for_size: int = 0  # includes refused because the paper's text passed its bound


class LatexFlattener:
    """Inline included files and the paper's own packages, as TeX would read them.

    An include is looked up beside the file that includes it, then in the main file's directory
    (where TeX runs); a name that matches a file only up to letter case (written on a case-insensitive
    file system) is taken, with a warning. ``\\usepackage``/``\\RequirePackage``/``\\documentclass``/
    ``\\LoadClass`` of a ``.sty``/``.cls`` that sits in the paper's directory read that file, recursively,
    into :attr:`FlattenedLatex.packages`: its theorem environments and macros are the paper's. Missing
    files and files outside the main file's directory are reported as warnings and left out, except
    the TeX distribution's own files (a class's ``\\input{fleqn.clo}``, ``\\input{glyphtounicode}``),
    which TeX finds in its tree; include cycles and excessive depth are cut. Each refused include
    (unreadable, too deep, outside the paper, past the paper's size bound) is one warning marked as
    a refused part; the rest of the paper is read.
    """

    def __init__(self, max_depth: int = 16, max_chars: int = 16_000_000, max_files: int = 5_000) -> None:
        self.max_depth = max_depth
        self.max_chars = max_chars
        self.max_files = max_files

    def flatten(self, main: Path) -> FlattenedLatex:
        result = FlattenedLatex(main=main, text="")
        result.text = self._expand(main, main.parent, result, stack=[])
        if result.refused_for_size > 1:
            # One warning for a bomb's thousands of refusals: the first, with how many followed it.
            first = next(i for i, p in enumerate(result.problems) if "the paper passed its bound" in p.reason)
            problem = result.problems[first]
            more = f" ({result.refused_for_size - 1} more includes refused for the same reason)"
            result.problems[first] = IngestProblem(
                problem.path, problem.reason + more, problem.severity, problem.line, refused_part=True
            )
        return result

    def _expand(self, path: Path, root: Path, result: FlattenedLatex, stack: list[Path]) -> str:
        resolved = path.resolve()
        text = strip_comments(read_latex_file(path))
        result.files.append(resolved)
        result.chars += len(text)
        stack = [*stack, resolved]

        def warn(reason: str, match: re.Match[str], refused_part: bool = False) -> str:
            line = text.count("\n", 0, match.start()) + 1
            result.problems.append(IngestProblem(str(path), reason, Severity.WARNING, line, refused_part))
            return ""

        def inline(target: Path, match: re.Match[str]) -> str | None:
            """The target's text, or None (with a warning) when it must not be read."""
            if not target.resolve().is_relative_to(root.resolve()):
                # An absolute path or ../ (or a link) out of the paper: never read, but said, as for a missing file.
                warn(f"include outside the paper's directory refused: {match.group(0)}", match, refused_part=True)
                return None
            if target.resolve() in stack:
                warn(f"include cycle through {target.name}, not followed", match)
                return None
            if len(stack) > self.max_depth:
                warn(f"{match.group(0)} refused: includes nested deeper than {self.max_depth}", match, True)
                return None
            over = (
                f"{self.max_chars:,} characters"
                if result.chars + _file_size(target) > self.max_chars
                else f"{self.max_files:,} files read"
                if len(result.files) >= self.max_files
                else ""
            )
            if over:
                result.refused_for_size += 1
                if result.refused_for_size == 1:
                    reason = f"{match.group(0)} refused: the paper passed its bound of {over} (an include bomb?)"
                    warn(reason, match, refused_part=True)
                return None
            try:
                return self._expand(target, root, result, stack)
            except LatexSourceError as error:
                warn(f"{match.group(0)} refused: included file unreadable: {error.problem.reason}", match, True)
                return None

        def name_of(match: re.Match[str]) -> str:
            return (match.group("file") if match.group("imp") else match.group("name") or match.group("bare")) or ""

        def replace_include(match: re.Match[str]) -> str:
            if match.group("imp"):
                directory = path.parent / match.group("dir").strip()
                found = resolve_include(match.group("file").strip(), [directory, root / match.group("dir").strip()])
            else:
                name = (match.group("name") if match.group("cmd") else match.group("bare")) or ""
                found = resolve_include(name.strip(), [path.parent, root])
            if found is None:
                # A class or package reads only TeX's own files, and names of TeX's tree are its own.
                if path.suffix.lower() in (".cls", ".sty") or is_tex_distribution_file(name_of(match)):
                    return ""
                return warn(f"included file not found: {match.group(0)}", match)
            if found.case_differs:
                warn(f"{match.group(0)} matches {found.path.name} only up to letter case; read it", match)
            body = inline(found.path, match)
            return "" if body is None else "\n" + body + "\n"

        def replace_package(match: re.Match[str]) -> str:
            # Only the paper's own packages are read; amsthm and the like are not on disk here.
            suffix = ".cls" if match.group("cmd") in ("documentclass", "LoadClass") else ".sty"
            for name in match.group("names").split(","):
                name = name.strip()
                if not name or "/" in name or "\\" in name:
                    continue
                local = path.parent / f"{name}{suffix}"
                if not local.is_file():
                    local = root / f"{name}{suffix}"
                if not local.is_file() or local.resolve() in result.files:  # LaTeX loads a package once
                    continue
                body = inline(local, match)
                if body is not None:
                    result.packages.append(body)
            return match.group(0)

        text = _INCLUDE.sub(replace_include, text)
        return _PACKAGE.sub(replace_package, text)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # reading it will say what is wrong


@dataclass(frozen=True, slots=True)
class ResolvedInclude:
    path: Path
    case_differs: bool = False  # found only by ignoring letter case


def resolve_include(name: str, directories: list[Path]) -> ResolvedInclude | None:
    """The file ``\\input{name}`` reads: ``name`` or ``name.tex`` relative to the first directory that has
    it; failing that, a file whose path matches up to letter case."""
    if not name:
        return None
    for directory in directories:
        for candidate in (directory / name, directory / f"{name}.tex"):
            if candidate.is_file():
                return ResolvedInclude(candidate)
    for directory in directories:
        for candidate in (directory / name, directory / f"{name}.tex"):
            folded = _case_insensitive(candidate)
            if folded is not None:
                return ResolvedInclude(folded, case_differs=True)
    return None


def _case_insensitive(path: Path) -> Path | None:
    parent = path.parent
    if not parent.is_dir():
        return None
    wanted = path.name.lower()
    try:
        matches = sorted(entry for entry in parent.iterdir() if entry.name.lower() == wanted and entry.is_file())
    except OSError:
        return None
    return matches[0] if matches else None


def included_names(text: str) -> list[str]:
    """The file names a LaTeX text includes, as written (``body``, ``parts/notes``, ``chap/intro.tex``)."""
    names = []
    for match in _INCLUDE.finditer(text):
        if match.group("imp"):
            directory, file = match.group("dir").strip(), match.group("file").strip()
            name = f"{directory.rstrip('/')}/{file}" if directory and file else file
        else:
            name = (match.group("name") or match.group("bare") or "").strip()
        if name:
            names.append(name)
    return names
