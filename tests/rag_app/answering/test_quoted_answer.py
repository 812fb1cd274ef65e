"""The quoting answer: the model's choice parsed, the statements quoted whole, titles not ids."""

from __future__ import annotations

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app.answering.quoted_answer import NONE_STATED, parse_selection, quoted_answer
from retriever.types import SearchHit


def hit(text: str, title: str = "", paper: str = "2501.01947", source: Source = Source.ARXIV) -> SearchHit:
    record = StatementRecord(
        id=text[:8], source=source, kind=StatementKind.LEMMA, text=text, paper_id=paper, name="Nakayama", title=title
    )
    return SearchHit(record, 1.0, 1)


def test_the_choice_is_read_from_what_the_model_wrote() -> None:
    assert parse_selection("[2]", 4, 2) == [2]
    assert parse_selection(" [3][1] ", 4, 2) == [3, 1]
    assert parse_selection("Sources 2, 2 and 4.", 4, 2) == [2, 4]
    assert parse_selection("[7] [1]", 4, 2) == [1]  # out of range ignored
    assert parse_selection("[1][2][3]", 4, 2) == [1, 2]  # at most max_quotes
    assert parse_selection("NONE", 4, 2) == parse_selection("none of them", 4, 2) == []
    assert parse_selection("I cannot tell.", 4, 2) == []


def test_the_statement_is_quoted_whole_with_its_hypotheses_and_its_title() -> None:
    statement = "Let $R$ be a local ring and $M$ a finite module.\nIf $\\mathfrak m M = M$, then $M = 0$."
    hits = [hit("A flat module over a field is free."), hit(statement, title="Commutative Algebra")]
    text, sentences = quoted_answer(hits, [2])
    assert text.startswith("[2] Lemma (Nakayama), in *Commutative Algebra*:")
    assert "> Let $R$ be a local ring and $M$ a finite module.\n> If $\\mathfrak m M = M$, then $M = 0$." in text
    assert [(s.cited, s.stated, s.supported) for s in sentences] == [([2], True, True)]


def test_an_untitled_source_is_named_by_what_a_reader_knows_not_an_internal_id() -> None:
    text, _ = quoted_answer([hit("A statement.", paper="2501.01947")], [1])
    assert "*arXiv:2501.01947*" in text
    text, _ = quoted_answer([hit("An answer.", paper="mse-42", source=Source.MSE)], [1])
    assert "*Math StackExchange post 42*" in text


def test_no_choice_quotes_the_closest_statement_under_a_notice() -> None:
    text, sentences = quoted_answer([hit("A statement."), hit("Another one.")], [])
    assert text.startswith(NONE_STATED) and "[1] Lemma (Nakayama)" in text and "[2]" not in text
    assert "The closest one, quoted as it stands" in text
    assert [s.cited for s in sentences] == [[1]]
    assert quoted_answer([], [])[1] == []


def test_no_choice_quotes_the_few_closest_when_asked_so_an_answer_at_rank_2_or_3_is_shown() -> None:
    hits = [hit("A statement."), hit("Another one."), hit("A third."), hit("A fourth.")]
    text, sentences = quoted_answer(hits, [], unsure_quotes=3)
    assert text.startswith(NONE_STATED) and "The 3 closest, quoted as they stand" in text
    assert [s.cited for s in sentences] == [[1], [2], [3]] and "[4]" not in text
    assert "A third." in text
    two, _ = quoted_answer(hits[:2], [], unsure_quotes=3)  # never more than were found
    assert "The 2 closest" in two
    picked, _ = quoted_answer(hits, [2], unsure_quotes=3)  # a pick is quoted alone, with no notice
    assert not picked.startswith(NONE_STATED) and "[1]" not in picked


def test_choice_probabilities_read_the_first_pick_off_its_token() -> None:
    import math

    from rag_app.answering.quoted_answer import choice_probabilities

    tokens = [
        {"[": math.log(0.99), "N": math.log(0.01)},  # the bracket: no source number yet
        {"3": math.log(0.6), "1": math.log(0.3), "9": math.log(0.05), "x": math.log(0.05)},  # 9: not a source
        {"]": 0.0},
    ]
    # p(none) = 0.01 from the first token; the numbers share the bracket's 0.99 as the second token says
    assert choice_probabilities(tokens, sources=4) == {"1": 0.33, "3": 0.66, "none": 0.01}
    assert choice_probabilities([{"NONE": math.log(0.8), "2": math.log(0.2)}], sources=4) == {"2": 0.2, "none": 0.8}
    assert choice_probabilities([], sources=4) == {}  # a server without log probabilities
