"""TREC qrels and run files: read with errors that name the file and line, write our runs.

qrels: ``TOPIC ITERATION DOCNO GRADE`` (ARQMath: ``A.1 0 2761594 2``).
run:   ``TOPIC Q0 DOCNO RANK SCORE TAG``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

Qrels = dict[str, dict[str, int]]


class RunEntry(NamedTuple):
    """One ranked document of a run; ``paper_id`` is known for our own runs, "" for read ones."""

    docno: str
    score: float
    paper_id: str = ""


Run = dict[str, list[RunEntry]]

# Most results per topic a run may hold (the ARQMath and TREC convention).
MAX_RUN_DEPTH = 1000


class TrecFormatError(ValueError):
    """A malformed qrels or run file, with the file, line and problem."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = str(path), line, reason


def read_qrels(path: str | Path) -> Qrels:
    qrels: Qrels = {}
    for number, fields in _lines(path):
        if len(fields) != 4:
            raise TrecFormatError(path, number, f"expected 4 fields 'TOPIC ITERATION DOCNO GRADE', got {len(fields)}")
        topic, _, docno, grade = fields
        try:
            value = int(grade)
        except ValueError:
            raise TrecFormatError(path, number, f"grade {grade!r} is not an integer") from None
        judged = qrels.setdefault(topic, {})
        if docno in judged and judged[docno] != value:
            raise TrecFormatError(
                path, number, f"document {docno} judged twice for topic {topic} with different grades"
            )
        judged[docno] = value
    return qrels


def read_run(path: str | Path, max_depth: int = MAX_RUN_DEPTH) -> Run:
    """A run, each topic's documents in descending score (ties by rank); deeper than ``max_depth`` is an error."""
    ranked: dict[str, list[tuple[float, int, str]]] = {}
    seen: dict[str, set[str]] = {}
    for number, fields in _lines(path):
        if len(fields) != 6:
            raise TrecFormatError(path, number, f"expected 6 fields 'TOPIC Q0 DOCNO RANK SCORE TAG', got {len(fields)}")
        topic, _, docno, rank, score, _ = fields
        docno = _unescape(docno)
        try:
            rank_value, score_value = int(rank), float(score)
        except ValueError:
            raise TrecFormatError(
                path, number, f"rank {rank!r} must be an integer and score {score!r} a number"
            ) from None
        if not math.isfinite(score_value):
            raise TrecFormatError(path, number, f"score {score!r} is not finite")
        if docno in seen.setdefault(topic, set()):
            raise TrecFormatError(path, number, f"document {docno} appears twice for topic {topic}")
        seen[topic].add(docno)
        ranked.setdefault(topic, []).append((score_value, rank_value, docno))
        if len(ranked[topic]) > max_depth:
            raise TrecFormatError(path, number, f"topic {topic} has more than {max_depth} results")
    return {
        topic: [RunEntry(docno, score) for score, _, docno in sorted(entries, key=lambda e: (-e[0], e[1]))]
        for topic, entries in ranked.items()
    }


def write_run(run: Mapping[str, Sequence[RunEntry]], path: str | Path, tag: str) -> None:
    """Write ``run`` in TREC format, keeping our order.

    trec_eval re-sorts by score (ties broken by docno), so scores are made strictly decreasing
    down each ranking; otherwise tied fusion scores would reorder our results.
    """
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be one word, got {tag!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for topic, entries in run.items():
            for rank, (docno, score) in enumerate(strictly_decreasing(entries), start=1):
                handle.write(f"{topic} Q0 {_escape(docno)} {rank} {score!r} {tag}\n")


# A LaTeX label may hold a space (the HoTT book's `prop:nconnected_tested_by_lv_n_dependent types`), and a
# docno is `paper#label`; a TREC line is split at whitespace, so whitespace in a docno is written escaped.
_ESCAPES = {" ": "%20", "\t": "%09", "%": "%25"}


def _escape(docno: str) -> str:
    if not any(c.isspace() for c in docno):
        return docno  # the common case, and every docno other tools write: unchanged
    return "".join(_ESCAPES.get(c, "%20" if c.isspace() else c) for c in docno)


def _unescape(docno: str) -> str:
    if "%20" not in docno and "%09" not in docno:
        return docno
    return docno.replace("%20", " ").replace("%09", "\t").replace("%25", "%")


def strictly_decreasing(entries: Iterable[RunEntry]) -> list[tuple[str, float]]:
    """(docno, score) pairs whose scores fall strictly, nudging ties down by the smallest step."""
    result: list[tuple[str, float]] = []
    previous = math.inf
    for entry in entries:
        score = entry.score if entry.score < previous else math.nextafter(previous, -math.inf)
        result.append((entry.docno, score))
        previous = score
    return result


def _lines(path: str | Path) -> Iterable[tuple[int, list[str]]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TrecFormatError(path, 0, f"cannot read: {error}") from error
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line.split()
