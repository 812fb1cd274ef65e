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
    problems: list[IngestProblem] = field(default_factory=list)


class LatexFlattener:
    """Inline included files, relative to the main file's directory as TeX does.

    Missing files and files outside the main file's directory are reported as warnings and left out;
    include cycles and excessive depth are cut.
    """

    def __init__(self, max_depth: int = 16) -> None:
        self.max_depth = max_depth

    def flatten(self, main: Path) -> FlattenedLatex:
        result = FlattenedLatex(main=main, text="")
        result.text = self._expand(main, main.parent, result, stack=[])
        return result

    def _expand(self, path: Path, root: Path, result: FlattenedLatex, stack: list[Path]) -> str:
        resolved = path.resolve()
        text = strip_comments(read_latex_file(path))
        result.files.append(resolved)
        stack = [*stack, resolved]

        def replace(match: re.Match[str]) -> str:
            if match.group("imp"):
                directory = path.parent / match.group("dir").strip()
                target = self._resolve(match.group("file").strip(), [directory, root / match.group("dir").strip()])
            else:
                name = (match.group("name") if match.group("cmd") else match.group("bare")) or ""
                target = self._resolve(name.strip(), [root, path.parent])
            line = text.count("\n", 0, match.start()) + 1
            if target is None:
                result.problems.append(
                    IngestProblem(str(path), f"included file not found: {match.group(0)}", Severity.WARNING, line)
                )
                return ""
            if not target.resolve().is_relative_to(root.resolve()):
                # An absolute path or ../ (or a link) out of the paper: never read, but said, as for a missing file.
                result.problems.append(
                    IngestProblem(
                        str(path),
                        f"include outside the paper's directory refused: {match.group(0)}",
                        Severity.WARNING,
                        line,
                    )
                )
                return ""
            if target.resolve() in stack:
                result.problems.append(
                    IngestProblem(
                        str(path), f"include cycle through {target.name}, not followed", Severity.WARNING, line
                    )
                )
                return ""
            if len(stack) > self.max_depth:
                result.problems.append(
                    IngestProblem(str(path), f"includes nested deeper than {self.max_depth}", Severity.WARNING, line)
                )
                return ""
            try:
                return "\n" + self._expand(target, root, result, stack) + "\n"
            except LatexSourceError as error:
                result.problems.append(
                    IngestProblem(
                        str(path), f"included file unreadable: {error.problem.reason}", Severity.WARNING, line
                    )
                )
                return ""

        return _INCLUDE.sub(replace, text)

    @staticmethod
    def _resolve(name: str, directories: list[Path]) -> Path | None:
        if not name:
            return None
        for directory in directories:
            for candidate in (directory / name, directory / f"{name}.tex"):
                if candidate.is_file():
                    return candidate
        return None


def included_names(text: str) -> list[str]:
    """The file names a LaTeX text includes (used to tell main files from included ones)."""
    names = []
    for match in _INCLUDE.finditer(text):
        name = match.group("name") or match.group("bare") or match.group("file") or ""
        if name.strip():
            names.append(Path(name.strip()).name)
    return names
