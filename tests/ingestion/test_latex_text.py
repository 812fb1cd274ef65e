from ingestion.latex_text import (
    extract_formulas,
    normalize_whitespace,
    read_group,
    read_optional_argument,
    strip_comments,
)


def test_strip_comments_keeps_escaped_percent_and_drops_comment_lines() -> None:
    source = "a 50\\% rise % a remark\n% whole line\nb\\\\% after a line break\nc"
    assert strip_comments(source) == "a 50\\% rise \nb\\\\\nc"


def test_strip_comments_removes_comment_environment_and_iffalse() -> None:
    source = "keep\n\\begin{comment}\ndrop\n\\end{comment}\n\\iffalse gone \\fi\nalso kept"
    stripped = strip_comments(source)
    assert "drop" not in stripped and "gone" not in stripped
    assert "keep" in stripped and "also kept" in stripped


def test_read_group_balances_nested_and_escaped_braces() -> None:
    text = "{a {b} \\} c} rest"
    inside, end = read_group(text, 0)
    assert inside == "a {b} \\} c"
    assert text[end:] == " rest"


def test_read_group_unclosed_runs_to_end_without_raising() -> None:
    assert read_group("{never closed", 0) == ("never closed", len("{never closed"))


def test_optional_argument_with_brackets_inside_math_braces() -> None:
    text = " [Lemma on ${[0,1]}$ intervals] body"
    value, end = read_optional_argument(text, 0)
    assert value == "Lemma on ${[0,1]}$ intervals"
    assert text[end:] == " body"


def test_extract_formulas_all_delimiters() -> None:
    text = "Let $x^2$ and \\(y\\) be; then $$a+b$$ and \\[c\\] and \\begin{align*}d &= e\\end{align*} but not \\$5."
    assert extract_formulas(text) == ["x^2", "y", "a+b", "c", "d &= e"]


def test_normalize_whitespace_collapses_runs_and_blank_lines() -> None:
    assert normalize_whitespace("  a   b \n\n\n\n c  ") == "a b\n\nc"
