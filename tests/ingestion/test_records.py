import json

from ingestion.records import Citation, LabelReference, Source, StatementKind, StatementRecord, statement_id


def test_statement_id_ignores_whitespace_but_not_content() -> None:
    a = statement_id("local", "p", "lemma", "Let  $x$\n be")
    assert a == statement_id("local", "p", "lemma", "Let $x$ be")
    assert a != statement_id("local", "p", "theorem", "Let $x$ be")
    assert a != statement_id("local", "q", "lemma", "Let $x$ be")
    assert a != statement_id("local", "p", "lemma", "Let $x$ be", occurrence=1)


def test_record_round_trips_through_dict() -> None:
    record = StatementRecord(
        id="abc",
        source=Source.ARXIV,
        kind=StatementKind.LEMMA,
        text="$x$",
        paper_id="2501.00001",
        name="Key",
        formulas=("x",),
        metadata={"authors": "A"},
    )
    assert StatementRecord.from_dict(record.to_dict()) == record
    assert record.display_name == "Lemma (Key)"


def test_a_records_dict_is_plain_json_and_its_own_copy() -> None:
    record = StatementRecord(
        id="abc",
        source=Source.ARXIV,
        kind=StatementKind.LEMMA,
        text="$x$",
        paper_id="2501.00001",
        labels=("lem:key",),
        references=(LabelReference("thm:main", "proof", "def"),),
        citations=(Citation("Serre", arxiv_id="2101.01234"),),
        metadata={"parts": ["a.tex", "b.tex"], "number": 3},
    )
    data = record.to_dict()
    assert json.loads(json.dumps(data)) == data  # JSON's own types: lists, dicts, strings, numbers
    assert data["references"] == [
        {"label": "thm:main", "where": "proof", "statement_id": "def", "section": "", "sentence": ""}
    ]
    assert data["citations"] == [{"key": "Serre", "where": "statement", "arxiv_id": "2101.01234"}]
    data["metadata"]["parts"].append("c.tex")  # a caller editing the dict leaves the (shared) record alone
    assert record.metadata["parts"] == ["a.tex", "b.tex"]
