"""A group's interval always holds its mean, even at a rate of exactly 0 or 1."""

from __future__ import annotations

import pytest

from spanguard_processor.fairness.stats.groups import _wilson


@pytest.mark.parametrize("cap", [float(n) for n in range(1, 400, 3)])
@pytest.mark.parametrize("p", [0.0, 1.0])
def test_wilson_interval_holds_a_rate_of_zero_or_one(p: float, cap: float) -> None:
    low, high = _wilson(p, 0.0, 2.0, cap)
    assert 0.0 <= low <= p <= high <= 1.0, (low, high)
