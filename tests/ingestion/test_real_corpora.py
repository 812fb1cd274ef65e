"""Extraction on real sources from ../shared: the Stacks project and the HoTT book."""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from ingestion import LatexIngestor
from ingestion.latex_files import LatexFlattener
from ingestion.latex_readable import split_math
from ingestion.latex_text import strip_comments
from ingestion.stacks_tags import read_tags
from rag_app.evaluation.dev_sets import HOTT, STACKS, read_corpus
from tests.archives import tar_bytes
from tests.conftest import SHARED

pytestmark = [
    pytest.mark.skipif(not (SHARED / "corpora").is_dir(), reason="needs ../shared/corpora"),
    pytest.mark.slow,  # reads real corpora: out of the fast tier
]

STACKS_KINDS = ["lemma", "theorem", "proposition", "definition", "remark", "example", "situation", "exercise"]


def test_every_stacks_environment_is_one_statement_with_label_and_url() -> None:
    root = SHARED / STACKS
    expected: Counter[str] = Counter()
    for chapter in root.glob("*.tex"):
        text = strip_comments(chapter.read_text(encoding="utf-8"))
        if "\\begin{document}" in text:
            for kind in [*STACKS_KINDS, "remarks"]:
                expected["remark" if kind == "remarks" else kind] += len(re.findall(rf"\\begin\{{{kind}\}}", text))
    records = read_corpus(SHARED, STACKS)
    statements = [r for r in records if r.metadata.get("part", 1) == 1]  # a long statement split in parts is one
    assert Counter(r.kind.value for r in statements) == expected
    assert all(r.label for r in statements)
    tags = read_tags(root / "tags" / "tags")
    for record in statements:
        tag = tags.get(f"{record.paper_id}-{record.label}")
        assert record.url == (f"https://stacks.math.columbia.edu/tag/{tag}" if tag else "")
    assert sum(1 for r in statements if r.url) >= len(statements) - 5
    # Cleaned text: no LaTeX references or emphasis left outside math, formulas kept.
    outside_math = [split_math(r.text)[0] for r in statements]
    assert not any(re.search(r"\\(ref|emph|textbf|cite|label)\{", text) for text in outside_math)
    assert sum(len(r.formulas) for r in statements) > 100_000


def test_hott_book_main_file_chapters_and_macros() -> None:
    root = SHARED / "corpora" / "hott-book"
    flat = LatexFlattener().flatten(root / "main.tex")
    assert len(flat.files) > 15  # the chapters \include'd by main.tex
    # thm, lem, defn, cor, eg, rmk, ex, axiom: declared through the book's own \defthm macro.
    environments = {
        "thm": "theorem",
        "lem": "lemma",
        "defn": "definition",
        "cor": "corollary",
        "eg": "example",
        "rmk": "remark",
        "ex": "exercise",
        "axiom": "axiom",
    }
    expected = Counter({kind: len(re.findall(rf"\\begin\{{{env}\}}", flat.text)) for env, kind in environments.items()})
    records = read_corpus(SHARED, HOTT)
    assert Counter(r.kind.value for r in records if r.metadata.get("part", 1) == 1) == expected
    assert {r.paper_id for r in records} == {"hott-book"}
    # Macros from macros.tex are expanded (\UU, \N and \refl are the book's own).
    texts = " ".join(r.text for r in records)
    assert "\\UU" not in texts and "\\N " not in texts and "\\refl" not in texts and "\\mathcal{U}" in texts
    numbers = [r.metadata.get("number", "") for r in records if r.kind.value == "theorem"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+|[A-Z]\.\d+\.\d+", n) for n in numbers), numbers[:5]


def _tar_gz_of(directory: Path, names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in names:
            tar.add(directory / name, arcname=name)
    return buffer.getvalue()


def test_real_sources_as_arxiv_eprints(tmp_path: Path) -> None:
    """The HoTT book as one multi-file e-print, Stacks chapters gzipped singly and in a bulk tar."""
    hott = SHARED / "corpora" / "hott-book"
    eprint = tmp_path / "2301.00001v3.tar.gz"
    eprint.write_bytes(_tar_gz_of(hott, sorted(p.name for p in hott.iterdir() if p.is_file())))
    [book] = list(LatexIngestor().ingest([eprint]))
    assert (book.paper_id, book.version, book.path.endswith("main.tex")) == ("2301.00001", "v3", True)
    direct = read_corpus(SHARED, HOTT)
    assert [r.text for r in book.records] == [r.text for r in direct]
    assert book.title.startswith("Homotopy Type Theory")

    stacks = SHARED / STACKS
    preamble = (stacks / "preamble.tex").read_bytes()
    single = (stacks / "sets.tex").read_bytes().replace(b"\\input{preamble}", preamble)
    (tmp_path / "2301.00002.gz").write_bytes(gzip.compress(single))
    member = gzip.compress(
        tar_bytes({"preamble.tex": preamble, "categories.tex": (stacks / "categories.tex").read_bytes()})
    )
    (tmp_path / "arXiv_src_2301_001.tar").write_bytes(tar_bytes({"2301/2301.00003.gz": member}))
    results = {
        r.paper_id: r for r in LatexIngestor().ingest([tmp_path / "2301.00002.gz", tmp_path / "arXiv_src_2301_001.tar"])
    }
    assert set(results) == {"2301.00002", "2301.00003"}
    for arxiv_id, chapter in (("2301.00002", "sets"), ("2301.00003", "categories")):
        expected = [r.text for r in read_corpus(SHARED, STACKS) if r.paper_id == chapter]
        assert [r.text for r in results[arxiv_id].records] == expected and expected
