"""The design power's simulated constants: drawn once per group count, the same numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spanguard_processor.fairness.stats import power


def _reference(groups: int, df: int, alpha: float, quantile: float) -> float:
    """The constant as computed before the draws were shared: all of them for each call."""
    rng = np.random.default_rng(20261205 + groups)
    draws = max(2_000, min(20_000, 4_000_000 // groups))
    z = rng.standard_normal((draws, groups))
    centred = z - z.mean(axis=1, keepdims=True)
    t = np.abs(centred).max(axis=1) * math.sqrt(groups / (groups - 1.0))
    if df < 500:
        t = t / np.sqrt(rng.chisquare(df, size=draws) / df)
    k = float(np.quantile(t, 1.0 - alpha))
    spread = z.max(axis=1) - z.min(axis=1)
    return float(np.quantile(spread + 2.0 * k * math.sqrt((groups - 1.0) / groups), quantile))


@pytest.mark.parametrize("groups", [2, 3, 7])
def test_each_degree_of_freedom_gets_the_constant_its_own_draws_gave(groups: int) -> None:
    for df in (1, 4, 39, 499, 500, 2_000):
        assert power._constant(groups, df, 0.025, 0.8) == _reference(groups, df, 0.025, 0.8)


def test_the_group_means_are_drawn_once_per_group_count() -> None:
    power._fair_draws.cache_clear()
    for df in range(2, 12):
        power._constant(4, df, 0.025, 0.8)
    assert power._fair_draws.cache_info().misses == 1
