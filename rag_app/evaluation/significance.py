"""Paired significance tests between two retrievers scored on the same queries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class PairedTest:
    """``candidate`` against ``baseline`` on one measure over the queries both were scored on."""

    baseline: str
    candidate: str
    measure: str
    queries: int
    mean_difference: float
    randomization_p: float
    t_test_p: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def paired_test(
    baseline: str,
    candidate: str,
    measure: str,
    baseline_values: Mapping[str, float],
    candidate_values: Mapping[str, float],
    resamples: int = 10_000,
    seed: int = 0,
) -> PairedTest:
    """Two-sided paired randomization (sign-flip permutation) test and paired t-test.

    The randomization test is the one IR papers report (Smucker et al., 2007); the t-test is shown
    beside it. Both are 1.0 when the two retrievers agree on every query.
    """
    from scipy import stats  # imported here: it costs a second at startup of every CLI command

    qids = sorted(
        q
        for q in set(baseline_values) & set(candidate_values)
        if np.isfinite(baseline_values[q]) and np.isfinite(candidate_values[q])  # NaN: measure unknown
    )
    a = np.array([baseline_values[q] for q in qids], dtype=float)
    b = np.array([candidate_values[q] for q in qids], dtype=float)
    difference = float(np.mean(b - a)) if qids else 0.0
    if len(qids) < 2 or np.allclose(a, b):
        return PairedTest(baseline, candidate, measure, len(qids), difference, 1.0, 1.0)
    randomization = stats.permutation_test(
        (a, b),
        lambda x, y: np.mean(y - x),
        permutation_type="samples",
        n_resamples=resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    if np.ptp(b - a) < 1e-12:
        t_p = 0.0  # the same non-zero difference on every query: no variance to test against
    else:
        t_test = stats.ttest_rel(b, a)
        t_p = float(t_test.pvalue) if np.isfinite(t_test.pvalue) else 1.0
    return PairedTest(baseline, candidate, measure, len(qids), difference, float(randomization.pvalue), t_p)
