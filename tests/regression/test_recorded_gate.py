"""The regression gate on recorded traffic of a stochastic agent (issue 46, task recstable).

Measured on main 04fcb6c (``bench/bench_regression_e2e.py --trials 100``): cases built from a
day of traffic of an unchanged agent with 4 % random escalations, that day as the baseline and
a second day of the same applications as the candidate, exited 0 in 22 of 100 trials. Two
causes, each reproduced here:

1. "held in every clean request" made a property stable (an assertion) in a cluster too small
   to have shown the random behaviour: 18 requests show no 4 % escalation about half the time,
   and the second day's escalation then fails ``escalated: false`` (``pass_rate``
   INCONCLUSIVE in 71 trials).
2. a case's recorded repeats are its cluster's *different* requests, compared between days as
   two samples, so a tool called by some of them (``verify_income``, by income) looked as
   uncertain as a coin even though every request did the same on both days (``tool use:
   verify_income`` INCONCLUSIVE in 19 trials).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spanguard_processor.regression.case import Check, Evidence, Property
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset
from spanguard_processor.regression.mine.properties import (
    log_miss_rates,
    settle_stability,
    variation,
)
from spanguard_processor.regression.run.outputs import outputs_from_traces
from spanguard_processor.regression.run.run import RunResult, load_cases, run_cases
from spanguard_processor.traces.model import ProcessTrace, ToolCall

from .loan_agent import applications
from .stochastic_loan import serve

NOT_ESCALATED = Check.of("escalated", value=False)
BUREAU = Check.of("tools_include", value=["credit_check"])


def _runs(plain: int, escalated: int) -> list[Evidence]:
    def run(escalate: bool) -> Evidence:
        process = ProcessTrace(tool_calls=(ToolCall("credit_check"),), escalated=escalate)
        return Evidence("Approved: the offer is in your account.", process, 800.0)

    return [run(False) for _ in range(plain)] + [run(True) for _ in range(escalated)]


def _prop(check: Check, held: int, of: int) -> Property:
    return Property(check, held, of, held == of)


def test_a_property_held_by_luck_in_a_small_cluster_is_a_rate_not_an_assertion() -> None:
    # ten clusters of 25 requests, each with one random escalation, and three more that showed
    # none: the log's rate is 10 / 458 = 2.2 %, at which 18 requests show none with P = 0.67,
    # 40 with P = 0.41 and 150 with P = 0.037 (below α = 0.05: "never" is shown)
    clusters = [[_prop(NOT_ESCALATED, 24, 25), _prop(BUREAU, 25, 25)] for _ in range(10)]
    clusters += [[_prop(NOT_ESCALATED, n, n), _prop(BUREAU, n, n)] for n in (18, 40, 150)]
    rates = log_miss_rates(
        [variation(_runs(24, 1)) for _ in range(10)]
        + [variation(_runs(n, 0)) for n in (18, 40, 150)]
    )
    assert rates["escalated"] == (10, 458)
    assert rates["tools_include=credit_check"] == (0, 458)
    settled = [settle_stability(c, rates) for c in clusters]
    escalated = {c[0].of: c[0].stable for c in settled[10:]}
    assert escalated == {18: False, 40: False, 150: True}
    # a tool the log never saw missed stays an assertion at any size
    assert all(c[1].stable for c in settled)
    # a rate never becomes an assertion
    assert not any(c[0].stable for c in settled[:10])


def _day(folder: Path, name: str, traces: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def _recorded_trial(folder: Path, seed: int) -> tuple[RunResult, RunResult, list[Any]]:
    """Cases built from day 1 of an unchanged stochastic agent; day 1 and day 2 (the same
    applications served again) scored as ``cases run --traces`` scores them."""
    apps = applications(240, seed=seed)
    day1 = serve(apps, seed=10_000 + seed, escalate_rate=0.04, retry_rate=0.03)[0]
    day2 = serve(apps, seed=20_000 + seed, escalate_rate=0.04, retry_rate=0.03)[0]
    log1, log2 = _day(folder, "day1", day1), _day(folder, "day2", day2)
    build_evalset([log1], BuildOptions(out=folder / "ev"))
    cases = load_cases(folder / "ev" / "cases.jsonl")
    runs = [run_cases(cases, outputs_from_traces([log])) for log in (log1, log2)]
    return runs[0], runs[1], cases


def test_a_behaviour_the_log_shows_varying_is_no_assertion_a_second_day_fails(
    tmp_path: Path,
) -> None:
    """The acceptance's design (day 1 builds the cases and is the baseline, day 2 the same
    applications served again). On main, seeds 1 and 2 asserted ``escalated`` in clusters of
    11–15 requests that showed no random escalation, and day 2 failed it (``pass_rate``
    INCONCLUSIVE on seed 2)."""
    for seed in range(3):
        folder = tmp_path / f"t{seed}"
        folder.mkdir()
        _base, cur, cases = _recorded_trial(folder, seed)
        for case in cases:
            assert "escalated" not in {c.type for c in case.trace_checks}, case.id
            for repeat in cur.repeats[case.id]:
                assert "escalated" not in repeat.failed_checks, case.id
        # a tool called on every request of a path is still asserted
        assert any("tools_include" in {c.type for c in case.trace_checks} for case in cases)
