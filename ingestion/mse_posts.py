"""Math StackExchange posts from the Stack Exchange data dump (``Posts.xml``), streamed.

The dump is one ``<posts>`` element holding a ``<row .../>`` per post, every field an attribute:
questions (``PostTypeId="1"``: Title, Body, Tags, AcceptedAnswerId) and answers (``PostTypeId="2"``:
ParentId, Score, Body). Rows are parsed one at a time and cleared, so memory stays flat for a
multi-gigabyte file. defusedxml refuses entity declarations, so an entity-expansion attack (billion
laughs) refuses the file instead of exhausting memory. ``.gz`` and ``.7z`` (with ``py7zr``) are read
as streams too.
"""

from __future__ import annotations

import gzip
import re
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from xml.etree.ElementTree import Element, ParseError

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from ingestion.contained_paths import PathEscapeError, ensure_inside
from ingestion.mse_html import html_to_text
from ingestion.problems import IngestProblem, SourceError

QUESTION = "1"
ANSWER = "2"
_TAG = re.compile(r"<([^<>]+)>")


@dataclass(frozen=True, slots=True)
class MsePost:
    """One question or answer as the dump gives it (the body is still HTML)."""

    post_id: int
    post_type: str  # "question" or "answer"
    body_html: str
    score: int = 0
    creation_date: str = ""  # ISO, as in the dump (2010-07-20T19:09:27.200)
    last_edit_date: str = ""
    title: str = ""  # questions
    tags: tuple[str, ...] = ()  # questions
    accepted_answer_id: int | None = None  # questions
    parent_id: int | None = None  # answers
    owner_user_id: int | None = None


def parse_tags(value: str) -> tuple[str, ...]:
    """``<algebra><group-theory>`` (older dumps) or ``|algebra|group-theory|`` (newer ones)."""
    if "<" in value:
        return tuple(_TAG.findall(value))
    return tuple(tag for tag in value.split("|") if tag)


def post_from_row(attributes: dict[str, str]) -> MsePost | None:
    """The post a ``<row>`` describes; None for post types other than questions and answers.

    Raises ``ValueError`` (with the reason) for a row that cannot be a post.
    """
    kind = attributes.get("PostTypeId")
    if kind not in (QUESTION, ANSWER):
        return None
    if "Id" not in attributes:
        raise ValueError("row without Id")
    common = {
        "post_id": int(attributes["Id"]),
        "body_html": attributes.get("Body", ""),
        "score": int(attributes.get("Score", "0") or 0),
        "creation_date": attributes.get("CreationDate", ""),
        "last_edit_date": attributes.get("LastEditDate", ""),
        "owner_user_id": _optional_int(attributes.get("OwnerUserId")),
    }
    if kind == QUESTION:
        accepted = attributes.get("AcceptedAnswerId")
        return MsePost(
            post_type="question",
            title=_title_text(attributes.get("Title", "")),
            tags=parse_tags(attributes.get("Tags", "")),
            accepted_answer_id=int(accepted) if accepted else None,
            **common,
        )
    if not attributes.get("ParentId"):
        raise ValueError("answer without ParentId")
    return MsePost(post_type="answer", parent_id=int(attributes["ParentId"]), **common)


def _title_text(title: str) -> str:
    # The ARQMath collection marks formulas in titles too (spans without $); MSE's own titles are plain.
    return html_to_text(title).replace("\n", " ") if "math-container" in title else title


def _optional_int(value: str | None) -> int | None:
    return int(value) if value and value.lstrip("-").isdigit() else None


@contextmanager
def _open(path: Path) -> Iterator[IO[bytes]]:
    """A byte stream of the dump: plain, gzip, or 7z (extracted to a temporary file, then streamed)."""
    name = path.name.lower()
    if name.endswith(".gz"):
        with gzip.open(path) as handle:
            yield handle
    elif name.endswith(".7z"):
        try:
            import py7zr  # optional dependency, in the [mse] extra
        except ImportError as error:
            raise SourceError(str(path), "reading .7z needs the py7zr package (pip install 'rag-app[mse]')") from error
        with tempfile.TemporaryDirectory(prefix="rag-app-7z-") as workdir:
            try:
                with py7zr.SevenZipFile(path) as archive:
                    members = [n for n in archive.getnames() if n.lower().endswith("posts.xml")]
                    if not members:
                        raise SourceError(str(path), "no Posts.xml inside the .7z archive")
                    # The member's name is the archive's: it is unpacked only inside the directory made here.
                    member = ensure_inside(Path(workdir), Path(members[0]))
                    archive.extract(path=workdir, targets=members[:1])
            except PathEscapeError as error:
                raise SourceError(str(path), f"archive refused: its member {members[0]!r} points outside") from error
            except (py7zr.exceptions.Bad7zFile, OSError) as error:
                raise SourceError(str(path), f"corrupt .7z archive: {error}") from error
            with member.open("rb") as handle:
                yield handle
    else:
        with path.open("rb") as handle:
            yield handle


class Utf8Rows:
    """A dump's byte stream without the lines that are not UTF-8, each reported by line and skipped.

    A dump has one ``<row .../>`` a line (newlines inside a post are escaped), so one bad byte costs
    one post; read whole, it would end the XML parse and lose every post after it.
    """

    def __init__(self, handle: IO[bytes], path: Path, problems: list[IngestProblem]) -> None:
        self.handle = handle
        self.path = path
        self.problems = problems
        self.line = 0
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            line = self.handle.readline()
            if not line:
                break
            self.line += 1
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                row = re.search(rb'\bId="(\d+)"', line)
                which = f" (post {row.group(1).decode()})" if row else ""
                self.problems.append(IngestProblem(
                    f"{self.path}:{self.line}", f"not UTF-8 (byte {error.start + 1} of the line){which}: row skipped"
                ))  # fmt: skip
                continue
            self._buffer += line
        if size < 0:
            size = len(self._buffer)
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out


def read_posts(path: Path, problems: list[IngestProblem]) -> Iterator[MsePost]:
    """Every question and answer in ``path``, in file order. Bad rows go to ``problems`` and are skipped;
    a file that is not well-formed XML, or declares entities, ends with one problem naming it."""
    for number, attributes in enumerate(read_rows(path, problems), start=1):
        try:
            post = post_from_row(attributes)
        except ValueError as error:
            problems.append(IngestProblem(f"{path}#post-{attributes.get('Id', '?')}", f"bad row {number}: {error}"))
            continue
        if post is not None:
            yield post


def read_rows(path: Path, problems: list[IngestProblem]) -> Iterator[dict[str, str]]:
    """The attributes of every ``<row>`` of a dump file (``Posts.xml``, ``PostLinks.xml``, ``Users.xml``).

    Streamed: each row is detached from the tree once read, so memory stays flat.
    """
    rows = 0
    rows_only: Utf8Rows | None = None
    try:
        with _open(path) as handle:
            root: Element | None = None
            rows_only = Utf8Rows(handle, path, problems)
            for event, element in ElementTree.iterparse(rows_only, events=("start", "end"), forbid_dtd=False):
                if event == "start":
                    root = element if root is None else root
                elif element.tag == "row":
                    rows += 1
                    attributes = dict(element.attrib)
                    if root is not None:
                        root.clear()
                    yield attributes
    except SourceError as error:
        problems.append(error.problem)
    except DefusedXmlException as error:
        problems.append(IngestProblem(str(path), f"refused: {type(error).__name__} (entity expansion attack?)"))
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        # A cut or damaged download: what was read before is kept, and the report says where it ended.
        where = f"after row {rows} (line {rows_only.line})" if rows_only else "at its start"
        problems.append(IngestProblem(str(path), f"compressed data cut short or corrupt {where}: {error}"))
    except (ParseError, OSError) as error:
        problems.append(IngestProblem(str(path), f"not well-formed XML after row {rows}: {error}"))
