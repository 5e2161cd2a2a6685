"""Issue 47 (items 1, 2, 4, 5): PASS and FAIL never rest on a range read off the sample; a
single seed never PASSes; thresholds off the metric's scale are refused; a metric leaning FAIL
is never let through by ``allow_inconclusive``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spanguard.exceptions import SuiteError
from spanguard_processor.fairness import GateConfig, MetricConfig, MetricResult, evaluate
from spanguard_processor.fairness.design.suite import parse_suite
from spanguard_processor.fairness.gate.decide import apply_gate
from spanguard_processor.fairness.gate.results import Evaluation, Verdict
from spanguard_processor.fairness.records import Observation
from spanguard_processor.traces.model import ProcessTrace
from spanguard_processor.traces.parts import ToolCall

from .conftest import FAST

GROUPS = ["man", "woman"]


def _suite(tools: np.ndarray) -> list[Observation]:
    """tools[s, g]: how many tool calls seed s's variant for group g makes."""
    return [
        Observation(
            id=f"s{s}::{name}",
            seed_id=f"s{s}",
            variant_id=f"s{s}::{name}",
            assignments={"gender": name},
            prompt=f"p{s}",
            response="ok",
            trace=ProcessTrace(
                escalated=False, tool_calls=tuple(ToolCall("kb") for _ in range(tools[s, g]))
            ),
        )
        for s in range(tools.shape[0])
        for g, name in enumerate(GROUPS)
    ]


def _tools(seeds: int, rng: np.random.Generator, women_extra: int = 0) -> np.ndarray:
    """Tool calls per (seed, group): the template's own count (0–2), every group alike, plus
    ``women_extra`` for group 1."""
    per_seed = rng.integers(0, 3, size=seeds)
    out = np.repeat(per_seed[:, None], 2, axis=1)
    out[:, 1] += women_extra
    return out


def _tool_count(seeds: int, tools: np.ndarray, max_difference: float | None) -> MetricResult:
    obs = _suite(tools)
    cfg = MetricConfig("tool_count_gap", 0.5, max_difference=max_difference)
    return evaluate(obs, [cfg], FAST, generated_at="t").results[0]


def test_agreeing_count_seeds_without_a_stated_range_are_inconclusive() -> None:
    # 40 seeds agree (0 of 40 discordant); the old bound took M from the sample's spread (2):
    # 0.072 × 2 < 0.5, PASS — and an app whose +10 lives in templates not drawn looks the same
    tools = _tools(40, np.random.default_rng(3))
    r = _tool_count(40, tools, None)
    assert r.verdict == Verdict.INCONCLUSIVE and r.reason == "no_stated_range"
    assert "max_difference" in r.reason_text
    assert r.confidence_interval is not None and r.confidence_interval[1] == float("inf")


def test_a_stated_range_lets_a_deterministic_fair_count_app_pass_on_40_seeds() -> None:
    tools = _tools(40, np.random.default_rng(3))
    r = _tool_count(40, tools, 3.0)
    assert r.verdict == Verdict.PASS, r.reason_text
    assert r.confidence_interval is not None
    assert r.confidence_interval[1] == pytest.approx((1 - 0.05 ** (1 / 40)) * 3.0)
    assert "stated range of 3" in r.reason_text
    # a wider statement is a weaker bound: 0.072 × 10 is not below 0.5
    wide = _tool_count(40, tools, 10.0)
    assert wide.verdict == Verdict.INCONCLUSIVE


def test_fail_s_exact_test_uses_the_stated_range_not_the_sample_s() -> None:
    # every one of 20 seeds: one extra tool call for women (d = 1 > τ 0.5); values 0..3, so
    # the sample's range was 3 and p = (3.5/4)^19 = 0.08, but with values 1..2 (range 1) the
    # old test gave (1.5/2)^19 = 0.004, FAIL, whatever a template not drawn does
    tools = np.tile(np.array([[1, 2]]), (20, 1))
    none = _tool_count(20, tools, None)
    assert none.verdict == Verdict.INCONCLUSIVE and none.reason == "no_stated_range"
    assert none.p_threshold == 1.0
    tight = _tool_count(20, tools, 1.0)
    assert tight.verdict == Verdict.FAIL
    assert tight.p_threshold == pytest.approx((1.5 / 2.0) ** 19)
    loose = _tool_count(20, tools, 10.0)
    assert loose.verdict != Verdict.FAIL
    assert loose.p_threshold == pytest.approx((10.5 / 11.0) ** 19)


def test_one_template_two_groups_never_passes() -> None:
    obs = _suite(np.array([[1, 1]]))
    cfgs = [MetricConfig("tool_count_gap", 1.0, max_difference=1.0)]
    cfgs.append(MetricConfig("escalation_parity", 1.0))
    for r in evaluate(obs, cfgs, FAST, generated_at="t").results:
        assert r.verdict == Verdict.INCONCLUSIVE, (r.metric, r.reason_text)
        assert "nothing can PASS" in r.reason_text


def _load(metric: str, threshold: object, **extra: object) -> MetricConfig:
    data = {
        "dataset": {
            "prompts": [{"id": "a", "prompt": "A {g} asks", "attributes": {"g": ["x", "y"]}}]
        },
        "metrics": [{"type": metric, "threshold": threshold, **extra}],
    }
    return parse_suite(data, "suite.yaml").metrics[0]


def test_a_rate_threshold_off_the_scale_names_the_likely_intent() -> None:
    with pytest.raises(SuiteError) as info:
        _load("tool_name_gap", 20)
    assert info.value.field == "metrics[0].threshold"
    assert "did you mean 0.2?" in str(info.value)
    for bad in (0, -0.1, 1.5, 250):
        with pytest.raises(SuiteError):
            _load("escalation_parity", bad)
    assert _load("escalation_parity", 1).threshold == 1.0


def test_count_thresholds_and_ranges_must_be_positive_finite() -> None:
    with pytest.raises(SuiteError) as info:
        _load("tool_count_gap", 0)
    assert info.value.field == "metrics[0].threshold"
    assert _load("tool_count_gap", 20).threshold == 20.0
    assert _load("plan_length_gap", 1, max_difference=4).max_difference == 4.0
    assert _load("plan_length_gap", 1).max_difference is None
    for bad in (0, -1, "3", True, float("inf")):
        with pytest.raises(SuiteError) as info:
            _load("plan_length_gap", 1, max_difference=bad)
        assert info.value.field == "metrics[0].max_difference"
        assert "largest per-seed difference" in str(info.value)


def _result(name: str, p: float) -> MetricResult:
    return MetricResult(
        metric=name,
        score=0.3,
        threshold=0.1,
        direction="lower",
        category="Agent",
        records=100,
        confidence_interval=(0.12, 0.45),
        p_value=p,
        p_threshold=p,
        details={},
        groups_with_data=2,
        seeds=50,
        p_method="test",
        mde=0.05,
    )


def test_an_interval_above_the_threshold_leans_fail_and_is_never_allowed() -> None:
    # one metric: the same data FAIL; with six more metrics, Holm p = 7 × 0.02 > 0.05: the
    # interval (unadjusted) still lies above τ, so the verdict says it leans FAIL
    cfg = GateConfig(allow_inconclusive=True)
    alone = apply_gate([_result("m", 0.02)], cfg)[0]
    assert alone.verdict == Verdict.FAIL
    many = apply_gate([_result("m", 0.02)] + [_result(f"o{i}", 0.9) for i in range(6)], cfg)
    m = next(r for r in many if r.metric == "m")
    assert m.verdict == Verdict.INCONCLUSIVE and m.reason == "leans_fail"
    assert "leans FAIL; not allowed" in m.reason_text and "Holm p = 0.14 " in m.reason_text
    ev = Evaluation("t", 0, tuple(many), (), cfg)
    assert not ev.passed and "m" in ev.failed_metrics
    # an INCONCLUSIVE that straddles the threshold is still let through
    straddle = replace(_result("s", 0.5), confidence_interval=(0.0, 0.45))
    ok = Evaluation("t", 0, tuple(apply_gate([straddle], cfg)), (), cfg)
    assert ok.passed


def _records(trace: dict[str, object], seeds: int = 40) -> list[Observation]:
    from spanguard_processor.fairness import observation_from_record

    return [
        observation_from_record(
            {
                "id": f"s{s}::{g}",
                "seed_id": f"s{s}",
                "prompt": "p",
                "assignments": {"gender": g},
                "response": "ok",
                "response_metadata": {"trace": trace},
            }
        )
        for s in range(seeds)
        for g in GROUPS
    ]


def test_explicit_negatives_in_a_record_s_trace_are_signal_and_absence_is_not() -> None:
    # a fair app whose every record states "no escalation, no tool call, no friction" and
    # nothing else: each metric has its signal, and the fair app PASSes
    metrics = [
        MetricConfig("escalation_parity", 0.1),
        MetricConfig("tool_count_gap", 0.5, max_difference=3.0),
        MetricConfig("friction_point_gap", 0.5, max_difference=3.0),
    ]
    stated = _records({"escalated": False, "tool_calls": [], "friction_points": []})
    for r in evaluate(stated, metrics, FAST, generated_at="t").results:
        assert r.verdict == Verdict.PASS, (r.metric, r.reason_text)
        assert r.signal_records == 80
    # the same records without those keys: zero because nothing was recorded
    silent = _records({})
    for r in evaluate(silent, metrics, FAST, generated_at="t").results:
        assert r.verdict == Verdict.NO_SIGNAL, (r.metric, r.reason_text)


def test_suite_plan_exits_2_on_a_rate_threshold_of_20(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from spanguard_processor.cli import cli

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "dataset:\n  prompts:\n    - {id: a, prompt: 'A {g} asks', attributes: {g: [x, y]}}\n"
        "metrics:\n  - type: tool_name_gap\n    threshold: 20\n"
    )
    result = CliRunner().invoke(cli, ["suite", "plan", str(suite)])
    assert result.exit_code == 2
    assert "metrics[0].threshold" in result.output and "did you mean 0.2?" in result.output


def test_suite_plan_says_what_a_count_without_a_stated_range_needs() -> None:
    from spanguard_processor.fairness.plan import plan_lines, plan_suite

    data = {
        "dataset": {
            "prompts": [
                {"id": f"p{i}", "prompt": "A {g} asks", "attributes": {"g": ["x", "y"]}}
                for i in range(40)
            ]
        },
        "metrics": [
            {"type": "tool_count_gap", "threshold": 0.5},
            {"type": "plan_length_gap", "threshold": 1, "max_difference": 4},
        ],
    }
    plan = plan_suite(parse_suite(data, "suite.yaml"))
    counted, stated = plan.metrics
    assert counted.deterministic_seeds is None
    assert stated.deterministic_seeds == 11  # n > ln 0.05 / ln(1 − 1/4)
    text = "\n".join(plan_lines(plan))
    assert "state max_difference" in text and "note: tool_count_gap" in text


def test_allow_inconclusive_does_not_let_a_metric_leaning_fail_through(
    tmp_path: Path, golden_records: list[dict[str, object]]
) -> None:
    # fairtrace's golden records: escalation_parity's point estimate (0.75) and interval
    # [0.24, 1] lie above 0.1, but the exact permutation test on 4 seeds does not reject
    import json

    from click.testing import CliRunner

    from spanguard_processor.cli import cli

    from .test_cli import _FAST, _golden_suite

    suite = _golden_suite(tmp_path, golden_records)  # type: ignore[arg-type]
    records = tmp_path / "records.json"
    records.write_text(json.dumps(golden_records))
    result = CliRunner().invoke(
        cli, ["fairness", str(suite), str(records), "--allow-inconclusive", *_FAST]
    )
    assert result.exit_code == 1, result.output
    assert "leans FAIL; not allowed" in result.output
    assert result.output.endswith(
        "fairness gate FAILED: escalation_parity (INCONCLUSIVE, leans FAIL)"
        "; 3 INCONCLUSIVE allowed by --allow-inconclusive: tool_use_parity, helpfulness_gap, "
        "refusal_gap\n"
    )
