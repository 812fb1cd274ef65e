"""Theorem packages with their own syntax, rewritten to plain ``\\newtheorem`` LaTeX before extraction.

- mdframed: ``\\newmdtheoremenv[options]{name}[shared]{Title}[within]`` declares like ``\\newtheorem``;
- tcolorbox: ``\\newtcbtheorem[options]{name}{Title}{style}{prefix}``, used as
  ``\\begin{name}{title}{label}``: the title is the statement's name and the label is ``prefix:label``;
- thmtools' restatable: ``\\begin{restatable}[Name]{theorem}{macro}...\\end{restatable}`` is a theorem
  (its later ``\\macro*`` restatements are calls, not new statements).

Rewriting the source once keeps one path for what follows (environments, numbering, labels, text):
each construct becomes the ``\\newtheorem``/``\\begin{env}[name]\\label{...}`` form those already read.
"""

from __future__ import annotations

import re

from ingestion.latex_text import read_optional_argument, read_required_argument

_MDTHEOREM = re.compile(r"\\newmdtheoremenv\s*(?:\[[^\]]*\])?")
_TCBTHEOREM = re.compile(r"\\(?:re)?newtcbtheorem\b")
_RESTATABLE = re.compile(r"\\(?P<edge>begin|end)\s*\{restatable\*?\}")
# tcolorbox's numbering keys: "number within=section", "use counter from=theorem".
_TCB_WITHIN = re.compile(r"number\s+within\s*=\s*\{?(?P<unit>[A-Za-z]+)")
_TCB_COUNTER = re.compile(r"use\s+counter\s+from\s*=\s*\{?(?P<counter>[A-Za-z]+)")


def rewrite_theorem_packages(document: str) -> str:
    """``document`` with mdframed, tcolorbox and restatable theorems in ``\\newtheorem`` form."""
    if "\\newmdtheoremenv" in document:
        document = _MDTHEOREM.sub(r"\\newtheorem", document)
    if "tcbtheorem" in document:
        document = _rewrite_tcolorbox(document)
    if "restatable" in document:
        document = _rewrite_restatable(document)
    return document


def _rewrite_tcolorbox(document: str) -> str:
    prefixes: dict[str, str] = {}
    out: list[str] = []
    pos = 0
    for match in _TCBTHEOREM.finditer(document):
        if match.start() < pos:
            continue
        options, at = read_optional_argument(document, match.end())
        name, at = read_required_argument(document, at)
        title, at = read_required_argument(document, at)
        _style, at = read_required_argument(document, at)
        prefix, end = read_required_argument(document, at)
        if name is None or title is None or prefix is None:
            continue
        name = name.strip()
        prefixes[name] = prefix.strip()
        within = _TCB_WITHIN.search(options or "")
        counter = _TCB_COUNTER.search(options or "")
        shared = f"[{counter.group('counter')}]" if counter else ""
        unit = f"[{within.group('unit')}]" if within and not counter else ""
        out.append(document[pos : match.start()] + f"\\newtheorem{{{name}}}{shared}{{{title}}}{unit}")
        pos = end
    out.append(document[pos:])
    document = "".join(out)
    if not prefixes:
        return document
    names = "|".join(re.escape(name) for name in sorted(prefixes, key=len, reverse=True))
    uses = re.compile(r"\\begin\{(?P<name>" + names + r")(?P<star>\*?)\}")
    out, pos = [], 0
    for match in uses.finditer(document):
        title, at = read_required_argument(document, match.end())
        label, end = read_required_argument(document, at)
        if title is None or label is None:
            continue
        head = f"\\begin{{{match.group('name')}{match.group('star')}}}"
        if title.strip():
            head += f"[{title.strip()}]"
        if label.strip():
            prefix = prefixes[match.group("name")]
            head += f"\\label{{{prefix}:{label.strip()}}}" if prefix else f"\\label{{{label.strip()}}}"
        out.append(document[pos : match.start()] + head)
        pos = end
    out.append(document[pos:])
    return "".join(out)


def _rewrite_restatable(document: str) -> str:
    out: list[str] = []
    pos = 0
    open_environments: list[str] = []
    for match in _RESTATABLE.finditer(document):
        if match.group("edge") == "begin":
            name, at = read_optional_argument(document, match.end())
            environment, at = read_required_argument(document, at)
            _macro, at = read_required_argument(document, at)
            if environment is None:
                continue
            environment = environment.strip()
            open_environments.append(environment)
            head = f"\\begin{{{environment}}}" + (f"[{name}]" if name is not None else "")
            out.append(document[pos : match.start()] + head)
            pos = at
        elif open_environments:
            out.append(document[pos : match.start()] + f"\\end{{{open_environments.pop()}}}")
            pos = match.end()
    out.append(document[pos:])
    return "".join(out)
