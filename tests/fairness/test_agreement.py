"""The threshold test when seeds show no variation: a FAIL needs a lower end above τ."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from spanguard_processor.fairness.stats import bounds, inference


def _units(x: np.ndarray) -> inference.Units:
    """x: (seeds, groups) variant means, one variant per cell."""
    s, g = x.shape
    return inference.Units(
        x.reshape(s * g, 1),
        np.repeat(np.arange(s), g),
        np.tile(np.arange(g), s),
        np.ones(s * g, dtype=np.int64),
        s,
        g,
    )


def test_six_seeds_agreeing_on_a_gap_of_two_tenths_do_not_fail_a_threshold_of_one_tenth() -> None:
    # every seed: group 0 at 0.7, group 1 at 0.5. A gap of 0.1 (D = 0.2 w.p. 0.9, −0.8 w.p.
    # 0.1) gives six agreeing seeds with probability 0.9⁶ = 0.53: no evidence of Δ > 0.1
    x = np.tile([0.7, 0.5], (6, 1))
    inf = inference.infer_gap(_units(x), threshold=0.1, alpha=0.05)
    assert inf is not None and inf.worst_case
    assert inf.p_threshold >= 0.9**6
    assert inf.interval[0] <= 0.1


def test_agreeing_seeds_fail_a_planted_total_bias_and_one_seed_shows_nothing() -> None:
    refused = np.tile([1.0, 0.0], (10, 1))  # every seed refuses group 1's variant only
    inf = inference.infer_gap(_units(refused), threshold=0.1, alpha=0.05)
    assert inf is not None and inf.p_threshold < 0.01 and inf.interval[0] > 0.1
    one = inference.infer_gap(_units(np.array([[1.0, 0.0]])), threshold=0.1, alpha=0.05)
    assert one is not None and one.p_threshold == 1.0 and one.interval[0] == 0.0


@pytest.mark.parametrize("n", [2, 3, 6, 12, 30])
def test_agreement_p_value_is_exact_at_every_two_point_null(n: int) -> None:
    # D_s ∈ {hi, lo} with mean exactly τ (the boundary of H0): the test rejects only when all
    # n seeds agree, and the probability of that must stay ≤ α for every such distribution
    tau, alpha = 0.1, 0.05
    worst = 0.0
    for hi, lo in itertools.product(np.linspace(0.11, 1.0, 30), np.linspace(-1.0, 0.09, 30)):
        q = (tau - lo) / (hi - lo)  # P(D = hi) so that E[D] = τ
        size = 0.0
        for value, prob in ((hi, q), (lo, 1.0 - q)):
            x = np.tile([value, 0.0], (n, 1)) if value >= 0 else np.tile([0.0, -value], (n, 1))
            agreed = bounds.agreement_test(
                x.reshape(-1, 1),
                np.repeat(np.arange(n), 2),
                np.tile(np.arange(2), n),
                n,
                2,
                tau,
                alpha,
                1.0,
            )
            assert agreed is not None
            if agreed.p_value <= alpha:
                size += prob**n
                assert agreed.lower > tau  # the lower end agrees with the test
        worst = max(worst, size)
    assert worst <= alpha


def test_a_fail_never_shows_a_lower_end_at_or_under_the_threshold() -> None:
    rng = np.random.default_rng(3)
    for trial in range(40):
        gap = [0.0, 0.1, 0.2, 0.3][trial % 4]
        seeds = int(rng.integers(8, 60))
        x = (rng.random((seeds, 3)) < np.array([0.4, 0.4, 0.4 + gap])).astype(float)
        inf = inference.infer_gap(_units(x), threshold=0.1, alpha=0.05, seed=trial, draws=2000)
        assert inf is not None
        if inf.p_threshold < 0.05:
            assert inf.interval[0] > 0.1, (trial, inf.interval, inf.p_threshold)
