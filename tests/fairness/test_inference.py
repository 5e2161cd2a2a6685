"""The inference behind the gate: units, contrasts, the interval of the gap, MDE, small suites."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from spanguard_processor.fairness.stats import inference, permutation, precision
from spanguard_processor.fairness.stats import seeds as stats
from spanguard_processor.fairness.stats.groups import group_stats


def _units(x: np.ndarray) -> inference.Units:
    """x: (seeds, groups) or (seeds, groups, columns) variant means, one variant per cell."""
    x = x if x.ndim == 3 else x[..., None]
    s, g, c = x.shape
    return inference.Units(
        x.reshape(s * g, c),
        np.repeat(np.arange(s), g),
        np.tile(np.arange(g), s),
        np.ones(s * g, dtype=np.int64),
        s,
        g,
    )


def test_interval_holds_the_estimate_and_the_threshold_p_tracks_it() -> None:
    rng = np.random.default_rng(0)
    x = (rng.random((200, 4)) < np.array([0.3, 0.3, 0.3, 0.6])).astype(float)
    inf = inference.infer_gap(_units(x), threshold=0.1, alpha=0.05, seed=1)
    assert inf is not None
    lo, hi = inf.interval
    assert lo <= inf.estimate <= hi
    assert 0.1 < lo < 0.3 < hi  # a 0.3 gap on 200 seeds is shown to exceed 0.1
    assert inf.p_threshold < 0.01
    loose = inference.infer_gap(_units(x), threshold=0.35, alpha=0.05, seed=1)
    assert loose is not None and loose.p_threshold > 0.05


def test_deterministic_app_keeps_what_it_shows_and_gets_a_worst_case_mde() -> None:
    x = np.tile([0.0, 1.0], (20, 1))  # every seed: group 1 escalated, group 0 not
    inf = inference.infer_gap(_units(x), threshold=0.1, alpha=0.05)
    assert inf is not None and inf.worst_case
    # 20 agreeing seeds show a gap beyond 0.1, not a gap of exactly 1 (a true 0.9 gives 20
    # agreeing seeds 12% of the time): the lower end too assumes the worst-case variance
    assert 0.1 < inf.interval[0] < 1.0
    assert inf.p_threshold < 0.001
    one = inference.infer_gap(_units(np.array([[0.0, 1.0]])), threshold=0.1, alpha=0.05)
    assert one is not None and one.interval == (0.0, 1.0)  # one seed shows nothing
    fair = inference.infer_gap(_units(np.zeros((20, 2))), threshold=0.1, alpha=0.05)
    assert fair is not None and fair.worst_case
    assert fair.interval[0] == 0.0 and fair.interval[1] > 0.1  # agreement is not proof
    # its MDE (and upper bound) is the exact bound of 20 agreeing seeds: never 0
    shown = precision.precision(_units(np.zeros((20, 2))), fair, "rate", 0.1, 0.05, 0.8)
    assert shown.mde == shown.interval[1] == pytest.approx(1 - 0.05 ** (1 / 20))


def test_exact_permutation_p_enumerates_every_within_seed_labelling() -> None:
    x = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    design = stats.build_design(np.repeat(np.arange(4), 3), np.tile(np.arange(3), 4), 4, 3)
    values = x.reshape(-1, 1)
    sums, counts = stats.seed_aggregates(design, values)
    observed = stats.gap_estimate(sums, counts).gap
    exact = permutation.exact_permutation_p(design, values, observed)
    # brute force over the 6^4 within-seed orderings
    hits = 0
    for perms in itertools.product(itertools.permutations(range(3)), repeat=4):
        y = np.stack([x[s, list(p)] for s, p in enumerate(perms)])
        means = (y - y.mean(axis=1, keepdims=True)).mean(axis=0)
        hits += means.max() - means.min() >= observed - 1e-12
    assert exact == pytest.approx(hits / 6**4)
    big = stats.build_design(np.repeat(np.arange(40), 3), np.tile(np.arange(3), 40), 40, 3)
    assert permutation.exact_permutation_p(big, np.zeros((120, 1)), 0.0) is None  # 6^40 labellings


def test_group_intervals_respect_the_scale() -> None:
    rng = np.random.default_rng(2)
    rates = _units((rng.random((12, 3)) < np.array([0.02, 0.5, 0.98])).astype(float))
    records = np.full(3, 12, dtype=np.int64)
    for g in group_stats(rates, ["a", "b", "c"], records, 0.95, scale="rate"):
        assert 0.0 <= g.low <= g.mean <= g.high <= 1.0
    counts = _units(rng.poisson(0.2, size=(12, 3)).astype(float))
    for g in group_stats(counts, ["a", "b", "c"], records, 0.95, scale="count"):
        assert 0.0 <= g.low <= g.mean <= g.high


def test_identical_repeats_average_to_the_same_units() -> None:
    rng = np.random.default_rng(3)
    x = (rng.random((10, 3)) < 0.4).astype(float).reshape(-1, 1)
    seed, group = np.repeat(np.arange(10), 3), np.tile(np.arange(3), 10)
    once = inference.variant_units(np.arange(30), seed, group, x, 30, 10, 3)
    thrice = inference.variant_units(
        np.tile(np.arange(30), 3),
        np.tile(seed, 3),
        np.tile(group, 3),
        np.tile(x, (3, 1)),
        30,
        10,
        3,
    )
    np.testing.assert_array_equal(once.values, thrice.values)
    assert list(thrice.repeats) == [3] * 30


@pytest.mark.slow
def test_one_group_30_points_above_the_rest_is_caught_in_15_groups_on_100_seeds() -> None:
    # issue #13's power design: threshold 0.1, one of 15 groups escalates at 0.6 instead of
    # 0.3. Max-|t| over all 2 × 15 one-sided events caught it in 0.785 of suites; the test's
    # critical value from H0's least favourable configurations catches ~0.98 (bench).
    rng = np.random.default_rng(13)
    rates = np.full(15, 0.3)
    rates[0] = 0.6
    caught = 0
    for i in range(40):
        x = (rng.random((100, 15)) < rates).astype(np.float64)
        inf = inference.infer_gap(_units(x), 0.1, 0.05, i, draws=2000)
        assert inf is not None
        caught += inf.p_threshold < 0.05
    assert caught >= 36


def test_least_favourable_critical_value_is_never_above_max_abs_t() -> None:
    rng = np.random.default_rng(3)
    x = (rng.random((60, 8, 3)) < 0.3).astype(np.float64)
    inf = inference.infer_gap(_units(x), 0.1, 0.05, 0, draws=2000)
    assert inf is not None
    k_test = float(inference.threshold_critical(inf, 0.05)[0])
    assert 1.0 < k_test <= inf.critical
    assert inf.test_draws[0].shape == (1 + 2 * 7, 2000)
