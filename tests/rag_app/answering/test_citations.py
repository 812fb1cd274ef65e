from rag_app.answering.citations import check_citations


def test_valid_citations_kept_and_listed_in_order() -> None:
    check = check_citations("By [2], and also [1, 3]; see [2][3].", source_count=3)
    assert check.cited == [2, 1, 3]
    assert check.invalid == []
    assert check.text == "By [2], and also [1][3]; see [2][3]."


def test_citations_to_missing_sources_are_removed_and_flagged() -> None:
    check = check_citations("True [7]. Also [1-2] and [0, 2].", source_count=2)
    assert check.invalid == [0, 7]
    assert check.cited == [1, 2]
    assert check.text == "True. Also [1][2] and [2]."


def test_display_math_and_optional_arguments_are_not_citations() -> None:
    text = r"We have \[3\] and the interval [a, b] and f[x]."
    check = check_citations(text, source_count=1)
    assert check.cited == [] and check.invalid == [] and check.text == text


def test_citation_numbers_in_order_with_ranges() -> None:
    from rag_app.answering.citations import citation_numbers

    assert citation_numbers(r"A [2], B [1-3; 5] and \[4\] not a citation.") == [2, 1, 2, 3, 5]
