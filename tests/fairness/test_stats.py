"""The numpy statistics: multiplicity, permutation null, bootstrap, power."""

from __future__ import annotations

import numpy as np
import pytest

from spanguard_processor.fairness.stats import permutation
from spanguard_processor.fairness.stats import seeds as stats


def test_holm_matches_hand_computation_and_keeps_none() -> None:
    assert stats.holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == [1.0, 1.0]


def test_benjamini_hochberg_matches_hand_computation() -> None:
    # m = 4: raw p·m/rank = 0.04, 0.06, 0.0533, 0.5, then the running minimum from the top
    got = stats.benjamini_hochberg([0.01, 0.04, 0.03, None, 0.5])
    assert got == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, None, 0.5])


def _design(seeds: int, groups: int) -> stats.Design:
    seed = np.repeat(np.arange(seeds), groups)
    group = np.tile(np.arange(groups), seeds)
    return stats.build_design(seed, group, seeds, groups)


def test_within_seed_permutation_p_is_the_exact_enumeration_value() -> None:
    # two seeds, two groups, group 1 escalates in both: of the 4 equally likely within-seed
    # relabellings, 2 give the observed gap of 1 (both flipped or none), so p = 1/2
    design = _design(2, 2)
    x = np.array([[0.0], [1.0], [0.0], [1.0]])
    sums, counts = stats.seed_aggregates(design, x)
    gap = stats.gap_estimate(sums, counts).gap
    assert gap == 1.0
    p = permutation.permutation_p(design, x, gap, 20_000, seed=1)
    assert p == pytest.approx(0.5, abs=0.01)


def test_permutation_never_mixes_records_across_seeds() -> None:
    # seed 0 is all ones, seed 1 all zeros: any within-seed shuffle keeps the gap at 0
    design = _design(2, 3)
    x = np.array([[1.0]] * 3 + [[0.0]] * 3)
    sums, counts = stats.seed_aggregates(design, x)
    assert stats.gap_estimate(sums, counts).gap == 0.0
    assert permutation.permutation_p(design, x, 0.0, 200, seed=0) == 1.0


def test_permutation_covariance_matches_simulated_permutations() -> None:
    rng = np.random.default_rng(3)
    design = _design(40, 3)
    x = rng.random((120, 1))
    cov, n_g = permutation.permutation_covariance(design, x)
    e = x[:, 0].reshape(40, 3) - x[:, 0].reshape(40, 3).mean(axis=1, keepdims=True)
    sims = np.empty((20_000, 3))
    for i in range(sims.shape[0]):
        perm = rng.permuted(e, axis=1)
        sims[i] = perm.mean(axis=0)
    np.testing.assert_allclose(cov, np.cov(sims.T), rtol=0.06, atol=1e-6)
    assert list(n_g) == [40.0, 40.0, 40.0]


def test_normal_approximation_agrees_with_monte_carlo_permutation() -> None:
    rng = np.random.default_rng(11)
    design = _design(300, 2)
    x = (rng.random((600, 1)) < np.tile([0.30, 0.36], 300)[:, None]).astype(float)
    sums, counts = stats.seed_aggregates(design, x)
    gap = stats.gap_estimate(sums, counts).gap
    exact = permutation.permutation_p(design, x, gap, 4000, seed=2)
    cov, n_g = permutation.permutation_covariance(design, x)
    approx = permutation.normal_permutation_p(cov, n_g, 1, gap, 40_000, seed=2)
    assert approx == pytest.approx(exact, abs=0.03)


def test_bootstrap_is_deterministic_and_interval_contains_estimate() -> None:
    rng = np.random.default_rng(5)
    design = _design(30, 6)
    x = (rng.random((180, 1)) < 0.3).astype(float)
    sums, counts = stats.seed_aggregates(design, x)
    gap = stats.gap_estimate(sums, counts).gap

    def draws() -> np.ndarray:
        gaps = []
        for w in stats.bootstrap_seed_counts(30, 2000, seed=9):
            weights = w.astype(np.float64)  # (B, S): how often each seed is drawn
            num = (weights @ sums.reshape(30, -1)).reshape(len(weights), *sums.shape[1:])
            den = weights @ counts
            gaps.append(stats.gap_of(num / den[:, :, None]))
        return np.concatenate(gaps)

    first, second = draws(), draws()
    assert first.shape == (2000,)
    np.testing.assert_array_equal(first, second)
    lo, hi = stats.bias_corrected_interval(first, gap, 0.95)
    assert lo <= gap <= hi
    # the raw percentile interval of max-minus-min sits above the estimate: that is the bias
    assert np.quantile(first, 0.05) > 0.0


def test_bootstrap_counts_resample_whole_seeds() -> None:
    chunks = list(stats.bootstrap_seed_counts(7, 50, seed=0, chunk=16))
    counts = np.concatenate(chunks)
    assert counts.shape == (50, 7)
    assert np.all(counts.sum(axis=1) == 7)
