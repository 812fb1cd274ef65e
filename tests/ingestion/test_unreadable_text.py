"""Text no encoder can read: refused where it is asked, cleaned up where it is ingested (issue 85)."""

from __future__ import annotations

import json

import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from ingestion.unreadable_text import UnreadableTextError, check_readable, readable


@pytest.mark.parametrize(
    ("text", "what"),
    [("group \ud800", "lone UTF-16 surrogate"), ("a\x00b", "NUL"), ("x \uffff", "non-character"),
     ("x \U0010fffe", "non-character")],
)  # fmt: skip
def test_a_query_with_a_character_no_encoder_can_read_is_refused_naming_the_field(text: str, what: str) -> None:
    with pytest.raises(UnreadableTextError, match=what) as refused:
        check_readable(text, "the query")
    assert str(refused.value).startswith("the query holds") and "character" in str(refused.value)


def test_a_surrogate_pair_is_joined_and_readable_text_passes_as_it_is() -> None:
    assert check_readable("smile \ud83d\ude00", "q") == "smile 😀"
    assert check_readable("∫ f dμ = 0, é", "q") == "∫ f dμ = 0, é"


def test_an_ingested_record_is_cleaned_up_and_can_be_encoded() -> None:
    text = "Let $G$ be a group \ud800 with\x00 unit \ufffe."
    record = StatementRecord(
        id=statement_id("local", "paper", "theorem", text), source=Source.LOCAL, kind=StatementKind.THEOREM,
        text=text, paper_id="paper", title="A \udc80 title", formulas=("G \ud800",),
    )  # fmt: skip
    assert record.text == "Let $G$ be a group \ufffd with unit ." and record.title == "A \ufffd title"
    assert record.formulas == ("G \ufffd",)
    json.dumps(record.to_dict(), ensure_ascii=False).encode("utf-8")  # what the index writes
    assert readable(text) == record.text
    assert statement_id("local", "paper", "theorem", text) == statement_id("local", "paper", "theorem", record.text)
