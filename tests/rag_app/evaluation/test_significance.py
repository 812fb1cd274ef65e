from __future__ import annotations

import random

from rag_app.evaluation.significance import paired_test


def test_identical_retrievers_are_not_different() -> None:
    values = {str(i): i / 10 for i in range(10)}
    test = paired_test("a", "b", "MRR@10", values, dict(values))
    assert test.randomization_p == 1.0 and test.mean_difference == 0.0


def test_consistent_improvement_is_significant_and_noise_is_not() -> None:
    rng = random.Random(3)
    base = {str(i): rng.random() * 0.5 for i in range(40)}
    better = {qid: value + 0.2 for qid, value in base.items()}
    assert paired_test("a", "b", "m", base, better).randomization_p < 0.01
    noise = {qid: rng.random() * 0.5 for qid in base}
    result = paired_test("a", "b", "m", base, noise)
    assert result.randomization_p > 0.05 and result.t_test_p > 0.05
    assert result.queries == 40
