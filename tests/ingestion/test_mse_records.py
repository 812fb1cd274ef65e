"""Math StackExchange dump: streaming, records, bad rows, entity attacks, filters."""

from __future__ import annotations

import gzip
import html
import re
from pathlib import Path

import pytest

from ingestion.mse_posts import parse_tags
from ingestion.mse_records import MseFilters, MseRecordReader
from ingestion.records import StatementKind

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mse_posts.xml"

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE posts [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<posts><row Id="1" PostTypeId="1" Title="&lol9;" Body="x" /></posts>
"""


def read(path: Path, filters: MseFilters | None = None):
    reader = MseRecordReader(path, filters)
    return reader, {int(str(r.metadata["docno"])): r for r in reader.records()}


def test_answers_carry_their_question_and_questions_are_records() -> None:
    _, records = read(FIXTURE)
    assert sorted(records) == [1, 2, 3, 4, 5, 10]
    accepted = records[3]
    assert accepted.kind is StatementKind.ANSWER and accepted.metadata["accepted"] is True
    assert records[2].metadata["accepted"] is False
    assert accepted.url == "https://math.stackexchange.com/a/3" and accepted.title == "Why is $\\sqrt{2}$ irrational?"
    assert "$$x^2 - 2 = 0$$" in accepted.text and "> None of $\\pm 1, \\pm 2$ works." in accepted.text
    assert accepted.metadata["context"].startswith("How do I prove that $\\sqrt{2}$")
    assert accepted.metadata["tags"] == "number-theory irrational-numbers" and accepted.metadata["edited"]
    assert accepted.formulas == ("x^2 - 2 = 0", "\\pm 1, \\pm 2") and accepted.metadata["formula_ids"] == "3.0 3.1"
    assert "Question: How do I prove" in accepted.search_text()
    question = records[1]
    assert question.kind is StatementKind.QUESTION and question.metadata["post_type"] == "question"
    assert question.url == "https://math.stackexchange.com/q/1"
    # Entities decoded once, no HTML left; links by their text, images by alt text, code kept.
    assert "coprime" in records[2].text and "& so is $q$" in records[2].text
    assert "symmetric group" in records[5].text and "[image: Cayley table of S3]" in records[5].text
    assert "(1 2)(2 3) != (2 3)(1 2)" in records[5].text
    for record in records.values():
        assert not re.search(r"</?[a-z]+[ />]", record.text) and not re.search(r"&[a-z]+;", record.text)
    # Broken HTML still gives its text and formula.
    assert "$ab = ba$" in records[4].text and "unclosed" in records[4].text


def test_bad_rows_are_reported_with_their_post_id_and_skipped() -> None:
    reader, _ = read(FIXTURE)
    problems = {p.path.rsplit("#", 1)[-1]: p.reason for p in reader.problems}
    assert problems == {
        "post-7": "bad row 7: answer without ParentId",
        "post-8": "bad row 8: invalid literal for int() with base 10: 'many'",
        "post-9": "answer to unknown question 999",
    }
    assert reader.posts_read == 7  # rows that parsed as questions or answers (the orphan of 999 included)


def test_entity_expansion_attack_refuses_the_file(tmp_path: Path) -> None:
    attack = tmp_path / "Posts.xml"
    attack.write_text(BILLION_LAUGHS)
    reader, records = read(attack)
    assert records == {}
    assert [p.path for p in reader.problems] == [str(attack)] and "Entities" in reader.problems[0].reason


def test_filters_by_score_date_and_tags_and_gzip(tmp_path: Path) -> None:
    packed = tmp_path / "Posts.xml.gz"
    packed.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    _, records = read(packed, MseFilters(min_score=3))
    assert sorted(records) == [1, 2, 3, 5]
    _, records = read(FIXTURE, MseFilters(until="2015-06-10"))
    assert sorted(records) == [1, 2, 3, 4, 5]
    _, records = read(FIXTURE, MseFilters(tags=frozenset({"group-theory"})))
    assert sorted(records) == [4, 5, 10]


def test_tags_in_both_dump_formats() -> None:
    assert parse_tags("<algebra><group-theory>") == ("algebra", "group-theory")
    assert parse_tags("|algebra|group-theory|") == ("algebra", "group-theory")


def test_7z_dump_is_streamed_and_a_corrupt_one_reported(tmp_path: Path) -> None:
    import py7zr

    packed = tmp_path / "math.stackexchange.com.7z"
    with py7zr.SevenZipFile(packed, "w") as archive:
        archive.write(FIXTURE, "Posts.xml")
    _, records = read(packed)
    assert sorted(records) == [1, 2, 3, 4, 5, 10]
    corrupt = tmp_path / "broken.7z"
    corrupt.write_bytes(b"7z\xbc\xaf\x27\x1c not really")
    reader, records = read(corrupt)
    assert records == {} and "corrupt .7z" in reader.problems[0].reason


def test_duplicate_links_and_user_names_from_the_side_files(tmp_path: Path) -> None:
    dump = tmp_path / "Posts.xml"
    dump.write_bytes(FIXTURE.read_bytes())
    (tmp_path / "PostLinks.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<postlinks>'
        '<row Id="1" PostId="4" RelatedPostId="1" LinkTypeId="3" />'
        '<row Id="2" PostId="1" RelatedPostId="4" LinkTypeId="1" /></postlinks>'
    )
    (tmp_path / "Users.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<users><row Id="42" DisplayName="Emmy" /><row Id="7" /></users>'
    )
    _, records = read(dump)
    assert records[4].metadata["duplicate_of"] == "1" and "duplicate_of" not in records[1].metadata
    assert records[3].metadata["author"] == "Emmy" and "author" not in records[4].metadata
    assert "author" not in records[2].metadata


ARQMATH_FIXTURE = FIXTURE.with_name("mse_posts_arqmath.xml")


def test_arqmath_format_math_gets_its_delimiters_back() -> None:
    # The ARQMath collection strips $ from the math-container spans: the text must still mark the math.
    _, records = read(ARQMATH_FIXTURE)
    answer, question = records[12], records[11]
    assert (
        "Euler showed that $\\sum_{n\\ge 1} n^{-2} = \\frac{\\pi^2}{6}$ using the product for $\\sin x$." in answer.text
    )
    assert "$$\\int_1^\\infty x^{-2}\\,dx = 1$$" in answer.text  # on a line of its own: display
    assert "$$\\begin{align} a &= b \\\\ c &= d \\end{align}$$" in answer.text
    assert "dollars: $p$." in answer.text and "$$p$$" not in answer.text and "$$$" not in answer.text
    assert "I know $\\sum 1/n$ diverges." in question.text
    assert "$$\\sum_{n=1}^\\infty \\frac{1}{n^2}$$" in question.text
    assert question.title == "Why does $\\sum_{n\\ge 1} n^{-2}$ converge?" and answer.title == question.title
    # Formula ids are the spans' own; the formulas themselves carry no delimiters.
    assert answer.metadata["formula_ids"] == "104 105 106 107 108"
    assert answer.formulas[0] == "\\sum_{n\\ge 1} n^{-2} = \\frac{\\pi^2}{6}" and answer.formulas[-1] == "p"
    assert question.metadata["formula_ids"] == "102 103"


def test_a_post_with_a_byte_that_is_not_utf8_is_skipped_and_the_rest_read(tmp_path: Path) -> None:
    lines = FIXTURE.read_bytes().split(b"\n")
    row = next(i for i, line in enumerate(lines) if b'Id="2"' in line)
    lines[row] = lines[row].replace(b"coprime", b"copr\xefme")  # one Latin-1 byte in answer 2
    damaged = tmp_path / "Posts.xml"
    damaged.write_bytes(b"\n".join(lines))
    reader, records = read(damaged)
    _, clean = read(FIXTURE)
    assert set(records) == set(clean) - {2}  # every other post, those after it included
    bad = [p for p in reader.problems if p.path == f"{damaged}:{row + 1}"]
    assert len(bad) == 1 and "not UTF-8" in bad[0].reason and "post 2" in bad[0].reason


def _dump_of(posts: int) -> bytes:
    """A well-formed dump of ``posts`` question/answer pairs, one row a line as the real dumps are."""
    rows = []
    for number in range(1, posts + 1):
        question, answer = 2 * number - 1, 2 * number
        rows.append(
            f'  <row Id="{question}" PostTypeId="1" Score="3" Title="Question {number}" Tags="|algebra|" '
            f'Body="&lt;p&gt;Is $x_{number}^2 \\ge 0$?&lt;/p&gt;" AcceptedAnswerId="{answer}" />'
        )
        rows.append(
            f'  <row Id="{answer}" PostTypeId="2" ParentId="{question}" Score="5" Body="&lt;p&gt;Yes.&lt;/p&gt;" />'
        )
    return ('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows) + "\n</posts>\n").encode()


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95, -8, -4, 10])
def test_a_cut_gzip_dump_says_where_it_ended_and_keeps_what_it_read(tmp_path: Path, cut: float) -> None:
    # Issue 48, point 4: a truncated Posts.xml.gz is reported with how far it got, never taken as whole.
    packed = gzip.compress(_dump_of(400))
    end = int(len(packed) * cut) if 0 < cut < 1 else (len(packed) + int(cut) if cut < 0 else int(cut))
    dump = tmp_path / "Posts.xml.gz"
    dump.write_bytes(packed[:end])
    reader, records = read(dump)
    [problem] = reader.problems
    assert problem.path == str(dump)
    assert re.search(
        r"(cut short or corrupt after row \d+ \(line \d+\)|not well-formed XML after row \d+)", problem.reason
    )
    assert len(records) < 800


def test_a_corrupt_gzip_dump_is_reported_not_raised(tmp_path: Path) -> None:
    packed = gzip.compress(_dump_of(400))
    dump = tmp_path / "Posts.xml.gz"
    dump.write_bytes(packed[:200] + b"garbage" * 40 + packed[480:])
    reader, _ = read(dump)
    [problem] = reader.problems
    assert problem.reason.startswith("compressed data cut short or corrupt after row ")


def test_active_html_in_a_post_is_not_stored(tmp_path: Path) -> None:
    # Issue 48, point 3: store text, not markup: no script, no event attribute, no embedded frame.
    body = (
        '<p>Let <span class="math-container">$x &lt; y$</span>.</p><script>alert("body")</script>'
        '<img src="x" onerror="alert(1)" alt="a plot"><a href="javascript:alert(2)">see here</a>'
        "<style>p { color: red }</style><iframe src='https://evil.example'>frame text</iframe><SCRIPT>alert(3)</SCRIPT>"
    )
    dump = tmp_path / "Posts.xml"
    dump.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n'
        f'<row Id="1" PostTypeId="1" Score="1" Title="T" Tags="|algebra|" Body="{html.escape(body)}" />\n</posts>\n'
    )
    _, records = read(dump)
    text = records[1].text
    assert "$x < y$" in text and "[image: a plot]" in text and "see here" in text
    for active in ("alert", "<script", "onerror", "javascript:", "color: red", "frame text", "<iframe"):
        assert active not in text.lower()
