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
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from spanguard_processor.regression.case import Check, Evidence, Property
from spanguard_processor.regression.gate.runfile import RunFile, run_file
from spanguard_processor.regression.gate.verdict import MetricOutcome, decide
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset
from spanguard_processor.regression.mine.properties import (
    log_miss_rates,
    settle_stability,
    variation,
)
from spanguard_processor.regression.run.outputs import Outputs, outputs_from_traces
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
    # the answer class moves with escalation (a random escalation answers "refer"), even where
    # a mixed cluster showed no usual class to count the exception against
    approve = _prop(Check.of("answer_class", value="approve"), 18, 18)
    assert settle_stability([approve], {"answer_class": (0, 448), "escalated": (10, 458)}) == [
        Property(approve.check, 18, 18, False)
    ]
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


@pytest.mark.slow  # 3.6 s on a loaded run (load ~9)
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
        base, cur, cases = _recorded_trial(folder, seed)
        for case in cases:
            assert "escalated" not in {c.type for c in case.trace_checks}, case.id
            for repeat in cur.repeats[case.id]:
                assert "escalated" not in repeat.failed_checks, case.id
        verdict = decide(run_file(base, "day1.json"), run_file(cur, "day2.json"))
        (pass_rate,) = [m for m in verdict.metrics if m.metric == "pass_rate"]
        assert pass_rate.outcome is MetricOutcome.PASS, (seed, pass_rate.note)
        # a tool called on every request of a path is still asserted
        assert any("tools_include" in {c.type for c in case.trace_checks} for case in cases)


def _recorded_run(verify: dict[str, list[bool]], dropped: int = 0) -> RunResult:
    """Thirteen cases, each matched by ten recorded requests (different applications of one
    question); ``verify[case][j]``: request j went through ``verify_income`` (its income);
    ``dropped``: in that many cases, no request calls it any more."""
    from spanguard_processor.regression.case import Case

    cases, outputs = [], Outputs()
    for i, (case_id, calls) in enumerate(verify.items()):
        cases.append(Case.from_dict({"id": case_id, "input": f"application {i}", "checks": []}))
        for j, called in enumerate(calls):
            called = called and i >= dropped
            tools = [{"name": "credit_check"}] + ([{"name": "verify_income"}] if called else [])
            record = {"output": "Approved.", "input": f"application {i} from applicant {j}"}
            outputs.add(case_id, {**record, "trace": {"tool_calls": tools}})
    return run_cases(cases, outputs)


def _tool_use(base: RunFile, cur: RunFile) -> MetricOutcome:
    verdict = decide(base, cur)
    (metric,) = [m for m in verdict.metrics if m.metric == "tool use: verify_income"]
    return metric.outcome


def _unkeyed(run: RunFile) -> RunFile:
    """The same run with no request keys: each case compared as two samples."""
    repeats = {k: tuple(replace(r, request=None) for r in v) for k, v in run.repeats.items()}
    return replace(run, repeats=repeats)


def test_the_same_recorded_requests_are_paired_across_runs() -> None:
    verify = {f"case-{i:02d}": [j % 5 < 3 for j in range(10)] for i in range(13)}
    base = run_file(_recorded_run(verify), "day1.json")
    same = run_file(_recorded_run(verify), "day2.json")
    assert all(r.request for runs in base.repeats.values() for r in runs)
    # compared as two samples, 60 % of each case calling the tool is a coin: undecided
    assert _tool_use(_unkeyed(base), _unkeyed(same)) is MetricOutcome.INCONCLUSIVE
    # paired by request, nothing moved: shown within tolerance
    assert _tool_use(base, same) is MetricOutcome.PASS
    # and when no request calls it any more: shown worse
    dropped = run_file(_recorded_run(verify, dropped=13), "day2.json")
    assert _tool_use(base, dropped) is MetricOutcome.FAIL


def test_cases_run_says_when_it_scores_the_traffic_the_cases_were_built_from(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from spanguard_processor.cli import cli

    apps = applications(24, seed=1)
    log = _day(tmp_path, "day1", serve(apps, seed=3)[0])
    runner = CliRunner()
    built = runner.invoke(cli, ["cases", "build", str(log), "-o", str(tmp_path / "ev")])
    assert built.exit_code == 0, built.output
    cases = str(tmp_path / "ev" / "cases.jsonl")
    same = runner.invoke(cli, ["cases", "run", "--cases", cases, "--traces", str(log)])
    assert same.exit_code == 0, same.output
    assert "matched the very requests they were mined from" in same.output
    # traces of other requests (new ids), found by their question: no such note
    other = [{**t, "request_id": f"new-{i}"} for i, t in enumerate(serve(apps, seed=4)[0])]
    fresh = runner.invoke(
        cli, ["cases", "run", "--cases", cases, "--traces", str(_day(tmp_path, "day2", other))]
    )
    assert fresh.exit_code == 0, fresh.output
    assert "mined from" not in fresh.output


def test_random_escalations_that_make_escalation_the_main_path_are_no_assertion(
    tmp_path: Path,
) -> None:
    """Task insample (measured on lead 5205339, the bench's in-sample design exited 0 in 62 of
    100 trials): random escalations among approvals and declines made ``refer`` the most common
    answer class of a question, and the main path's case took every request outside its own
    explaining run — so the random escalations sat in it as its usual, the log showed
    escalation varying nowhere (``escalated`` 0 of 240), and the case asserted ``escalated:
    true`` on requests that the next day, approved, failed it. On seed 10, 8 random escalations
    sat in 5 cases asserting it."""
    from .stochastic_loan import decide as systematic

    apps = applications(240, seed=10)
    traces, outcomes = serve(apps, seed=10_010, escalate_rate=0.04, retry_rate=0.03)
    build_evalset([_day(tmp_path, "day1", traces)], BuildOptions(out=tmp_path / "ev"))
    cases = load_cases(tmp_path / "ev" / "cases.jsonl")
    request = {t["trace_id"]: t["request_id"] for t in traces}
    app = {a.request_id: a for a in apps}
    random = {r for r, outcome in outcomes.items() if outcome != systematic(app[r])}
    assert len(random) >= 5  # the traffic shows the noise this test is about
    for case in cases:
        members = {request.get(t, t) for t in (case.source_trace_id, *case.duplicate_trace_ids)}
        asserted = Check.of("escalated", value=True) in case.trace_checks
        assert not (asserted and members & random), (case.id, sorted(members & random))
    # the random escalations are counted where they are exceptions: escalation is a rate
    escalated = [p for c in cases for p in c.properties if p.check.type == "escalated"]
    assert any(p.held < p.of for p in escalated)
    assert not any(p.stable for p in escalated)
