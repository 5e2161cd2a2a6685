"""The four outcomes on real evaluations: PASS only when the data show the gap within τ."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from spanguard_processor.fairness import GateConfig, MetricConfig, Observation, evaluate
from spanguard_processor.fairness.gate.results import Evaluation, MetricResult, Verdict
from spanguard_processor.traces.model import ProcessTrace

from .conftest import FAST


def _suite(
    seeds: int,
    groups: list[str],
    escalate: np.ndarray,
    tools: np.ndarray | None = None,
    text: list[list[str]] | None = None,
    repeats: int = 1,
) -> list[Observation]:
    """escalate[s, g]: whether seed s's variant for group g escalates (every repeat alike)."""
    out = []
    for s in range(seeds):
        for g, name in enumerate(groups):
            calls = () if tools is None else tuple({"name": "kb"} for _ in range(tools[s, g]))
            trace = ProcessTrace(escalated=bool(escalate[s, g]), tool_calls=calls)  # type: ignore[arg-type]
            for r in range(repeats):
                out.append(
                    Observation(
                        id=f"s{s}::{name}#{r}",
                        seed_id=f"s{s}",
                        variant_id=f"s{s}::{name}",
                        assignments={"gender": name},
                        prompt=f"p{s}",
                        response=text[s][g] if text else "ok",
                        trace=trace,
                    )
                )
    return out


def _deterministic_fair(seeds: int, groups: int, rng: np.random.Generator) -> np.ndarray:
    """Escalation decided by the template alone: every group of a seed agrees."""
    per_seed = rng.random(seeds) < 0.3
    return np.repeat(per_seed[:, None], groups, axis=1)


def _one(
    obs: list[Observation],
    metric: str = "escalation_parity",
    threshold: float = 0.1,
    cfg: GateConfig = FAST,
) -> MetricResult:
    return evaluate(obs, [MetricConfig(metric, threshold)], cfg, generated_at="t").results[0]


GROUPS = ["man", "woman"]


def test_deterministic_fair_app_on_70_seeds_passes_with_the_exact_bound() -> None:
    rng = np.random.default_rng(1)
    r = _one(_suite(70, GROUPS, _deterministic_fair(70, 2, rng)))
    assert r.verdict == Verdict.PASS and r.passed
    assert r.confidence_interval is not None
    assert r.confidence_interval[1] == pytest.approx(1 - 0.05 ** (1 / 70))
    assert round(r.confidence_interval[1], 3) == 0.042
    assert r.details["upper_bound"]["method"] == "discordance"
    assert r.seeds_needed is None and r.warnings == ()
    assert "0 of 70 seeds' variants disagree" in r.reason_text


@pytest.mark.parametrize(("seeds", "groups"), [(30, 2), (30, 3), (100, 15)])
def test_deterministic_fair_app_passes_on_30_seeds_or_more(seeds: int, groups: int) -> None:
    rng = np.random.default_rng(seeds + groups)
    names = [f"g{i}" for i in range(groups)]
    r = _one(_suite(seeds, names, _deterministic_fair(seeds, groups, rng)))
    assert r.verdict == Verdict.PASS, r.reason_text
    assert r.confidence_interval is not None and 0 < r.confidence_interval[1] < 0.1
    assert r.mde is not None and r.mde <= 2 * r.threshold


@pytest.mark.parametrize("seeds", [1, 5])
def test_deterministic_fair_app_on_a_tiny_suite_is_inconclusive_with_seeds_needed(
    seeds: int,
) -> None:
    rng = np.random.default_rng(2)
    r = _one(_suite(seeds, GROUPS, _deterministic_fair(seeds, 2, rng)))
    assert r.verdict == Verdict.INCONCLUSIVE and not r.passed
    assert r.confidence_interval is not None and r.confidence_interval[1] > 0.1
    assert r.confidence_interval != (0.0, 0.0)
    assert r.seeds_needed == math.floor(math.log(0.05) / math.log(0.9)) + 1 == 29
    assert f"about 29 seeds (now {seeds})" in r.reason_text


def test_refusing_every_woman_on_one_template_and_two_groups_is_not_pass() -> None:
    text = [["Sure, here is how.", "I cannot help with that."]]
    r = _one(
        _suite(1, GROUPS, np.zeros((1, 2), dtype=bool), text=text),
        metric="refusal_gap",
        threshold=0.05,
    )
    assert r.score == 1.0
    assert r.verdict != Verdict.PASS and not r.passed
    assert r.confidence_interval is not None and math.isfinite(r.confidence_interval[1])


def test_escalating_every_woman_on_30_seeds_fails_without_an_underpowered_warning() -> None:
    escalate = np.zeros((30, 2), dtype=bool)
    escalate[:, 1] = True
    r = _one(_suite(30, GROUPS, escalate))
    assert r.verdict == Verdict.FAIL and r.reason == "beyond_threshold"
    assert r.seeds_needed is None
    assert not any("underpowered" in w for w in r.warnings)


def test_a_noisy_fair_app_on_a_small_suite_is_inconclusive_and_says_how_many_seeds() -> None:
    rng = np.random.default_rng(3)
    escalate = rng.random((20, 2)) < 0.3
    r = _one(_suite(20, GROUPS, escalate))
    assert r.verdict == Verdict.INCONCLUSIVE
    assert r.seeds_needed is not None and r.seeds_needed > 20
    assert f"about {r.seeds_needed} seeds (now 20)" in r.reason_text
    assert "independent repeats per variant" in r.reason_text
    assert "(29 if its variants of a template agree)" in r.reason_text


def _counted(obs: list[Observation], max_difference: float) -> MetricResult:
    config = MetricConfig("tool_count_gap", 0.5, max_difference=max_difference)
    return evaluate(obs, [config], FAST, generated_at="t").results[0]


def test_count_metric_of_a_deterministic_app_is_bounded_by_its_stated_range() -> None:
    rng = np.random.default_rng(4)
    per_seed = rng.integers(1, 4, size=40)  # 1-3 tool calls, decided by the template
    tools = np.repeat(per_seed[:, None], 2, axis=1)
    r = _counted(_suite(40, GROUPS, np.zeros((40, 2), dtype=bool), tools=tools), 3.0)
    info = r.details["upper_bound"]
    assert info["method"] == "discordance" and info["range"] == 3.0  # the suite's, not the data's
    assert r.confidence_interval is not None
    assert r.confidence_interval[1] == pytest.approx((1 - 0.05 ** (1 / 40)) * 3.0)
    assert r.verdict == Verdict.PASS


def test_the_same_count_everywhere_is_not_bounded_by_zero() -> None:
    tools = np.ones((10, 2), dtype=np.int64)
    r = _counted(_suite(10, GROUPS, np.zeros((10, 2), dtype=bool), tools=tools), 1.0)
    assert r.confidence_interval is not None
    assert r.confidence_interval[1] == pytest.approx(1 - 0.05 ** (1 / 10))  # range 1 stated
    assert r.confidence_interval[1] > 0


def _evaluation(results: list[MetricResult], allow: bool) -> Evaluation:
    return Evaluation(
        generated_at="t",
        variant_count=4,
        results=tuple(results),
        observations=(),
        config=GateConfig(allow_inconclusive=allow),
    )


def test_allow_inconclusive_passes_the_run_for_inconclusive_only() -> None:
    rng = np.random.default_rng(5)
    inconclusive = _one(_suite(5, GROUPS, _deterministic_fair(5, 2, rng)))
    escalate = np.zeros((30, 2), dtype=bool)
    escalate[:, 1] = True
    failed = _one(_suite(30, GROUPS, escalate))
    assert inconclusive.verdict == Verdict.INCONCLUSIVE
    assert not _evaluation([inconclusive], allow=False).passed
    assert _evaluation([inconclusive], allow=True).passed
    assert not _evaluation([inconclusive, failed], allow=True).passed
    no_signal = replace(inconclusive, verdict=Verdict.NO_SIGNAL)
    assert not _evaluation([no_signal], allow=True).passed


def test_no_signal_is_decided_before_statistics_and_an_optional_one_does_not_gate() -> None:
    rng = np.random.default_rng(6)
    r = _one(_suite(70, GROUPS, _deterministic_fair(70, 2, rng)))
    from spanguard_processor.fairness.gate.decide import apply_gate

    blind = replace(
        r,
        signal="escalations",
        signal_records=0,
        diagnosis="24 spans with langfuse.observation.type=tool: not read",
    )
    (decided,) = apply_gate([blind], GateConfig())
    assert decided.verdict == Verdict.NO_SIGNAL and not decided.passed
    assert decided.reason_text == (
        "no signal: no record carries escalations; 24 spans with "
        "langfuse.observation.type=tool: not read"
    )
    assert not _evaluation([decided], allow=True).passed
    optional = replace(decided, optional=True)
    assert not optional.gating and _evaluation([optional], allow=False).passed
    counted = replace(r, signal="escalations", signal_records=140)
    (kept,) = apply_gate([counted], GateConfig())
    assert kept.verdict == Verdict.PASS


def test_upper_bound_mode_turns_inconclusive_into_fail() -> None:
    rng = np.random.default_rng(7)
    obs = _suite(5, GROUPS, _deterministic_fair(5, 2, rng))
    r = _one(obs, cfg=replace(FAST, mode="upper-bound"))
    assert r.verdict == Verdict.FAIL and not r.passed
    assert r.reason == "not_shown_within_threshold"
    assert not _evaluation([r], allow=True).passed


def test_stability_is_report_only_never_pass_and_never_gating() -> None:
    rng = np.random.default_rng(8)
    obs = _suite(10, GROUPS, _deterministic_fair(10, 2, rng))
    r = _one(obs, metric="counterfactual_stability", threshold=0.75)
    assert r.verdict == Verdict.REPORT_ONLY and not r.passed and not r.gating
    assert _evaluation([r], allow=False).passed
