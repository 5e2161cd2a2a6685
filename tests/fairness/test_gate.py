"""Gate modes on hand-made results: default (threshold and Holm), point, upper-bound."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from spanguard.exceptions import ConfigError
from spanguard_processor.fairness import GateConfig, MetricResult
from spanguard_processor.fairness.gate.decide import apply_gate


def _result(
    name: str,
    score: float,
    p: float | None,
    ci: tuple[float, float] | None,
    threshold: float = 0.1,
    direction: str = "lower",
) -> MetricResult:
    return MetricResult(
        metric=name,
        score=score,
        threshold=threshold,
        direction=direction,
        category="Agent",
        records=100,
        confidence_interval=ci,
        p_value=p,
        details={},
        groups_with_data=2,
        seeds=50,
        p_method="test",
        mde=0.05,
    )


RESULTS = [
    _result("big_and_real", 0.30, 0.001, (0.20, 0.40)),
    _result("big_but_noise", 0.30, 0.20, (0.05, 0.55)),
    _result("small_uncertain", 0.05, 0.30, (0.00, 0.15)),
    _result("small_and_sure", 0.02, 0.60, (0.00, 0.05)),
    _result("stable", 0.80, None, (0.70, 0.90), threshold=0.75, direction="higher"),
]


def _verdicts(mode: str) -> dict[str, str]:
    return {r.metric: str(r.verdict) for r in apply_gate(RESULTS, GateConfig(mode=mode))}  # type: ignore[arg-type]


def test_default_mode_passes_only_what_the_upper_bound_shows_and_fails_what_the_test_shows() -> (
    None
):
    assert _verdicts("default") == {
        "big_and_real": "fail",
        "big_but_noise": "inconclusive",
        "small_uncertain": "inconclusive",
        "small_and_sure": "pass",
        "stable": "report_only",
    }
    passed = {r.metric: r.passed for r in apply_gate(RESULTS, GateConfig())}
    assert passed == {
        "big_and_real": False,
        "big_but_noise": False,
        "small_uncertain": False,
        "small_and_sure": True,
        "stable": False,
    }


def test_point_mode_is_fairtraces_verdict() -> None:
    assert _verdicts("point") == {
        "big_and_real": "fail",
        "big_but_noise": "fail",
        "small_uncertain": "pass",
        "small_and_sure": "pass",
        "stable": "pass",
    }


def test_upper_bound_mode_counts_inconclusive_as_fail() -> None:
    assert _verdicts("upper-bound") == {
        "big_and_real": "fail",
        "big_but_noise": "fail",
        "small_uncertain": "fail",
        "small_and_sure": "pass",
        "stable": "report_only",
    }


def test_stability_is_report_only_except_in_point_mode() -> None:
    low = _result(
        "counterfactual_stability", 0.50, None, (0.40, 0.60), threshold=0.75, direction="higher"
    )
    for mode in ("default", "upper-bound"):
        (result,) = apply_gate([low], GateConfig(mode=mode))  # type: ignore[arg-type]
        assert result.verdict == "report_only" and result.reason == "report_only"
        assert not result.passed and not result.gating
        assert result.reason_text.startswith("report-only: no noise model for stability")
    (result,) = apply_gate([low], GateConfig(mode="point"))
    assert not result.passed and result.verdict == "fail"


def test_holm_adjusts_across_metrics_and_results_sort_failed_first() -> None:
    results = apply_gate(RESULTS, GateConfig())
    assert [r.verdict for r in results] == [
        "fail",
        "inconclusive",
        "inconclusive",
        "pass",
        "report_only",
    ]
    by_name = {r.metric: r for r in results}
    assert by_name["big_and_real"].p_holm == pytest.approx(0.004)
    assert by_name["big_but_noise"].p_holm == pytest.approx(0.6)
    assert by_name["stable"].p_holm is None
    assert by_name["big_but_noise"].reason_text.startswith(
        "inconclusive: the gap is above the threshold but within noise (upper bound 0.55"
    )


def test_fewer_than_two_groups_is_inconclusive_and_fails_only_in_upper_bound_mode() -> None:
    lonely = replace(RESULTS[3], groups_with_data=1, units=50, seeds_needed=29)
    for mode in ("default", "point"):
        (result,) = apply_gate([lonely], GateConfig(mode=mode))  # type: ignore[arg-type]
        assert result.verdict == "inconclusive" and result.reason == "insufficient_data"
        assert not result.passed and result.seeds_needed == 29
    (result,) = apply_gate([lonely], GateConfig(mode="upper-bound"))
    assert result.verdict == "fail" and not result.passed


def test_no_record_with_a_value_is_no_signal_in_every_mode() -> None:
    empty = replace(RESULTS[3], groups_with_data=0, units=0, confidence_interval=None)
    for mode in ("default", "point", "upper-bound"):
        (result,) = apply_gate([empty], GateConfig(mode=mode))  # type: ignore[arg-type]
        assert result.verdict == "no_signal" and not result.passed


def test_a_decisive_fail_carries_no_underpowered_warning_but_an_inconclusive_does() -> None:
    weak = [replace(RESULTS[0], mde=0.5), replace(RESULTS[1], mde=0.5)]
    by_name = {r.metric: r for r in apply_gate(weak, GateConfig())}
    assert by_name["big_and_real"].verdict == "fail"
    assert by_name["big_and_real"].warnings == ()
    assert (
        by_name["big_but_noise"]
        .warnings[0]
        .startswith("underpowered: this suite tells apart from zero only gaps of 0.5")
    )


def test_bad_gate_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="mode: must be one of default, point, upper-bound"):
        GateConfig(mode="strict")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="alpha"):
        GateConfig(alpha=1.5)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"mode": "strict"}, "mode"),
        ({"alpha": 0.0}, "alpha"),
        ({"level": 1.0}, "level"),
        ({"min_coverage": 1.5}, "min_coverage"),
        ({"bootstrap_samples": -1}, "bootstrap_samples"),
        ({"permutation_samples": -1}, "permutation_samples"),
    ],
)
def test_gate_config_errors_name_its_own_fields(settings: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        GateConfig(**settings)  # type: ignore[arg-type]
    assert caught.value.parameter == field
    assert field in {f.name for f in dataclasses.fields(GateConfig)}


def test_the_commands_name_the_option_that_set_a_bad_gate_field() -> None:
    from spanguard_processor.cli._evaluation import gate_config

    with pytest.raises(ConfigError) as caught:
        gate_config("default", 0.05, -1, 999, 0)
    assert caught.value.parameter == "bootstrap"
    with pytest.raises(ConfigError) as caught:
        gate_config("strict", 0.05, 10, 999, 0)
    assert caught.value.parameter == "gate"
