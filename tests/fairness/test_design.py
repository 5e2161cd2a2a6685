"""Design power: the MDE and the seeds a suite needs, before any app call."""

from __future__ import annotations

import math

import pytest

from spanguard_processor.fairness.stats import power as design
from spanguard_processor.fairness.stats.bounds import clopper_pearson_upper


def test_exact_bound_with_no_discordant_seed_is_one_minus_alpha_to_the_1_over_n() -> None:
    assert design.deterministic_bound(70) == pytest.approx(1 - 0.05 ** (1 / 70))
    assert round(design.deterministic_bound(70), 3) == 0.042
    assert clopper_pearson_upper(0, 5) == pytest.approx(1 - 0.05**0.2)
    assert clopper_pearson_upper(5, 5) == 1.0


def test_a_deterministic_app_needs_ln_alpha_over_ln_one_minus_tau_seeds() -> None:
    n = design.seeds_needed(2, 1, "rate", 0.1, observed=0.0)
    assert n == math.floor(math.log(0.05) / math.log(0.9)) + 1 == 29
    assert design.deterministic_bound(n) < 0.1 <= design.deterministic_bound(n - 1)
    # a count's bound scales with its stated range
    assert design.seeds_needed(6, 1, "count", 0.5, observed=0.0, spread=3.0) == 17


def test_seeds_needed_is_the_fewest_seeds_whose_mde_reaches_the_threshold() -> None:
    for groups in (2, 6, 15):
        n = design.seeds_needed(groups, 1, "rate", 0.1)
        mde = design.design_mde(n, groups, 1, "rate", 0.1)
        before = design.design_mde(n - 1, groups, 1, "rate", 0.1)
        assert mde is not None and mde <= 0.1
        assert before is None or before > 0.1


def test_mde_shrinks_with_seeds_and_independent_repeats_and_grows_with_groups() -> None:
    def mde(seeds: int, groups: int, repeats: int = 1) -> float:
        value = design.design_mde(seeds, groups, repeats, "rate", 0.1)
        assert value is not None
        return value

    assert mde(400, 2) < mde(100, 2)
    assert mde(100, 2, repeats=4) == pytest.approx(mde(100, 2) / 2)
    assert mde(100, 15) > mde(100, 6) > mde(100, 2)
    assert design.design_mde(5, 2, 1, "rate", 0.1) is None  # beyond a rate's scale
    assert design.design_mde(1, 2, 1, "rate", 0.1) is None
