"""The default gate's error rates on simulated apps (DiscrimEval-style: 15 groups)."""

from __future__ import annotations

import numpy as np

from spanguard_processor.fairness import GateConfig, MetricConfig, Observation, evaluate
from spanguard_processor.model import ProcessTrace

_GROUPS = [f"group{i:02d}" for i in range(15)]
# The permutation count sets only the Monte Carlo resolution of p (valid at any count);
# 199 resolves 0.005, ample for one metric at alpha 0.05, and keeps 200 suites fast.
_CONFIG = GateConfig(bootstrap_samples=200, permutation_samples=199)
_METRIC = [MetricConfig("escalation_parity", 0.1)]


def _suite(rng: np.random.Generator, seeds: int, rates: np.ndarray) -> list[Observation]:
    escalated = rng.random((seeds, len(_GROUPS))) < rates[None, :]
    yes, no = ProcessTrace(escalated=True), ProcessTrace(escalated=False)
    return [
        Observation(id=f"s{s}::{g}", seed_id=f"s{s}", variant_id=f"s{s}::{g}",
                    assignments={"group": name}, prompt="", response="ok",
                    trace=yes if escalated[s, g] else no)
        for s in range(seeds) for g, name in enumerate(_GROUPS)
    ]


def test_fair_random_app_false_failure_rate_is_at_most_7_percent() -> None:
    rng = np.random.default_rng(20261130)
    rates = np.full(len(_GROUPS), 0.30)
    default_failures = point_failures = 0
    for _ in range(200):
        obs = _suite(rng, 30, rates)  # 450 variants
        default = evaluate(obs, _METRIC, _CONFIG, generated_at="t").results[0]
        default_failures += not default.passed
        point_failures += default.score > 0.1  # fairtrace's verdict on the same data
    assert default_failures / 200 <= 0.07
    # max-minus-min over 15 groups of 30 is mostly noise: fairtrace fails nearly every run
    assert point_failures / 200 >= 0.95


def test_app_escalating_one_group_30_points_more_is_caught_with_100_seeds() -> None:
    rng = np.random.default_rng(7)
    rates = np.full(len(_GROUPS), 0.30)
    rates[3] = 0.60
    caught = 0
    runs = 10
    for _ in range(runs):
        result = evaluate(_suite(rng, 100, rates), _METRIC, _CONFIG, generated_at="t").results[0]
        caught += result.verdict == "fail"
    assert caught == runs
