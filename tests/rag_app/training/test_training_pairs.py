"""No-LLM training pairs, the thesis's split and hard negatives, on small hand-made corpora."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from rag_app.datasets.paper_split import SEEN, TRAINED, UNSEEN, PaperSplit
from rag_app.evaluation.dev_sets import reserved_for_evaluation
from rag_app.training.hard_negatives import HardNegativeMiner, category_bucket
from rag_app.training.training_pairs import (
    TrainingPair,
    chosen_by_kind,
    count_by_kind,
    pairs_without_llm,
    read_pairs,
    write_pairs,
)


def stmt(paper: str, text: str, kind: StatementKind = StatementKind.LEMMA, **fields) -> StatementRecord:
    source = fields.pop("source", Source.ARXIV)
    return StatementRecord(
        id=statement_id(source.value, paper, kind.value, text), source=source, kind=kind, text=text, paper_id=paper,
        **fields,
    )  # fmt: skip


CORPUS = [
    stmt("alg", "If $IM = M$ then $M = 0$.", name="Nakayama's lemma", label="lemma-nakayama-local-ring",
         section="Local rings"),
    stmt("alg", "A module is flat if tensoring preserves injections.", StatementKind.DEFINITION,
         section="Flat modules", metadata={"defined_terms": "flat; faithfully flat"}),
    stmt("alg", "Flat base change holds.", section="Flat modules", label="lemma-flat-base-change"),
    stmt("mse-11", "Use the ratio test.", StatementKind.ANSWER, source=Source.MSE, title="Does this series converge?",
         name="Does this series converge?", metadata={"accepted": True, "score": 0}),
    stmt("mse-12", "No idea.", StatementKind.ANSWER, source=Source.MSE, title="Does this series converge?",
         metadata={"accepted": False, "score": -2}),
]  # fmt: skip


def test_pairs_of_every_kind_point_at_the_right_statement(tmp_path: Path) -> None:
    pairs = pairs_without_llm(CORPUS)
    by_anchor = {(p.anchor, p.kind): p.statement_id for p in pairs}
    assert by_anchor[("Nakayama's lemma", "name")] == CORPUS[0].id
    assert by_anchor[("flat", "defined-term")] == CORPUS[1].id
    assert by_anchor[("faithfully flat", "defined-term")] == CORPUS[1].id
    assert by_anchor[("nakayama local ring", "label")] == CORPUS[0].id
    assert by_anchor[("flat base change", "label")] == CORPUS[2].id
    assert by_anchor[("Does this series converge?", "mse")] == CORPUS[3].id  # accepted; the -2 answer is not paired
    assert {p.statement_id for p in pairs if p.anchor == "Flat modules"} == {CORPUS[1].id, CORPUS[2].id}
    assert count_by_kind(pairs) == {"name": 1, "defined-term": 2, "section": 3, "label": 2, "mse": 1}
    assert len(pairs_without_llm(CORPUS, per_anchor=1)) == len(pairs) - 1  # "Flat modules" keeps one statement
    write_pairs(pairs, tmp_path / "pairs.jsonl")
    assert list(read_pairs(tmp_path / "pairs.jsonl")) == pairs


def test_pairs_chosen_by_kind_keep_a_scarce_kind_whole_and_cap_the_plentiful_ones_in_their_order() -> None:
    pairs = [TrainingPair(f"name {i}", f"s{i}", "name") for i in range(10)]
    pairs += [TrainingPair(f"question {i}", f"s{i}", "question") for i in range(3)]
    pairs += [TrainingPair(f"section {i}", f"s{i}", "section") for i in range(5)]
    chosen = chosen_by_kind(pairs, ["name", "question"], per_kind=4)
    assert count_by_kind(chosen) == {"name": 4, "question": 3}
    assert chosen == [pair for pair in pairs if pair in chosen]  # order kept
    assert chosen == chosen_by_kind(pairs, ["question", "name"], per_kind=4)  # seeded, whatever the list's order
    assert chosen_by_kind(pairs, ["name", "section", "question"], per_kind=None) == pairs
    per_named_kind = chosen_by_kind(pairs, ["name", "section", "question"], per_kind={"name": 2, "section": 1})
    assert count_by_kind(per_named_kind) == {"name": 2, "section": 1, "question": 3}  # a kind not named: whole
    with pytest.raises(ValueError, match="unknown pair kinds \\['sections'\\]"):
        chosen_by_kind(pairs, ["name"], per_kind={"sections": 1})
    with pytest.raises(ValueError, match="unknown pair kinds \\['questions'\\]"):
        chosen_by_kind(pairs, ["questions"], per_kind=4)


def test_a_statement_formula_of_ten_to_sixty_tokens_is_a_formula_query() -> None:
    long_formula = "\\sum_{n \\geq 1} \\frac{1}{n^2} = \\frac{\\pi^2}{6}"
    formulas = ("x \\in X", long_formula, "a" + " + a" * 80)  # too short, fits, too long
    record = stmt("an", f"Euler: ${long_formula}$.", formulas=formulas)
    pairs = [p for p in pairs_without_llm([*CORPUS, record]) if p.kind == "formula"]
    assert [(p.anchor, p.statement_id) for p in pairs] == [(f"${long_formula}$", record.id)]


def papers(counts: dict[str, int]) -> list[StatementRecord]:
    return [stmt(p, f"statement {i} of {p}", label=f"l{i}") for p, n in counts.items() for i in range(n)]


def test_thesis_split_small_papers_train_whole_papers_held_out_ninety_ten_elsewhere(tmp_path: Path) -> None:
    records = papers({"tiny": 3, **{f"p{i}": 20 for i in range(10)}})
    split = PaperSplit.make(records, seed=1, unseen_fraction=0.2, test_fraction=0.1, min_statements=4)
    assert split.train_only_papers == {"tiny"}
    assert len(split.unseen_papers) == 2 and "tiny" not in split.unseen_papers
    assert len(split.seen_papers) == 8 and len(split.held_out) == 8 * 2
    training = split.training_records(records)
    assert len(training) == 3 + 8 * 18
    assert not {r.paper_id for r in training} & split.unseen_papers
    assert PaperSplit.make(records, seed=1, unseen_fraction=0.2) == split  # seeded
    split.save(tmp_path / "split.json")
    assert PaperSplit.load(tmp_path / "split.json") == split

    unseen_paper = sorted(split.unseen_papers)[0]
    held = sorted(split.held_out)[0]
    trained = next(r for r in training if r.paper_id != "tiny")
    assert split.group([f"{unseen_paper}#l0"], [unseen_paper]) == UNSEEN
    assert split.group([held], [held.split("#")[0]]) == SEEN
    assert split.group([trained.docno, held], [trained.paper_id]) == TRAINED


class WordEmbedder:
    """Bag-of-words vectors: enough to check that mining reranks by the model's cosine."""

    vocabulary = ("flat", "module", "ring", "base", "change", "local", "scheme", "sheaf")

    def embed_documents(self, texts, show_progress=False):
        vectors = np.array([[t.lower().count(w) for w in self.vocabulary] for t in texts], dtype=np.float32) + 1e-3
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_hard_negatives_come_from_other_papers_of_the_same_bucket_and_are_reranked_by_cosine() -> None:
    math_ag = {"primary_category": "math.AG"}
    gold = stmt("paper-a", "Flat base change for a flat module.", metadata=math_ag)
    same_paper = stmt("paper-a", "Flat base change, flat module, base change again.", metadata=math_ag)
    other_bucket = stmt("paper-c", "Flat base change flat module ring.", metadata={"categories": "math.NT math.AG"})
    lexical_best = stmt("paper-b", "Flat flat flat base base change change scheme.", metadata=math_ag)
    cosine_best = stmt("paper-d", "A flat module over a local ring with base change.", metadata=math_ag)
    records = [gold, same_paper, other_bucket, lexical_best, cosine_best]
    assert category_bucket(other_bucket) == "math.nt" and category_bucket(gold) == "math.ag"
    miner = HardNegativeMiner(records, WordEmbedder(), candidates=5)
    (mined,) = miner.mine([TrainingPair("flat module base change local ring", gold.id, "label")])
    assert mined.negative_id == cosine_best.id
    # An anchor's other positives are never its negatives.
    pairs = [TrainingPair("flat module local ring", gold.id, "section"),
             TrainingPair("flat module local ring", cosine_best.id, "section")]  # fmt: skip
    by_id = {r.id: r for r in records}
    for pair in miner.mine(pairs):
        assert pair.negative_id and pair.negative_id not in {gold.id, cosine_best.id}
        assert by_id[pair.negative_id].paper_id != by_id[pair.statement_id].paper_id


def test_label_words_reserved_for_evaluation_are_never_a_training_query() -> None:
    # "cohomology base change f5" is one of the one-in-five label texts the stacks-label-words set may hold
    reserved = stmt("alg", "Base change.", label="lemma-cohomology-base-change-f5")
    kept = stmt("alg", "Flat base change holds.", label="lemma-flat-base-change")
    assert reserved_for_evaluation("cohomology base change f5") and not reserved_for_evaluation("flat base change")
    anchors = {p.anchor for p in pairs_without_llm([reserved, kept]) if p.kind == "label"}
    assert anchors == {"flat base change"}
    # decided by the text alone: about one label in five, the same on every run
    assert 150 < sum(reserved_for_evaluation(f"word{i} thing") for i in range(1000)) < 250
