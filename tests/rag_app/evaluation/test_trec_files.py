from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag_app.evaluation.trec_files import RunEntry, TrecFormatError, read_qrels, read_run, write_run


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("reader", "text", "line", "problem"),
    [
        (read_qrels, "A.1 0 11 2\nA.1 0 12\n", 2, "expected 4 fields"),
        (read_qrels, "A.1 0 11 2\n\nA.1 0 12 high\n", 3, "grade 'high' is not an integer"),
        (read_qrels, "A.1 0 11 2\nA.1 0 11 3\n", 2, "judged twice"),
        (read_run, "A.1 Q0 11 1 2.0 tag\nA.1 Q0 12 2 tag\n", 2, "expected 6 fields"),
        (read_run, "A.1 Q0 11 first 2.0 tag\n", 1, "rank 'first' must be an integer"),
        (read_run, "A.1 Q0 11 1 nan tag\n", 1, "not finite"),
        (read_run, "A.1 Q0 11 1 2.0 tag\nA.1 Q0 11 2 1.0 tag\n", 2, "appears twice"),
    ],
)
def test_malformed_lines_name_file_line_and_problem(
    tmp_path: Path, reader: Callable[[Path], object], text: str, line: int, problem: str
) -> None:
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(TrecFormatError) as caught:
        reader(path)
    assert (caught.value.line, caught.value.path) == (line, str(path))
    assert problem in caught.value.reason
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_run_deeper_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "deep.run", "".join(f"T Q0 d{i} {i} {-i} tag\n" for i in range(1, 6)))
    with pytest.raises(TrecFormatError, match="more than 4 results"):
        read_run(path, max_depth=4)


def test_written_runs_read_back_in_our_order_despite_tied_scores(tmp_path: Path) -> None:
    run = {"q1": [RunEntry("b", 0.5), RunEntry("a", 0.5), RunEntry("c", 0.2)], "q2": [RunEntry("x", 3.0)]}
    path = tmp_path / "ours.trec"
    write_run(run, path, tag="hybrid")
    lines = path.read_text().splitlines()
    assert lines[0].split()[:4] == ["q1", "Q0", "b", "1"] and lines[0].endswith(" hybrid")
    back = read_run(path)
    assert [e.docno for e in back["q1"]] == ["b", "a", "c"]
    assert back["q1"][0].score > back["q1"][1].score > back["q1"][2].score
    with pytest.raises(ValueError):
        write_run(run, path, tag="two words")


def test_a_docno_with_a_space_is_written_escaped_and_read_back_whole(tmp_path: Path) -> None:
    # A LaTeX label may hold a space (the HoTT book has one); a TREC line is split at whitespace.
    docnos = ["hott-book#prop:tested_by dependent types", "a%20b c", "stacks#lemma-plain"]
    run = {"q1": [RunEntry(docno, 1.0 - i / 10) for i, docno in enumerate(docnos)]}
    write_run(run, tmp_path / "run.trec", tag="mine")
    lines = (tmp_path / "run.trec").read_text().splitlines()
    assert all(len(line.split()) == 6 for line in lines) and lines[2].split()[2] == "stacks#lemma-plain"
    assert [entry.docno for entry in read_run(tmp_path / "run.trec")["q1"]] == docnos
