"""The learned ranker's features: what each column says of a (query, statement) pair."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ingestion import Source, StatementKind, StatementRecord
from retriever.models.ranking_features import FEATURE_NAMES, StatementProfiles, feature_matrix
from retriever.types import SearchHit


def column(matrix: np.ndarray, name: str) -> list[float]:
    return [float(value) for value in matrix[:, FEATURE_NAMES.index(name)]]


def hit(record: StatementRecord, rank: int, scores: dict[str, float], ranks: dict[str, int]) -> SearchHit:
    return SearchHit(record, score=1.0 / rank, rank=rank, channel_ranks=ranks, channel_scores=scores)


NAKAYAMA = StatementRecord(
    "a", Source.ARXIV, StatementKind.LEMMA, "Let $M$ be a finitely generated module with $IM = M$. Then ...",
    "p1", name="Nakayama's lemma", formulas=("IM = M",), section="Modules", title="Commutative algebra",
    label="lemma-nakayama",
)  # fmt: skip
FLAT = StatementRecord(
    "b", Source.ARXIV, StatementKind.DEFINITION, "A module is flat if tensoring with it is exact.", "p2",
    section="Flatness", metadata={"defined_terms": "flat"},
)  # fmt: skip


def test_channel_scores_ranks_and_missing_channels() -> None:
    hits = [
        hit(NAKAYAMA, 1, {"dense": 0.8, "bm25": 12.0}, {"dense": 1, "bm25": 1}),
        hit(FLAT, 2, {"dense": 0.4}, {"dense": 3}),
    ]
    matrix = feature_matrix("Nakayama lemma", hits)
    assert matrix.shape == (2, len(FEATURE_NAMES)) and matrix.dtype == np.float32
    assert column(matrix, "dense_score") == pytest.approx([0.8, 0.4])
    assert column(matrix, "dense_score_rel") == [1.0, 0.5]
    assert column(matrix, "dense_rrank") == pytest.approx([1.0, 1 / 3])
    bm25 = column(matrix, "bm25_score")
    assert bm25[0] == 12.0 and math.isnan(bm25[1])  # BM25 did not return the definition: missing, not 0
    assert column(matrix, "bm25_rrank") == [1.0, 0.0]
    assert all(math.isnan(v) for v in column(matrix, "dense2_score"))  # the second model is off
    assert column(matrix, "first_stage_rrank") == [1.0, 0.5]


def test_the_fusion_channel_stands_in_for_dense() -> None:
    matrix = feature_matrix("flat", [hit(FLAT, 1, {"fusion": 0.7}, {"fusion": 1})])
    assert column(matrix, "dense_score") == pytest.approx([0.7])


def test_field_matches_use_stemmed_terms() -> None:
    hits = [hit(NAKAYAMA, 1, {}, {}), hit(FLAT, 2, {}, {})]
    matrix = feature_matrix("Nakayama's lemma for modules", hits)
    in_name, covered = column(matrix, "query_in_name"), column(matrix, "name_covered")
    assert in_name[0] > 0 and covered[0] == 1.0 and in_name[1] == 0.0  # the name typed whole covers it
    assert column(matrix, "query_in_section")[0] > 0  # "modules" matches the section "Modules"
    flat = feature_matrix("flatness of modules", [hit(FLAT, 1, {}, {})])
    assert column(flat, "query_in_defined_terms") == [0.5]  # "flatness" and "flat" share the stem
    assert column(flat, "kind") == [float(list(StatementKind).index(StatementKind.DEFINITION))]


def test_formula_overlap_and_query_profile() -> None:
    matrix = feature_matrix("when is $IM = M$ for an ideal $I$", [hit(NAKAYAMA, 1, {}, {}), hit(FLAT, 2, {}, {})])
    overlap = column(matrix, "formula_token_overlap")
    assert overlap == [0.75, 0.0]  # query tokens IM, =, M, I: the statement's formula lacks the lone I
    assert column(matrix, "query_formulas") == [2.0, 2.0]
    assert 0 < column(matrix, "query_formula_share")[0] < 1


def test_no_hits_give_an_empty_matrix() -> None:
    assert feature_matrix("anything", []).shape == (0, len(FEATURE_NAMES))


def test_graph_features_count_uses_used_by_and_links_to_the_top_candidates(tmp_path) -> None:
    from ingestion.records import LabelReference
    from retriever.models.learned_ranker import graph_features
    from retriever.models.ranking_features import GRAPH_FEATURE_NAMES
    from retriever.storage.statement_graph import StatementGraph

    uses_nakayama = (LabelReference("lemma-nakayama", "proof", "a"),)
    referencing = StatementRecord("c", Source.ARXIV, StatementKind.LEMMA, "Flat.", "p1", references=uses_nakayama)
    nakayama = StatementRecord("a", Source.ARXIV, StatementKind.LEMMA, "Nakayama.", "p1", label="lemma-nakayama")
    hits = [hit(nakayama, 1, {}, {}), hit(referencing, 2, {}, {}), hit(FLAT, 3, {}, {})]
    graph = StatementGraph(tmp_path)
    graph.add([nakayama, referencing])
    matrix = graph_features(hits, graph)
    assert matrix.shape == (3, len(GRAPH_FEATURE_NAMES))
    # uses, used by, linked, PageRank in its paper times its size: the used lemma gathers the rank
    # (c -> a, damping 0.85: a = 0.649, c = 0.351, times 2); a statement not in the graph is average
    expected = [[0.0, math.log(2), 1.0, 1.298], [math.log(2), 0.0, 1.0, 0.702], [0.0, 0.0, 0.0, 1.0]]
    assert np.allclose(matrix, np.array(expected), atol=1e-3)
    assert np.isnan(graph_features(hits, None)).all()  # no graph: missing, as LightGBM reads NaN


def test_profiles_kept_between_calls_give_the_rows_made_afresh() -> None:
    profiles = StatementProfiles()
    hits = [hit(NAKAYAMA, 1, {"dense": 0.8}, {"dense": 1}), hit(FLAT, 2, {"bm25": 3.0}, {"bm25": 1})]
    for query in ("Nakayama lemma for modules", "when is $IM = M$", "flat modules"):
        fresh = feature_matrix(query, hits)
        kept = feature_matrix(query, hits, profiles)
        np.testing.assert_array_equal(np.nan_to_num(kept, nan=-7.0), np.nan_to_num(fresh, nan=-7.0))
    assert len(profiles._profiles) == 2  # one per statement, made once for the three queries


def test_a_statement_changed_under_its_id_gets_a_new_profile() -> None:
    profiles = StatementProfiles()
    renamed = dataclasses.replace(NAKAYAMA, name="Krull's intersection theorem")
    before = feature_matrix("Nakayama lemma", [hit(NAKAYAMA, 1, {}, {})], profiles)
    after = feature_matrix("Nakayama lemma", [hit(renamed, 1, {}, {})], profiles)
    assert column(before, "query_in_name") == [1.0]
    assert column(after, "query_in_name") == [0.0]


def test_profiles_kept_are_bounded() -> None:
    profiles = StatementProfiles(max_statements=2)
    records = [dataclasses.replace(FLAT, id=f"s{i}") for i in range(5)]
    feature_matrix("flat", [hit(record, i + 1, {}, {}) for i, record in enumerate(records)], profiles)
    assert len(profiles._profiles) == 2


def test_citing_features_read_what_the_citing_sentences_say(tmp_path) -> None:
    from ingestion.records import LabelReference
    from retriever.models.learned_ranker import citing_features
    from retriever.models.ranking_features import CITING_FEATURE_NAMES
    from retriever.storage.statement_graph import StatementGraph

    unnamed = StatementRecord("a", Source.ARXIV, StatementKind.LEMMA, "If $IM = M$ then $M = 0$.", "p1",
                              label="lemma-nak")  # fmt: skip
    by_name = LabelReference("lemma-nak", "proof", "a", "", "Hence $M = 0$ by Nakayama's lemma.")
    bare = LabelReference("lemma-nak", "proof", "a", "", "Apply Lemma 3.")
    citers = [StatementRecord(f"c{i}", Source.ARXIV, StatementKind.LEMMA, "Flat.", "p1", references=(ref,))
              for i, ref in enumerate((by_name, bare))]  # fmt: skip
    graph = StatementGraph(tmp_path)
    graph.add([unnamed, *citers])
    hits = [hit(unnamed, 1, {}, {}), hit(FLAT, 2, {}, {})]
    matrix = citing_features("Nakayama lemma", hits, graph)
    assert matrix.shape == (2, len(CITING_FEATURE_NAMES))
    cited, together, best, only_there = (float(v) for v in matrix[0])
    assert cited == pytest.approx(math.log(3))  # two statements cite it in a sentence
    assert together == 1.0 and best == 1.0  # both query terms in one sentence
    assert only_there == 1.0  # and neither is written in the lemma itself: its name comes from its citers
    assert matrix[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # nobody cites the definition
    assert np.isnan(citing_features("Nakayama lemma", hits, None)).all()  # no graph: missing
