"""Verdict pairs made by rule from statement text, on hand-written Stacks-like statements (and, slow, the real one)."""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from rag_app.training.verdict_pairs import LABELS, VerdictPair, make_pairs, read_pairs, write_pairs

SHARED = Path(__file__).resolve().parents[3].parent / "shared"  # ../shared beside the checkout


def stmt(paper: str, label: str, text: str, kind: StatementKind = StatementKind.LEMMA) -> StatementRecord:
    """A statement of chapter ``paper``, in a section of the chapter's name."""
    return StatementRecord(
        id=statement_id(Source.ARXIV.value, paper, kind.value, text), source=Source.ARXIV, kind=kind, text=text,
        paper_id=paper, label=label, section=paper.title(),
    )  # fmt: skip


NOETHERIAN = stmt("algebra", "lemma-finite-noetherian",
                  "Let $R$ be a Noetherian ring. \\label{lemma-finite-noetherian}\nLet $M$ be a finite $R$-module.\n"
                  "Then $M$ is finitely presented (see Lemma \\ref{lemma-finite-presentation}).")  # fmt: skip
POLYNOMIAL = stmt("algebra", "lemma-hilbert", "Let $R$ be a Noetherian ring. Then $R[x]$ is Noetherian.")
FLAT = stmt("algebra", "lemma-flat-tor",
            "Let $R$ be a ring. Let $M$ be an $R$-module. Then $M$ is flat if and only if "
            "$\\text{Tor}_1^R(M, N) = 0$ for every $R$-module $N$.")  # fmt: skip
COHERENT = stmt("algebra", "definition-coherent",
                "Let $R$ be a ring. We say that an $R$-module $M$ is \\emph{coherent} if $M$ is finitely generated "
                "and every finitely generated submodule of $M$ is finitely presented.",
                StatementKind.DEFINITION)  # fmt: skip
INTEGRAL = stmt("schemes", "lemma-reduced-irreducible",
                "Let $X$ be a scheme. If $X$ is reduced and $X$ is irreducible, then $X$ is integral.")  # fmt: skip
IMMERSION = stmt("schemes", "lemma-closed-immersion-separated",
                 "Let $f : X \\to Y$ be a morphism of schemes. "
                 "If $f$ is a closed immersion, then $f$ is separated.")  # fmt: skip
ETALE = stmt("morphisms", "lemma-etale-equivalent",
             "Let $f : X \\to S$ be a morphism of schemes. The following are equivalent\n\n"
             "\\begin{enumerate}\n\\item $f$ is étale,\n\\item $f$ is flat and unramified, and\n"
             "\\item $f$ is smooth of relative dimension $0$.\n\\end{enumerate}")  # fmt: skip
COMPOSITION = stmt("morphisms", "lemma-composition-surjective",
                   "The composition of surjective morphisms is surjective.")
COHOMOLOGY = stmt("cohomology", "lemma-affine-vanishing",
                  "Let $X$ be an affine scheme. Let $\\mathcal{F}$ be a quasi-coherent $\\mathcal{O}_X$-module. "
                  "Then $H^1(X, \\mathcal{F}) = 0$.")  # fmt: skip
GARBAGE = [
    stmt("cohomology", "remark-discussion", "See the discussion in Section \\ref{section-foo}.", StatementKind.REMARK),
    stmt("cohomology", "lemma-above", "The functor constructed above is exact by Lemma \\ref{lemma-bar}."),
    stmt("cohomology", "lemma-diagram", "There exist\n\\begin{enumerate}\n\\item a scheme $X$,\n\\item a point $x$."
         "\n\\end{enumerate}"),
]  # fmt: skip
CORPUS = [NOETHERIAN, POLYNOMIAL, FLAT, COHERENT, INTEGRAL, IMMERSION, ETALE, COMPOSITION, COHOMOLOGY, *GARBAGE]


def every_pair(seed: int = 7) -> list[VerdictPair]:
    """All candidates of every statement: a generous per-statement cap keeps them all."""
    return make_pairs(CORPUS, random.Random(seed), per_statement=50)


def by_statement(pairs: list[VerdictPair]) -> dict[str, list[VerdictPair]]:
    grouped = defaultdict(list)
    for pair in pairs:
        grouped[pair.statement_id].append(pair)
    return grouped


def test_each_label_is_made_where_the_shape_allows_it() -> None:
    grouped = by_statement(every_pair())
    kinds = {record.label: {(pair.label, pair.kind) for pair in grouped[record.id]} for record in CORPUS}
    assert {label for label, _ in kinds["lemma-finite-noetherian"]} == set(LABELS)
    assert {("yes", "restated"), ("no", "negated"), ("no", "counterexample"), ("answers", "open-question"),
            ("related", "dropped-hypothesis"), ("related", "converse"), ("related", "other-object"),
            ("unrelated", "other-chapter")} <= kinds["lemma-finite-noetherian"]  # fmt: skip
    assert {("yes", "equivalence-direction"), ("answers", "criterion-question")} <= kinds["lemma-flat-tor"]
    assert {("yes", "restated"), ("no", "negated"), ("answers", "definition-question")} <= kinds["definition-coherent"]
    assert {("related", "dropped-hypothesis"), ("related", "converse")} <= kinds["lemma-reduced-irreducible"]
    assert ("related", "stronger-conclusion") in kinds["lemma-closed-immersion-separated"]
    assert ("answers", "criterion-question") in kinds["lemma-etale-equivalent"]
    assert ("answers", "formula-question") in kinds["lemma-affine-vanishing"]
    assert {label for label, _ in kinds["lemma-composition-surjective"]} >= {"yes", "no", "answers"}
    assert all(not kinds[record.label] for record in GARBAGE)  # no usable shape: no pairs, rather than nonsense


def test_questions_read_as_questions_about_the_statement() -> None:
    questions = {(pair.statement_id, pair.kind): pair.question for pair in every_pair() if pair.label != "unrelated"}
    dropped = questions[(NOETHERIAN.id, "dropped-hypothesis")]
    assert dropped in {"Let $R$ be a ring. Let $M$ be a finite $R$-module. " + ask for ask in (
        "Is it true that $M$ is finitely presented?", "Does it follow that $M$ is finitely presented?",
        "Is $M$ finitely presented?", "Must $M$ be finitely presented?")} or dropped.startswith(
        "Let $R$ be a Noetherian ring. Let $M$ be an $R$-module. ")  # fmt: skip
    assert questions[(NOETHERIAN.id, "counterexample")] == (
        "Is there a Noetherian ring $R$ and a finite $R$-module $M$ such that $M$ is not finitely presented?")
    assert questions[(IMMERSION.id, "stronger-conclusion")].endswith(("$f$ proper?", "$f$ is proper?", "be proper?"))
    assert questions[(COHOMOLOGY.id, "formula-question")].endswith("What is $H^1(X, \\mathcal{F})$?")
    assert "What is $H^1" not in questions[(COHOMOLOGY.id, "negated")]
    assert "coherent" in questions[(COHERENT.id, "definition-question")]
    for question in questions.values():
        assert question.endswith("?") and len(question) <= 400 and question.count("$") % 2 == 0
        prose = re.sub(r"\$[^$]*\$", "", question)
        assert not any(markup in prose for markup in ("\\", "{", "[", "⟪", "Lemma", "see")), question


def test_dropped_hypothesis_needs_two_hypotheses() -> None:
    grouped = by_statement(every_pair())
    assert not [pair for pair in grouped[POLYNOMIAL.id] if pair.kind == "dropped-hypothesis"]  # one: "Noetherian"
    assert not [pair for pair in grouped[IMMERSION.id] if pair.kind == "dropped-hypothesis"]  # one condition
    assert [pair for pair in grouped[NOETHERIAN.id] if pair.kind == "dropped-hypothesis"]  # "Noetherian", "finite"


def test_unrelated_pairs_ask_about_a_statement_of_another_chapter() -> None:
    pairs = every_pair()
    made_from = {pair.question: pair.statement_id for pair in pairs if pair.label in ("yes", "answers")}
    paper = {record.id: record.paper_id for record in CORPUS}
    unrelated = [pair for pair in pairs if pair.label == "unrelated"]
    assert unrelated
    assert all(paper[made_from[pair.question]] != paper[pair.statement_id] for pair in unrelated)
    related = [pair for pair in pairs if pair.kind == "other-object"]
    assert related and all(paper[made_from[pair.question]] == paper[pair.statement_id] for pair in related)


def test_the_cap_spreads_labels_and_a_seed_gives_the_same_pairs() -> None:
    pairs = make_pairs(CORPUS, random.Random(2026))
    assert pairs == make_pairs(CORPUS, random.Random(2026))
    for statement_pairs in by_statement(pairs).values():
        assert len(statement_pairs) <= 4
        assert len({pair.label for pair in statement_pairs}) == len(statement_pairs)  # one per label first
    assert every_pair(seed=1) != every_pair(seed=2)


def test_pairs_round_trip_through_a_file(tmp_path: Path) -> None:
    pairs = every_pair()
    path = tmp_path / "pairs.jsonl"
    write_pairs(pairs, path)
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header == {"format": "rag-app-verdict-pairs", "version": 1,
                      "counts": {label: sum(pair.label == label for pair in pairs) for label in LABELS}}  # fmt: skip
    assert read_pairs(path) == pairs
    assert VerdictPair.from_dict(pairs[0].to_dict()) == pairs[0]
    with pytest.raises(ValueError, match="unknown verdict label"):
        VerdictPair.from_dict({**pairs[0].to_dict(), "label": "maybe"})
    path.write_text('{"format": "something-else"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="not a version-1"):
        read_pairs(path)


@pytest.mark.slow
def test_the_stacks_project_gives_enough_pairs_of_every_label() -> None:
    from rag_app.datasets.dev_corpora import STACKS, read_corpus

    if not (SHARED / STACKS).exists():
        pytest.skip(f"the Stacks project is not at {SHARED / STACKS}")
    records = read_corpus(SHARED, STACKS)
    pairs = make_pairs(records, random.Random(2026))
    counts = Counter(pair.label for pair in pairs)
    print(f"\n{len(pairs)} pairs from {len(records)} statements: {dict(counts)}")
    text = {record.id: " ".join(record.text.split()) for record in records}
    for label in LABELS:
        for pair in random.Random(label).sample([pair for pair in pairs if pair.label == label], 3):
            print(f"\n[{label} / {pair.kind}]\n  statement: {text[pair.statement_id][:300]}")
            print(f"  question:  {pair.question}")
    assert len(pairs) >= 20_000
    assert all(counts[label] >= 1000 for label in LABELS), counts
    assert not [pair for pair in pairs if "\\label" in pair.question or "\\ref" in pair.question]
