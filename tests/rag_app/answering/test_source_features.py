"""What the chooser reads of each source: the ranker, the embedding, the statement as the index knows it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app.answering.source_features import FEATURE_NAMES, SourceFeatures, known_words, named_words
from retriever.types import SearchHit


def statement(text: str, kind: StatementKind = StatementKind.LEMMA, **fields: str) -> StatementRecord:
    return StatementRecord(id=text[:10], source=Source.ARXIV, kind=kind, text=text, paper_id="p", **fields)


def column(features: SourceFeatures, name: str) -> list[float]:
    return [round(float(v), 4) for v in features.matrix[:, FEATURE_NAMES.index(name)]]


def test_ranker_scores_and_margins_are_read_per_source() -> None:
    hits = [SearchHit(statement(f"Statement {n}."), score, n) for n, score in enumerate((3.0, 1.0, 0.5), start=1)]
    features = SourceFeatures.of("flat modules", hits, [0.6, 0.7, 0.2], learned_scores=True)
    assert features.matrix.shape == (3, len(FEATURE_NAMES))
    assert column(features, "first") == [1.0, 0.0, 0.0] and column(features, "rank") == [0.0, 1.0, 2.0]
    assert column(features, "behind_first") == [0.0, 2.0, 2.5]
    assert column(features, "lead_over_next") == [2.0, 0.5, 0.0]
    assert column(features, "first_lead") == [2.0, 2.0, 2.0]
    assert column(features, "cosine_behind_best") == [0.1, 0.0, 0.5]
    fused = SourceFeatures.of("flat modules", hits, [0.6, 0.7, 0.2], learned_scores=False)
    assert column(fused, "score") == [1.0, 0.5, 0.3333], "fused scores mean nothing across questions: the rank"


def test_the_statement_is_read_as_the_index_knows_it_its_name_section_and_label() -> None:
    record = statement(
        "Let $f : X \\to S$ be quasi-finite and separated. Then $f$ factors through an open immersion.",
        name="Zariski's Main Theorem",
        section="Zariski's main theorem",
        label="lemma-quasi-finite-separated-pass-through-finite",
    )
    question = "Zariski's main theorem for quasi-finite separated $f$"
    features = SourceFeatures.of(question, [SearchHit(record, 1.0, 1)], [0.5], learned_scores=True)
    assert column(features, "text_cover")[0] < column(features, "known_cover")[0] == 1.0
    assert column(features, "name_cover")[0] >= 0.5 and column(features, "unknown_words") == [0.0]
    assert {"zariski", "main", "theorem"} <= named_words(record)


def test_definitions_in_scope_count_as_words_the_statement_knows() -> None:
    record = statement("Every such $R$ is Noetherian.")
    in_scope = statement("A ring is Jacobson if ...", kind=StatementKind.DEFINITION, name="Jacobson ring")
    assert "jacobson" not in known_words(record)
    assert "jacobson" in known_words(record, lambda statement_id: [in_scope])


def test_kind_question_form_and_the_claim_reading_are_features() -> None:
    proved = statement("A principal ideal domain is a unique factorization domain.")
    example = replace(statement("There exists a ring which is not Noetherian."), kind=StatementKind.EXAMPLE)
    definition = replace(
        statement("A ring is a field if every nonzero element is a unit."), kind=StatementKind.DEFINITION
    )
    hits = [SearchHit(r, 1.0, n) for n, r in enumerate((proved, example, definition), start=1)]
    yes_no = SourceFeatures.of("Is every principal ideal domain a unique factorization domain?", hits, [0.5] * 3, True)
    assert column(yes_no, "yes_no") == [1.0] * 3 and column(yes_no, "verdict_yes") == [1.0, 0.0, 0.0]
    assert column(yes_no, "unproved") == [0.0, 1.0, 0.0] and column(yes_no, "definition") == [0.0, 0.0, 1.0]
    asks = SourceFeatures.of("What is a field?", hits, [0.5] * 3, True)
    assert column(asks, "asks_definition") == [1.0] * 3 and column(asks, "definition_asked") == [0.0, 0.0, 1.0]
    assert asks.verdicts == (None, None, None), "no claim reading for a question that is not yes/no"


def test_no_sources_give_an_empty_matrix() -> None:
    features = SourceFeatures.of("anything", [], np.zeros(0), True)
    assert features.matrix.shape == (0, len(FEATURE_NAMES)) and len(features) == 0


def test_how_others_cite_a_statement_is_read_too() -> None:
    record = statement("Every such $M$ is zero.")
    hits = [SearchHit(record, 1.0, 1)]
    citing = {record.id: ["By Nakayama's lemma the module vanishes."]}
    features = SourceFeatures.of("Nakayama lemma", hits, [0.5], True, citing=lambda ids: citing)
    assert column(features, "citing_cover") == [1.0]
    assert column(SourceFeatures.of("Nakayama lemma", hits, [0.5], True), "citing_cover") == [0.0]
