"""A rate's contrast weighs each case by its repeats (issue 46; docs/regression.md, "Four
outcomes per metric"): a case of one request moves a rate by one request's worth, not by
1/cases. Measured before: the in-sample unchanged agent of bench_regression_e2e.py was
INCONCLUSIVE in 3 of 100 trials, each driven by a one-request case whose day-2 request
escalated or retried at random (held 1/1 → 0/1)."""

from __future__ import annotations

import random
import re

import numpy as np

from spanguard_processor.regression.case import Case, Evidence
from spanguard_processor.regression.gate.paired import Scale, case_weights, paired_bound
from spanguard_processor.regression.gate.runfile import RunFile, run_file
from spanguard_processor.regression.gate.verdict import MetricOutcome, decide
from spanguard_processor.regression.run.run import score_repeats
from spanguard_processor.traces.model import ProcessTrace, ToolCall

TOOLS = ("credit_bureau", "income_check")


def _case(i: int) -> Case:
    return Case.from_dict(
        {
            "id": f"case-{i:02d}",
            "input": f"application {i}",
            "checks": [{"type": "not_fallback"}],
            "trace_checks": [{"type": "tools_include", "value": list(TOOLS)}],
            "properties": [
                {
                    "check": {"type": "escalated", "value": False},
                    "held": 39,
                    "of": 40,
                    "stable": False,
                }
            ],
        }
    )


def _call(rng: random.Random, escalated: bool | None = None) -> Evidence:
    process = ProcessTrace(
        tool_calls=tuple(ToolCall(t) for t in TOOLS),
        plan_steps=("a", "b", "c"),
        escalated=rng.random() < 0.04 if escalated is None else escalated,
    )
    return Evidence("Your loan is approved.", process, 500.0, 0.001)


def _runs(seed: int) -> tuple[list[Case], dict[str, list[Evidence]], dict[str, list[Evidence]]]:
    """Twelve cases: eleven of 40 requests a side at a 4 % escalation, and one case of a
    single request that did not escalate in the baseline and escalated now."""
    rng = random.Random(seed)
    cases = [_case(i) for i in range(12)]
    base = {c.id: [_call(rng) for _ in range(40)] for c in cases[1:]}
    cur = {c.id: [_call(rng) for _ in range(40)] for c in cases[1:]}
    base[cases[0].id] = [_call(rng, escalated=False)]
    cur[cases[0].id] = [_call(rng, escalated=True)]
    return cases, base, cur


def test_a_one_request_case_that_escalated_at_random_does_not_hold_the_gate() -> None:
    for seed in range(5):
        cases, base, cur = _runs(seed)
        verdict = decide(run_file(score_repeats(cases, base)), run_file(score_repeats(cases, cur)))
        by_name = {m.metric: m for m in verdict.metrics}
        for name in ("property: escalated", "escalation_rate"):
            m = by_name[name]
            # equally weighted (main d048054), the one case moved the mean over cases to
            # +6…+10 pts (tolerance 10) and the bound to +22…+25 pts: INCONCLUSIVE on every seed
            assert m.outcome is MetricOutcome.PASS, (seed, m)
            assert m.bound is not None and m.bound.estimate < 0.05, (seed, m.bound)
        assert verdict.passed, seed


def test_the_weighted_estimate_is_the_request_level_contrast() -> None:
    # unpaired, equal repeats a side: the case's weight is its repeats
    assert case_weights([4, 1], [4, 1]) == [4.0, 1.0]
    # unpaired, unequal: the harmonic mean 2·n·n'/(n + n') (the Mantel–Haenszel weight)
    assert case_weights([8], [24]) == [12.0]
    # paired: the requests both runs hold
    assert case_weights([5], [5]) == [5.0]
    changes = np.array([0.0, 1.0])
    b = paired_bound(changes, 0.1, 0.05, Scale.RATE, weights=np.array([40.0, 1.0]))
    assert b is not None and abs(b.estimate - 1 / 41) < 1e-12
    # equal weights: the mean over cases, as before
    even = paired_bound(changes, 0.1, 0.05, Scale.RATE, weights=np.array([3.0, 3.0]))
    assert even is not None and even.estimate == 0.5


def test_a_planted_escalation_in_the_big_cases_still_fails() -> None:
    """The weighting does not buy PASSes: every 40-request case escalating 25 % more is FAIL."""
    cases, base, cur = _runs(7)
    rng = random.Random(70)
    for c in cases[1:]:
        cur[c.id] = [_call(rng, escalated=rng.random() < 0.29) for _ in range(40)]
    verdict = decide(run_file(score_repeats(cases, base)), run_file(score_repeats(cases, cur)))
    esc = next(m for m in verdict.metrics if m.metric == "escalation_rate")
    assert esc.outcome is MetricOutcome.FAIL, esc


def _replay(cases: list[Case], k: int, seed: int, extra_tool: set[str] | None = None) -> RunFile:
    rng = random.Random(seed)
    runs = {c.id: [_call(rng) for _ in range(k)] for c in cases}
    for case_id in extra_tool or set():
        runs[case_id] = [
            Evidence(e.output, ProcessTrace(tool_calls=(*e.process.tool_calls, ToolCall("audit"))))
            for e in runs[case_id]
            if e.process is not None
        ]
    return run_file(score_repeats(cases, runs))


def _advice(note: str) -> tuple[int, int]:
    found = re.fullmatch(
        r"would decide with about (\d+) cases or about (\d+) repeats per case",
        note,
    )
    assert found, note
    return int(found[1]), int(found[2])


def test_advice_offers_cases_or_repeats_and_both_decide() -> None:
    """A 6-case replay at K = 8: pass_rate (0 of 48 repeats failing) is INCONCLUSIVE. Main
    d048054 said "would decide with about 155 cases" (the worst-case spread), nothing on
    repeats. The advice now offers both, and both figures are what the gate then does."""
    cases = [_case(i) for i in range(6)]
    verdict = decide(_replay(cases, 8, 1), _replay(cases, 8, 2))
    pass_rate = next(m for m in verdict.metrics if m.metric == "pass_rate")
    assert pass_rate.outcome is MetricOutcome.INCONCLUSIVE, pass_rate
    n, k = _advice(pass_rate.note)
    assert n < 20 and k < 20, pass_rate.note
    for more_cases, repeats in ((n, 8), (6, k)):
        bigger = [_case(i) for i in range(more_cases)]
        v = decide(_replay(bigger, repeats, 3), _replay(bigger, repeats, 4))
        assert next(m for m in v.metrics if m.metric == "pass_rate").outcome is MetricOutcome.PASS
    # one fewer repeat per case does not decide: the figure is the smallest
    v = decide(_replay(cases, k - 1, 3), _replay(cases, k - 1, 4))
    assert next(m for m in v.metrics if m.metric == "pass_rate").outcome is not MetricOutcome.PASS


def test_advice_says_when_repeats_cannot_decide() -> None:
    """A count whose cases differ among themselves and not within (4 of 12 cases call one
    more tool on every repeat): more repeats shrink nothing, only more cases would."""
    bound = paired_bound(
        np.array([1.0] * 4 + [0.0] * 8), 0.5, 0.05, Scale.COUNT, within_var=0.0, repeats=2.0
    )
    assert bound is not None and bound.repeats_needed is None and bound.cases_needed is not None
    cases = [_case(i) for i in range(12)]
    moved = {c.id for c in cases[:4]}
    verdict = decide(_replay(cases, 2, 5), _replay(cases, 2, 6, moved))
    count = next(m for m in verdict.metrics if m.metric == "tool_count")
    assert count.outcome is MetricOutcome.INCONCLUSIVE, count
    assert "more repeats per case would not" in count.note, count.note
