"""Query sets: queries with graded relevance judgments, stored as versioned JSON-lines files.

The first line is a header describing the set (name, version, protocol, how it was built, which
corpus it is judged against); every further line is one query. Judgments name documents by their
``docno`` (see :attr:`ingestion.StatementRecord.docno`), so a set survives re-ingestion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

FORMAT = "rag-app-query-set"


class Protocol(StrEnum):
    """How a set is scored: which measures, and what "relevant" means."""

    ARQMATH = "arqmath"  # graded 0-3, judged-only nDCG', MAP' and P'@10 at grades 2-3, bpref
    RELEVANT_SET = "relevant-set"  # the reference thesis: every statement of a set (a paper) is relevant
    KNOWN_ITEM = "known-item"  # one gold statement (or a few equal ones) per query


class QuerySetError(ValueError):
    """A query set file that cannot be read, with the file and line at fault."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = str(path), line, reason


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One query and its judgments.

    ``relevant`` maps docno to grade (0 = judged not relevant). ``paper_ids`` are the papers the
    query was made from: the paper-level variant of known-item search, and the seen/unseen split.
    """

    qid: str
    text: str
    relevant: Mapping[str, int]
    paper_ids: tuple[str, ...] = ()
    origin: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"qid": self.qid, "query": self.text, "relevant": dict(self.relevant)}
        if self.paper_ids:
            data["paper_ids"] = list(self.paper_ids)
        if self.origin:
            data["origin"] = self.origin
        if self.metadata:
            data["metadata"] = dict(self.metadata)
        return data


@dataclass(frozen=True, slots=True)
class QuerySet:
    """A named, versioned list of judged queries.

    ``corpus`` lists the sources the judgments refer to, relative to ``corpus_root`` ("shared": the
    ``../shared`` folder beside the checkout); the evaluation command ingests them when asked to.
    ``tuning`` says that we tune on this set, so its numbers are optimistic for unseen questions.
    """

    name: str
    version: int
    protocol: Protocol
    queries: tuple[EvalQuery, ...]
    description: str = ""
    built_by: str = ""
    corpus: tuple[str, ...] = ()
    corpus_root: str = "shared"
    tuning: bool = True

    @property
    def size(self) -> int:
        return len(self.queries)

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": self.name,
            "version": self.version,
            "protocol": self.protocol.value,
            "size": self.size,
            "description": self.description,
            "built_by": self.built_by,
            "corpus_root": self.corpus_root,
            "corpus": list(self.corpus),
            "tuning": self.tuning,
        }

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            handle.write(json.dumps(self.header(), ensure_ascii=False) + "\n")
            for query in self.queries:
                handle.write(json.dumps(query.to_dict(), ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> QuerySet:
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise QuerySetError(path, 0, f"cannot read: {error}") from error
        if not lines:
            raise QuerySetError(path, 1, "empty file: expected a header line")
        header = _json_object(path, 1, lines[0])
        if header.get("format") != FORMAT:
            raise QuerySetError(path, 1, f"not a query set header (format is {header.get('format')!r})")
        try:
            protocol = Protocol(header.get("protocol"))
        except ValueError:
            known = ", ".join(p.value for p in Protocol)
            raise QuerySetError(path, 1, f"unknown protocol {header.get('protocol')!r} (known: {known})") from None
        queries = tuple(_queries(path, lines))
        return cls(
            name=str(header.get("name") or path.stem),
            version=int(header.get("version", 1)),
            protocol=protocol,
            queries=queries,
            description=str(header.get("description", "")),
            built_by=str(header.get("built_by", "")),
            corpus=tuple(header.get("corpus", ())),
            corpus_root=str(header.get("corpus_root", "shared")),
            tuning=bool(header.get("tuning", True)),
        )


def _queries(path: Path, lines: list[str]) -> Iterator[EvalQuery]:
    seen: set[str] = set()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        data = _json_object(path, number, line)
        qid, text, relevant = data.get("qid"), data.get("query"), data.get("relevant")
        if not isinstance(qid, str) or not qid:
            raise QuerySetError(path, number, "missing or empty 'qid'")
        if qid in seen:
            raise QuerySetError(path, number, f"duplicate qid {qid!r}")
        seen.add(qid)
        if not isinstance(text, str) or not text.strip():
            raise QuerySetError(path, number, f"query {qid!r} has no 'query' text")
        if not isinstance(relevant, dict) or not all(isinstance(g, int) for g in relevant.values()):
            raise QuerySetError(path, number, f"query {qid!r}: 'relevant' must map docno to an integer grade")
        yield EvalQuery(
            qid=qid,
            text=text,
            relevant=relevant,
            paper_ids=tuple(data.get("paper_ids", ())),
            origin=str(data.get("origin", "")),
            metadata=data.get("metadata", {}),
        )


def _json_object(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise QuerySetError(path, number, f"invalid JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(data, dict):
        raise QuerySetError(path, number, "expected a JSON object")
    return data


def judged(queries: Iterable[EvalQuery]) -> tuple[list[EvalQuery], list[EvalQuery]]:
    """Split into queries with at least one judgment and those without (skipped, as ARQMath does)."""
    scored, skipped = [], []
    for query in queries:
        (scored if query.relevant else skipped).append(query)
    return scored, skipped
