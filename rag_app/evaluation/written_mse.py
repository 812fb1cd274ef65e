"""Math StackExchange threads we wrote ourselves, as a ``Posts.xml`` dump the MSE ingest reads.

The real dump is not in ``../shared`` (only the ARQMath topics are), so the user-questions set's MSE
part is judged against threads written for it: ``eval/corpora/mse-written/threads.jsonl``, one thread a
line (``question_id``, ``title``, ``tags``, ``question`` and ``answers``, each with ``id``, ``score`` and
``body``; text with ``$...$`` mathematics, as MSE posts are typed). Writing the dump from that file keeps
the threads readable and reviewable, and the ingest path the same as for a real dump.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from xml.etree import ElementTree

WRITTEN_MSE_THREADS = Path(__file__).resolve().parents[2] / "eval" / "corpora" / "mse-written" / "threads.jsonl"
_DATE = "2026-11-25T00:00:00.000"


def write_posts_xml(threads: Path, out: Path) -> int:
    """Write the threads of ``threads`` (JSON lines) as a Stack Exchange ``Posts.xml``; the number of posts.

    Raises ``ValueError`` naming the file and line of a thread that lacks a field.
    """
    root = ElementTree.Element("posts")
    count = 0
    for number, line in enumerate(threads.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        thread = json.loads(line)
        try:
            answers = thread["answers"]
            question = {
                "Id": str(thread["question_id"]),
                "PostTypeId": "1",
                "Title": thread["title"],
                "Tags": "".join(f"<{tag}>" for tag in thread["tags"]),
                "Body": _html(thread["question"]),
                "Score": "10",
                "CreationDate": _DATE,
                "AcceptedAnswerId": str(answers[0]["id"]),
            }
            rows = [question] + [
                {
                    "Id": str(answer["id"]),
                    "PostTypeId": "2",
                    "ParentId": str(thread["question_id"]),
                    "Score": str(answer["score"]),
                    "Body": _html(answer["body"]),
                    "CreationDate": _DATE,
                }
                for answer in answers
            ]
        except (KeyError, IndexError, TypeError) as error:
            raise ValueError(f"{threads}:{number}: thread without {error}") from None
        for row in rows:
            ElementTree.SubElement(root, "row", row)
            count += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    ElementTree.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return count


def _html(text: str) -> str:
    """A post body as the dump stores it: HTML paragraphs, the mathematics left as typed."""
    return "".join(f"<p>{escape(paragraph, quote=False)}</p>" for paragraph in text.split("\n\n"))
