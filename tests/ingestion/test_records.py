from ingestion.records import Source, StatementKind, StatementRecord, statement_id


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
