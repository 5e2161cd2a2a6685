"""The advice of an INCONCLUSIVE metric comes true (issue 47, item 7).

Measured on main: a 100-seed suite near τ was told "about 6 seeds (now 100)"; after
``--repeats 3`` the advice "3 repeats" became "9 repeats"; a gap leaning FAIL was told only what
a fair app would need. The re-run rates (a fair app re-run at the printed size PASSes in ≥ 80%)
are in bench/bench_calibration.py --advice.
"""

from __future__ import annotations

import numpy as np

from spanguard_processor.fairness import GateConfig, MetricConfig, Observation, evaluate
from spanguard_processor.fairness.stats import power
from spanguard_processor.traces.model import ProcessTrace

_CONFIG = GateConfig(bootstrap_samples=200, permutation_samples=199)
_METRIC = [MetricConfig("escalation_parity", 0.1)]


def _suite(escalated: np.ndarray) -> list[Observation]:
    """escalated: (seeds, 2 groups, repeats) booleans."""
    seeds, groups, repeats = escalated.shape
    return [
        Observation(
            id=f"s{s}::{g}#{r}",
            seed_id=f"s{s}",
            variant_id=f"s{s}::{g}",
            assignments={"gender": ("man", "woman")[g]},
            prompt="",
            response="ok",
            trace=ProcessTrace(escalated=bool(escalated[s, g, r])),
            stated=frozenset({"escalated"}),
        )
        for s in range(seeds)
        for g in range(groups)
        for r in range(repeats)
    ]


def test_advice_is_never_fewer_seeds_than_the_suite_already_has() -> None:
    # an app escalating the woman alone on 5 of 100 templates: gap 0.05, τ 0.1; main said
    # "about 63 seeds (now 100) ... or 1 independent repeats per variant"
    escalated = np.zeros((100, 2, 1), dtype=bool)
    escalated[:5, 1, 0] = True
    r = evaluate(_suite(escalated), _METRIC, _CONFIG, generated_at="t").results[0]
    assert r.verdict == "inconclusive"
    assert r.seeds_needed is not None and r.seeds_needed > 100, r.reason_text
    assert "1 independent repeats" not in r.reason_text


def test_repeats_are_counted_in_all_from_the_repeats_already_run() -> None:
    # a variance at 3 repeats whose MDE is 1.05·τ: 4 repeats in all, not 3 × ceil(1.05²) = 6
    c = power.resolution(30, 2, 1.0)
    assert c is not None
    variance = 1.05 * 0.1**2 / c**2
    assert power.repeats_needed(30, 2, 0.1, variance, repeats=3) == 4
    # the run at the advised repeats needs no more (main: 3 → "9 repeats" on such noise)
    once = power.repeats_needed(30, 2, 0.1, 3 * variance, repeats=1)
    assert once == 4 and power.repeats_needed(30, 2, 0.1, 3 * variance / once, once) is None


def test_a_gap_leaning_fail_is_told_the_seeds_that_would_decide_fail() -> None:
    rng = np.random.default_rng(11)
    rates = np.array([0.3, 0.55])
    escalated = rng.random((16, 2, 1)) < rates[None, :, None]
    r = evaluate(_suite(escalated), _METRIC, _CONFIG, generated_at="t").results[0]
    assert r.verdict == "inconclusive" and r.score > 0.1, r.reason_text
    to_fail = r.details["upper_bound"]["seeds_to_fail"]
    assert to_fail > 16
    assert f"about {to_fail} seeds (now 16) would decide FAIL" in r.reason_text
    assert "independent repeats per variant in all (now 1)" in r.reason_text
