"""ARQMath topic files (Math StackExchange questions used as queries) to typed topic records.

Task 1 files hold ``<Topic number="A.1"><Title>HTML</Title><Question>HTML</Question><Tags>``;
task 2 files add ``<Formula_Id>`` and ``<Latex>``, the query formula.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import ParseError

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from ingestion.mse_html import html_to_text, math_spans
from ingestion.problems import SourceError


@dataclass(frozen=True, slots=True)
class ArqmathTopic:
    """One topic: the question post as text with its formulas kept as LaTeX."""

    number: str
    title: str
    question: str
    tags: tuple[str, ...]
    formulas: tuple[str, ...]
    formula_id: str = ""
    query_formula: str = ""

    @property
    def text(self) -> str:
        """Title and question, the query text ARQMath systems start from."""
        return f"{self.title}\n\n{self.question}".strip()


def read_arqmath_topics(path: str | Path) -> list[ArqmathTopic]:
    """All topics of an ARQMath topic XML file; a malformed file raises with its path and reason."""
    path = Path(path)
    try:
        root = ElementTree.parse(path, forbid_dtd=True).getroot()
    except ParseError as error:
        line = error.position[0] if getattr(error, "position", None) else None
        raise SourceError(str(path), f"not a well-formed ARQMath topic file: {error}", line) from error
    except (OSError, DefusedXmlException) as error:
        raise SourceError(str(path), f"not a readable ARQMath topic file: {error}") from error
    topics = []
    for element in root.iter("Topic"):
        number = element.get("number", "").strip()
        if not number:
            raise SourceError(str(path), "a <Topic> without a number attribute")
        title_html = element.findtext("Title") or ""
        question_html = element.findtext("Question") or ""
        tags = tuple(t for t in (element.findtext("Tags") or "").replace(",", " ").split() if t)
        topics.append(
            ArqmathTopic(
                number=number,
                title=html_to_text(title_html),
                question=html_to_text(question_html),
                tags=tags,
                formulas=tuple(math_spans(title_html) + math_spans(question_html)),
                formula_id=(element.findtext("Formula_Id") or "").strip(),
                query_formula=(element.findtext("Latex") or "").strip(),
            )
        )
    return topics
