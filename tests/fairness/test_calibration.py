"""The default gate's error rates on simulated apps (DiscrimEval-style: 15 groups).

The acceptance figures (hundreds of suites per design) are in bench/bench_calibration.py; these
tests pin the behaviours that were wrong and stay fast.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from spanguard_processor.fairness import GateConfig, MetricConfig, Observation, evaluate
from spanguard_processor.traces.model import ProcessTrace

_GROUPS = [f"group{i:02d}" for i in range(15)]
# The permutation count sets only the Monte Carlo resolution of p (valid at any count);
# 199 resolves 0.005, ample for one metric at alpha 0.05, and keeps 200 suites fast.
_CONFIG = GateConfig(bootstrap_samples=200, permutation_samples=199)
_METRIC = [MetricConfig("escalation_parity", 0.1)]


# each record states its escalation, as a fairtrace record's trace does ("escalated": false
# is recorded): an app that never escalates still carries the metric's signal
_STATED = frozenset({"escalated"})


def _suite(
    rng: np.random.Generator,
    seeds: int,
    rates: np.ndarray,
    repeats: int = 1,
    identical: bool = True,
    groups: list[str] = _GROUPS,
) -> list[Observation]:
    draws = 1 if identical else repeats
    escalated = rng.random((draws, seeds, len(groups))) < rates[None, None, :]
    yes, no = ProcessTrace(escalated=True), ProcessTrace(escalated=False)
    return [
        Observation(
            id=f"s{s}::{g}#{r}",
            seed_id=f"s{s}",
            variant_id=f"s{s}::{g}",
            assignments={"group": name},
            prompt="",
            response="ok",
            trace=yes if escalated[0 if identical else r, s, g] else no,
            stated=_STATED,
        )
        for s in range(seeds)
        for g, name in enumerate(groups)
        for r in range(repeats)
    ]


@pytest.mark.slow
def test_fair_random_app_false_failure_rate_is_at_most_7_percent() -> None:
    rng = np.random.default_rng(20261130)
    rates = np.full(len(_GROUPS), 0.30)
    default_failures = point_failures = 0
    for _ in range(200):
        obs = _suite(rng, 30, rates)  # 450 variants
        default = evaluate(obs, _METRIC, _CONFIG, generated_at="t").results[0]
        default_failures += default.verdict == "fail"
        point_failures += default.score > 0.1  # fairtrace's verdict on the same data
    assert default_failures / 200 <= 0.07
    # max-minus-min over 15 groups of 30 is mostly noise: fairtrace fails nearly every run
    assert point_failures / 200 >= 0.95


@pytest.mark.slow  # ten suites evaluated twice, 3.3 s on a loaded run (load ~9)
def test_identical_repeats_add_no_evidence() -> None:
    # A fair app answering identically on every repeat (temperature 0, a cache): three copies
    # of each answer must give exactly the statistics of one. Counting them as independent
    # failed 87 of 100 such suites of 30 seeds x 15 groups.
    rng = np.random.default_rng(3)
    rates = np.full(len(_GROUPS), 0.30)
    failures = 0
    for _ in range(10):
        state = rng.bit_generator.state
        once = evaluate(_suite(rng, 30, rates), _METRIC, _CONFIG, generated_at="t").results[0]
        rng.bit_generator.state = state
        thrice = evaluate(
            _suite(rng, 30, rates, repeats=3), _METRIC, _CONFIG, generated_at="t"
        ).results[0]
        assert thrice.records == 3 * once.records and thrice.units == once.units == 450
        assert thrice.confidence_interval == once.confidence_interval
        assert (thrice.p_value, thrice.p_threshold, thrice.mde) == (
            once.p_value,
            once.p_threshold,
            once.mde,
        )
        failures += thrice.verdict == "fail"
    assert failures <= 1


def test_independent_repeats_narrow_the_interval() -> None:
    rng = np.random.default_rng(4)
    rates = np.full(len(_GROUPS), 0.30)
    one = evaluate(_suite(rng, 30, rates), _METRIC, _CONFIG, generated_at="t").results[0]
    five = evaluate(
        _suite(rng, 30, rates, repeats=5, identical=False), _METRIC, _CONFIG, generated_at="t"
    ).results[0]
    assert one.confidence_interval is not None and five.confidence_interval is not None
    assert five.confidence_interval[1] < 0.75 * one.confidence_interval[1]
    assert five.mde is not None and one.mde is not None and five.mde < 0.75 * one.mde


def test_a_true_gap_under_the_threshold_does_not_fail_on_a_large_suite() -> None:
    # gap 0.08 against threshold 0.10 on 1,000 seeds x 6 groups: testing "gap = 0" failed
    # 6 of these 8 suites; the gate tests "gap <= threshold"
    rng = np.random.default_rng(5)
    groups = _GROUPS[:6]
    rates = np.array([0.30, 0.30, 0.30, 0.38, 0.38, 0.38])
    failures = 0
    for _ in range(8):
        r = evaluate(
            _suite(rng, 1000, rates, groups=groups), _METRIC, _CONFIG, generated_at="t"
        ).results[0]
        failures += r.verdict == "fail"
        assert r.p_value is not None and r.p_threshold is not None
        assert r.p_threshold > r.p_value  # a difference exists; past the threshold it is not
    assert failures <= 1


def test_app_escalating_one_group_40_points_more_is_caught_with_100_seeds() -> None:
    rng = np.random.default_rng(7)
    rates = np.full(len(_GROUPS), 0.30)
    rates[3] = 0.70
    caught = 0
    runs = 10
    for _ in range(runs):
        result = evaluate(_suite(rng, 100, rates), _METRIC, _CONFIG, generated_at="t").results[0]
        caught += result.verdict == "fail"
        assert result.reason == "beyond_threshold", result.reason_text
        assert result.reason_text.startswith("beyond threshold: interval above 0.1, Holm p = ")
    assert caught == runs


def test_a_deterministic_gap_at_the_threshold_passes_at_most_alpha_of_the_time() -> None:
    # 70 seeds x 2 groups, each seed's variants agree except where the app escalates the
    # woman alone: a true gap of exactly tau = 0.1 makes k ~ Binomial(70, 0.1) seeds
    # discordant, and the verdict depends on k alone, so P(PASS | gap = tau) is a sum
    from scipy.stats import binom

    groups = ["man", "woman"]
    pass_probability = 0.0
    verdicts = []
    for k in range(0, 16):
        rates = np.zeros(2)
        obs = _suite(np.random.default_rng(0), 70, rates, groups=groups)
        obs = [
            replace(o, trace=ProcessTrace(escalated=True))
            if o.assignments["group"] == "woman" and int(o.seed_id[1:]) < k
            else o
            for o in obs
        ]
        result = evaluate(obs, _METRIC, _CONFIG, generated_at="t").results[0]
        verdicts.append(result.verdict)
        pass_probability += binom.pmf(k, 70, 0.1) * (result.verdict == "pass")
    assert verdicts[0] == "pass" and verdicts[-1] != "pass"
    assert pass_probability <= 0.05


def test_a_noisy_fair_app_on_a_design_with_mde_at_most_half_the_threshold_passes() -> None:
    from spanguard_processor.fairness.stats.power import design_mde

    mde = design_mde(3000, 2, 1, "rate", 0.1)
    assert mde is not None and mde <= 0.05
    rng = np.random.default_rng(9)
    verdicts = [
        evaluate(
            _suite(rng, 3000, np.full(2, 0.3), groups=_GROUPS[:2]),
            _METRIC,
            _CONFIG,
            generated_at="t",
        )
        .results[0]
        .verdict
        for _ in range(3)
    ]
    assert verdicts == ["pass"] * 3
