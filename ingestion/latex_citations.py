"""The papers a statement and its proof cite: ``\\cite`` keys, and the arXiv ids the paper's bibliography gives them.

A statement's citations are read like its references (:mod:`ingestion.latex_references`), from the LaTeX
with the paper's macros expanded: every key of ``\\cite``, ``\\citep``, ``\\citet``, ``\\Cite``,
``\\parencite``, ``\\textcite``, ``\\autocite``, ``\\footcite`` and their starred and optional-argument forms,
in order, each once, with where it was first cited. The paper's bibliography says which keys are arXiv
papers: its ``thebibliography`` (``\\bibitem``, also inside the paper), the ``.bbl`` arXiv ships beside the
main file (BibTeX's ``\\bibitem``s or biblatex's ``\\entry``), and the ``.bib`` files it names
(``\\bibliography{..}``, ``\\addbibresource{..}``). An entry is an arXiv paper when it gives an id as
``arXiv:2101.01234``, ``arxiv.org/abs/..``, ``\\arxiv{..}``, ``arXiv={..}`` (amsrefs), or an ``eprint``
field with an arXiv prefix or type. A cited paper that is in the index is the end of a paper-level edge
of the statement graph (:mod:`retriever.storage.statement_graph`).

Written here rather than with a BibTeX library: the ``.bbl`` forms need their own reading anyway, and only
the key and one id are wanted from each entry (bibtexparser reads a whole ``.bib`` into objects).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ingestion.latex_references import first_places
from ingestion.latex_text import read_group
from ingestion.records import Citation

MAX_BIBLIOGRAPHY_BYTES = 4_000_000  # a .bib or .bbl larger than this is not read (a real one is < 1 MB)

_ID = r"(?P<id>\d{4}\.\d{4,5}|[a-zA-Z\-]+(?:\.[A-Za-z]{2})?/\d{7})(?:v\d+)?(?![\d])"
_CITE = re.compile(
    r"\\(?:[cC]ite[a-zA-Z]*|[pP]arencite|[tT]extcite|[aA]utocite|[fF]ootcite[a-z]*|[sS]martcite|[sS]upercite)"
    r"\*?\s*(?:\[[^\]]*\]\s*){0,2}(?=\{)"
)
# An id in an entry's text: after "arXiv:", "arXiv preprint", "arxiv.org/abs/", \arxiv{, arXiv={ (amsrefs).
# Whitespace runs are possessive (``\s*+``): with optional parts between them, plain ``\s*`` can split one
# run of spaces among three of them, and "arXiv" followed by 200 spaces took 5.7 s (400: over a minute).
_ARXIV_IN_TEXT = re.compile(
    r"(?:arxiv\.org/(?:abs|pdf)/|arxiv\s*+(?:preprint\s++)?(?:arxiv)?\s*+[:=]?\s*+\{?\s*+|\\arxiv\s*+\{\s*+)" + _ID,
    re.IGNORECASE,
)
# An eprint field: BibTeX's eprint = {..} / "..", biblatex's \field{eprint}{..} or \verb{eprint} \verb ..
_EPRINT = re.compile(r"eprint\s*+(?:=\s*+[{\"]|\}\s*+\{|\}\s*+\\verb\s++)\s*+(?:arxiv:)?\s*+" + _ID, re.IGNORECASE)
_ARXIV_TYPE = re.compile(r"(?:archiveprefix|eprinttype)\s*+(?:=\s*+[{\"]?|\}\s*+\{)\s*+arxiv", re.IGNORECASE)
# Where an entry begins: \bibitem[label]{key}, biblatex's \entry{key}{type}, amsrefs' \bib{key}{type}.
_ENTRY = re.compile(
    r"\\bibitem\s*(?:\[(?:[^\[\]]|\[[^\]]*\])*\])?\s*\{(?P<item>[^{}]*)\}"
    r"|\\entry\s*\{(?P<entry>[^{}]*)\}\s*\{"
    r"|\\bib\s*\{(?P<ams>[^{}]*)\}\s*\{"
)
_BIB_ENTRY = re.compile(r"@(?P<type>[a-zA-Z]+)\s*(?=\{)")
_BIB_FILES = re.compile(r"\\(?:bibliography|addbibresource|addglobalbib)\s*(?:\[[^\]]*\]\s*)?\{(?P<names>[^{}]*)\}")


def cited_keys(latex: str) -> list[str]:
    """Every key ``latex`` cites, in order, with repeats (one ``\\cite{a,b}`` gives both)."""
    if "cite" not in latex:  # most statements, at no cost: every command above contains "cite"
        return []
    found: list[str] = []
    for match in _CITE.finditer(latex):
        keys, _ = read_group(latex, match.end())
        found.extend(keys.split(","))
    return [key.strip() for key in found if key.strip()]


def statement_citations(statement: str, proof: str, arxiv_ids: Mapping[str, str]) -> tuple[Citation, ...]:
    """The keys cited in ``statement`` then in ``proof``, each once, where first cited, with the arXiv id
    the paper's bibliography gives each (``arxiv_ids``: :func:`arxiv_bibliography`)."""
    first_place = first_places(statement, proof, cited_keys)
    return tuple(Citation(key, where, arxiv_ids.get(key, "")) for key, where in first_place.items())


def normalized_arxiv_id(found: str) -> str:
    """An arXiv id as the index keeps paper ids, without its version: ``math.AG/0601001`` is
    ``math/0601001``."""
    if "/" in found:
        archive, number = found.split("/", 1)
        return f"{archive.split('.')[0].lower()}/{number}"
    return found


def entry_arxiv_id(text: str) -> str:
    """The arXiv id one bibliography entry gives, or ""."""
    eprint = _EPRINT.search(text)
    if eprint and (_ARXIV_TYPE.search(text) or ("/" not in eprint["id"] and "." in eprint["id"])):
        return normalized_arxiv_id(eprint["id"])
    found = _ARXIV_IN_TEXT.search(text)
    return normalized_arxiv_id(found["id"]) if found else ""


def arxiv_bibliography(texts: Iterable[str]) -> dict[str, str]:
    """Each bibliography key of ``texts`` (a paper's text, its ``.bbl``, its ``.bib`` files) that names an
    arXiv paper, with the paper's id. An earlier text wins a key given twice (the paper over its files)."""
    found: dict[str, str] = {}
    for text in texts:
        for key, arxiv_id in _entries(text):
            if arxiv_id:
                found.setdefault(key, arxiv_id)
    return found


def _entries(text: str) -> Iterable[tuple[str, str]]:
    if "@" in text:
        for match in _BIB_ENTRY.finditer(text):
            if match["type"].lower() in ("comment", "preamble", "string"):
                continue
            body, _ = read_group(text, match.end())
            key, _, fields = body.partition(",")
            yield key.strip(), entry_arxiv_id(fields)
    starts = list(_ENTRY.finditer(text))
    for number, match in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else min(len(text), match.end() + 4000)
        key = match["item"] if match["item"] is not None else match["entry"] or match["ams"] or ""
        yield key.strip(), entry_arxiv_id(text[match.end() : end])


def bibliography_files(main: Path, document: str) -> list[Path]:
    """The bibliography files of the paper whose main file is ``main``: the ``.bbl`` beside it (what arXiv
    compiles with), then the ``.bib`` files it names; only those inside its directory and of a sane size."""
    root = main.parent.resolve()
    names = [main.with_suffix(".bbl")]
    for match in _BIB_FILES.finditer(document):
        for name in match["names"].split(","):
            name = name.strip()
            if name:
                names.append(main.parent / (name if name.endswith(".bib") else f"{name}.bib"))
    files = []
    for path in dict.fromkeys(names):
        try:
            if path.resolve().is_relative_to(root) and 0 < path.stat().st_size <= MAX_BIBLIOGRAPHY_BYTES:
                files.append(path)
        except OSError:
            continue  # no such file: most papers name a .bib that arXiv does not ship
    return files


def paper_arxiv_bibliography(main: Path, document: str) -> dict[str, str]:
    """The arXiv ids of the keys the paper's own ``thebibliography`` and its bibliography files give (the
    paper's text wins a key given twice)."""
    found = arxiv_bibliography([document]) if "\\bib" in document else {}
    for path in bibliography_files(main, document):
        try:
            stat = path.stat()
            entries = _file_bibliography(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        except OSError:
            continue  # unreadable: its keys stay without an id, the paper is read all the same
        for key, arxiv_id in entries.items():
            found.setdefault(key, arxiv_id)
    return found


@functools.lru_cache(maxsize=32)
def _file_bibliography(path: str, _mtime_ns: int, _size: int) -> dict[str, str]:
    """One bibliography file's arXiv keys, read once per process while unchanged (the Stacks project's 117
    chapters all name one ``my.bib``). Callers copy what they keep."""
    return arxiv_bibliography([Path(path).read_text(encoding="utf-8", errors="replace")])
