"""``check`` on run files with repeats: four outcomes per metric, evidence, plan (issue 46).

The agent is a small stochastic one written here (random escalations, tool retries, varied
wording, latency jitter); its cases are hand-written in contract C1's shape.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.regression.case import Case, Evidence
from spanguard_processor.regression.gate.paired import (
    PooledCounts,
    Scale,
    fisher_worse_p,
    paired_bound,
    tarone_holm,
)
from spanguard_processor.regression.gate.plan import plan_replay
from spanguard_processor.regression.gate.runfile import run_file
from spanguard_processor.regression.gate.verdict import (
    CaseChange,
    MetricOutcome,
    MetricVerdict,
    RegressionOptions,
    RegressionVerdict,
    decide,
)
from spanguard_processor.regression.report.verdict_report import verdict_summary
from spanguard_processor.regression.run.repeats import AppFailure
from spanguard_processor.regression.run.run import RunResult, score_repeats
from spanguard_processor.traces.model import ProcessTrace, ToolCall

CASES = 12
PATHS = {"approve": ("credit_bureau", "income_check"), "decline": ("credit_bureau",)}


def _cases(own_value: bool = False, timing: bool = False) -> list[Case]:
    """``own_value``: each case also carries a ``min_chars`` property whose value is its own
    (as ``cases build`` derives it from each case's reference answer); ``timing``: a
    ``max_latency_ms`` property (a timing limit mined from the traffic's latencies)."""
    slow = {"check": {"type": "max_latency_ms", "value": 700}, "held": 19, "of": 20, "stable": True}
    out = []
    for i in range(CASES):
        own = {"check": {"type": "min_chars", "value": 2 + i}, "held": 20, "of": 20, "stable": True}
        path = "approve" if i % 2 == 0 else "decline"
        tools = list(PATHS[path])
        out.append(
            Case.from_dict(
                {
                    "id": f"case-{i:02d}-{path}",
                    "input": f"application {i}",
                    "checks": [{"type": "not_fallback"}, {"type": "contains", "value": [path]}],
                    "trace_checks": [{"type": "tools_include", "value": tools}],
                    "properties": [
                        {
                            "check": {"type": "tools_include", "value": tools},
                            "held": 20,
                            "of": 20,
                            "stable": True,
                        },
                        {
                            "check": {"type": "escalated", "value": False},
                            "held": 19,
                            "of": 20,
                            "stable": False,
                        },
                        *([own] if own_value else []),
                        *([slow] if timing else []),
                    ],
                }
            )
        )
    return out


def _call(case: Case, rng: random.Random, change: str | None, load: float) -> Evidence:
    path = case.id.rsplit("-", 1)[1]
    tools = list(PATHS[path])
    if change == "drop_tool" and case.id == "case-00-approve":
        tools.remove("income_check")
    if rng.random() < 0.03:
        tools.insert(0, tools[0])  # a retry
    text = rng.choice(("Loan {}.", "Your loan is {}.", "Decision: {}, thanks."))
    process = ProcessTrace(
        tool_calls=tuple(ToolCall(t) for t in tools),
        plan_steps=tuple("s" for _ in range(len(tools) + 1)),
        escalated=rng.random() < 0.04,
    )
    latency = 500.0 * load * math.exp(rng.gauss(0, 0.25))
    return Evidence(text.format(path + "d" if path == "approve" else path), process, latency, 0.001)


def _run(
    seed: int,
    change: str | None = None,
    load: float = 1.0,
    k: int = 16,
    own_value: bool = False,
    timing: bool = False,
    ms: float = 500.0,
) -> RunResult:
    rng = random.Random(seed)
    cases = _cases(own_value, timing)
    runs = {c.id: [_call(c, rng, change, load) for _ in range(k)] for c in cases}
    if ms != 500.0:  # the same calls, at another scale of latency
        runs = {
            case: [replace(e, latency_ms=(e.latency_ms or 0.0) * ms / 500.0) for e in calls]
            for case, calls in runs.items()
        }
    return score_repeats(cases, runs)


def test_sub_millisecond_latency_jitter_is_not_a_regression() -> None:
    """The demo's requests take about a millisecond: one case's median moving 0.4 → 1.1 ms is
    the machine's scheduling, not the agent (measured: the demo's candidate FAILed latency on
    it). Below the 10 ms floor a latency is read as the floor, as the trace2eval rules do."""
    base = _run(1, ms=0.4)
    cur = _run(2, ms=0.4)
    slow = dict(cur.repeats)
    first = next(iter(slow))
    slow[first] = tuple(replace(r, latency_ms=(r.latency_ms or 0.0) * 2.8) for r in slow[first])
    current = run_file(RunResult(cur.metrics, cur.outcomes, slow, cur.properties))
    verdict = decide(run_file(base), current)
    latency = next(m for m in verdict.metrics if m.metric == "latency")
    assert latency.outcome is not MetricOutcome.FAIL, latency
    assert verdict.passed, [(m.metric, m.outcome, m.note) for m in verdict.blocking()]
    # the same move at 400 ms → 1.1 s is a regression
    base, cur = _run(1, ms=400.0), _run(2, ms=400.0)
    slow = dict(cur.repeats)
    slow[first] = tuple(replace(r, latency_ms=(r.latency_ms or 0.0) * 2.8) for r in slow[first])
    verdict = decide(
        run_file(base), run_file(RunResult(cur.metrics, cur.outcomes, slow, cur.properties))
    )
    assert next(m for m in verdict.metrics if m.metric == "latency").outcome is MetricOutcome.FAIL


def test_min_latency_change_ms_sets_the_latency_floor_of_the_repeats_gate(tmp_path: Path) -> None:
    """Measured on main 04fcb6c: ``check --min-latency-change-ms`` reached the trace2eval rules
    only; the repeats gate kept its 10 ms floor whatever the flag said, so one case moving
    400 ms → 1.1 s FAILed latency even with the flag at 2000."""
    base, cur = _run(1, ms=400.0), _run(2, ms=400.0)
    slow = dict(cur.repeats)
    first = next(iter(slow))
    slow[first] = tuple(replace(r, latency_ms=(r.latency_ms or 0.0) * 2.8) for r in slow[first])
    paths = tmp_path / "base.json", tmp_path / "cur.json"
    paths[0].write_text(base.to_json(), encoding="utf-8")
    current = RunResult(cur.metrics, cur.outcomes, slow, cur.properties)
    paths[1].write_text(current.to_json(), encoding="utf-8")
    args = ["check", "--baseline", str(paths[0]), "--current", str(paths[1])]
    default = CliRunner().invoke(cli, args)
    assert default.exit_code == 1 and "latency" in default.output, default.output
    floor = CliRunner().invoke(cli, [*args, "--min-latency-change-ms", "2000"])
    assert floor.exit_code == 0, floor.output
    options = RegressionOptions(min_latency_ms=2000.0)
    verdict = decide(run_file(base), run_file(current), options)
    assert next(m for m in verdict.metrics if m.metric == "latency").outcome is MetricOutcome.PASS


def test_an_unchanged_stochastic_agent_passes_even_against_a_loaded_baseline() -> None:
    verdict = decide(run_file(_run(1, load=1.5)), run_file(_run(2)))
    assert verdict.passed, [(m.metric, m.outcome, m.note) for m in verdict.metrics]
    overall = next(m for m in verdict.metrics if m.metric == "latency (overall)")
    assert overall.outcome is MetricOutcome.REPORT_ONLY and not overall.gating
    # measured on the same machine, the same 1.5× is a regression
    same = decide(
        run_file(_run(2)), run_file(_run(1, load=1.5)), RegressionOptions(same_machine=True)
    )
    assert {m.metric for m in same.blocking()} == {"latency (overall)"}


def test_a_property_whose_value_is_each_cases_own_is_one_metric_over_all_cases() -> None:
    """Measured end to end (bench/bench_regression_e2e.py): cases built from traffic carry a
    ``min_chars`` of their own reference's length, and each value was a metric of one or two
    cases, INCONCLUSIVE at any default replay size: the unchanged agent passed 0 of 100."""
    verdict = decide(run_file(_run(1, own_value=True)), run_file(_run(2, own_value=True)))
    assert verdict.passed, [(m.metric, m.outcome, m.note) for m in verdict.blocking()]
    (own,) = [m for m in verdict.metrics if m.metric.startswith("property: min_chars")]
    assert (own.metric, own.cases) == ("property: min_chars", CASES)
    dropped = decide(run_file(_run(1)), run_file(_run(2, change="drop_tool")))
    tools = next(m for m in dropped.metrics if m.metric == "property: tools_include")
    assert tools.outcome is MetricOutcome.FAIL
    assert tools.evidence[0] == (
        "case-00-approve tools_include=credit_bureau,income_check held 16/16 → 0/16"
    )


def test_a_timing_property_does_not_gate_as_a_rate() -> None:
    """A ``max_latency_ms`` property is a timing limit, machine-dependent like the ones
    ``pass_rate`` leaves out: measured end to end, one case carrying one made a metric of one
    case, INCONCLUSIVE in 11 of 30 trials of the unchanged agent; and every case carrying one
    fails on a loaded machine. ``latency`` gates timing, robust to load; the property is shown."""
    verdict = decide(run_file(_run(1, timing=True)), run_file(_run(2, load=1.5, timing=True)))
    assert verdict.passed, [(m.metric, m.outcome, m.note) for m in verdict.blocking()]
    (timing,) = [m for m in verdict.metrics if m.metric == "property: max_latency_ms"]
    assert (timing.outcome, timing.gating) == (MetricOutcome.REPORT_ONLY, False)
    assert "timing limit" in timing.note
    assert not verdict.changes


def test_a_dropped_tool_on_one_case_fails_naming_the_case_and_the_change() -> None:
    verdict = decide(run_file(_run(1)), run_file(_run(2, change="drop_tool")))
    assert not verdict.passed
    tool = next(m for m in verdict.metrics if m.metric == "tool use: income_check")
    assert tool.outcome is MetricOutcome.FAIL
    assert tool.evidence[0].startswith("case-00-approve missing income_check in 16/16")
    assert {c.case_id for c in verdict.changes} == {"case-00-approve"}


def test_the_fail_line_shows_what_changed_not_only_that_the_case_failed() -> None:
    """A case that fails its assertions is shown worse by ``pass_rate`` and by the metric of
    what changed, at the same p-value; the last line showed ``passed 16/16 → 0/16 (failed:
    tools_include ×16)``, naming no tool (measured end to end: ``answer_class ×16`` for a
    candidate declining what was approved)."""
    verdict = decide(run_file(_run(1)), run_file(_run(2, change="drop_tool")))
    moved = verdict_summary(verdict).split("moved most: ", 1)[1]
    assert moved.startswith("case-00-approve ") and "income_check" in moved, moved
    assert {c.metric for c in verdict.changes} >= {"pass_rate", "tool use: income_check"}


def test_the_fail_line_shows_what_changed_even_when_pass_rate_moved_more() -> None:
    """Measured end to end: a candidate that stops calling a tool on the approve path, whose
    case also escalated at random in 2 of 16 repeats, fails pass_rate 16/16 → 0/16 (p lower
    than the tool's 16/16 → 14/16), and the line named no tool in 28 of 100 trials."""
    tool = MetricVerdict(
        "tool use: verify_income", MetricOutcome.FAIL, True, 0.1, 9, None, 0.01, ""
    )
    verdict = RegressionVerdict(
        (tool,),
        (
            CaseChange("case-a", "pass_rate", 0.001, "case-a passed 16/16 → 0/16"),
            CaseChange("case-b", "pass_rate", 0.002, "case-b passed 16/16 → 0/16"),
            CaseChange("case-a", "tool use: verify_income", 0.01, "case-a missing verify_income"),
        ),
        9,
        (16.0, 16.0),
        (0, 0),
    )
    assert verdict_summary(verdict).endswith("moved most: case-a missing verify_income")


def test_too_few_repeats_is_inconclusive_and_says_what_would_decide(tmp_path: Path) -> None:
    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    base.write_text(_run(1, k=2).to_json(), encoding="utf-8")
    cur.write_text(_run(2, k=2).to_json(), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(cli, ["check", "--baseline", str(base), "--current", str(cur)])
    assert result.exit_code == 1, result.output
    assert "INCONCLUSIVE" in result.output and "would decide with about" in result.output
    allowed = runner.invoke(
        cli, ["check", "--baseline", str(base), "--current", str(cur), "--allow-inconclusive"]
    )
    assert allowed.exit_code == 0, allowed.output


def test_reports_carry_the_evidence(tmp_path: Path) -> None:
    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    base.write_text(_run(1).to_json(), encoding="utf-8")
    cur.write_text(_run(2, change="drop_tool").to_json(), encoding="utf-8")
    outs = {ext: tmp_path / f"check.{ext}" for ext in ("md", "xml", "html")}
    result = CliRunner().invoke(
        cli,
        [
            "check",
            "--baseline",
            str(base),
            "--current",
            str(cur),
            "--markdown",
            str(outs["md"]),
            "--junit",
            str(outs["xml"]),
            "--html",
            str(outs["html"]),
        ],
    )
    assert result.exit_code == 1
    line = "case-00-approve missing income_check in 16/16"
    assert line in result.output
    for path in outs.values():
        assert line in path.read_text(encoding="utf-8"), path


def test_no_process_recorded_is_no_signal_for_tool_metrics_and_does_not_gate() -> None:
    cases = _cases()
    runs = {
        c.id: [Evidence("Loan approved." if c.id.endswith("approve") else "declined")] * 8
        for c in cases
    }
    verdict = decide(run_file(score_repeats(cases, runs)), run_file(score_repeats(cases, runs)))
    tool_count = next(m for m in verdict.metrics if m.metric == "tool_count")
    assert tool_count.outcome is MetricOutcome.NO_SIGNAL and not tool_count.gating
    assert "process trace" in tool_count.note


def test_a_case_whose_every_call_raised_is_missing() -> None:
    cases = _cases()
    cur = _run(2)
    repeats = dict(cur.repeats)
    broken = score_repeats(cases[:1], {cases[0].id: [AppFailure("TimeoutError", "slow")] * 3})
    repeats[cases[0].id] = broken.repeats[cases[0].id]
    current = run_file(RunResult(cur.metrics, cur.outcomes, repeats, cur.properties))
    verdict = decide(run_file(_run(1)), current)
    missing = next(m for m in verdict.metrics if m.metric == "missing")
    assert missing.outcome is MetricOutcome.FAIL and cases[0].id in missing.evidence[0]
    assert verdict.app_errors == (0, 3)


def test_a_run_file_without_repeats_keeps_trace2eval_rules(tmp_path: Path) -> None:
    import json

    paths = []
    for seed in (1, 2):
        payload = json.loads(_run(seed, k=1).to_json())
        del payload["repeats"], payload["properties"]
        path = tmp_path / f"r{seed}.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        paths.append(str(path))
    result = CliRunner().invoke(cli, ["check", "--baseline", paths[0], "--current", paths[1]])
    assert "trace2eval's rules decide" in result.output
    assert (
        "| Metric | Baseline | Current | Rule |" in result.output or "regressions" in result.output
    )


def test_statistics() -> None:
    # Fisher: 16/16 → 0/16 bad, and its floor; nothing bad on either side can never reject
    p, floor = fisher_worse_p(0, 16, 16, 16)
    assert p == floor and p < 1e-8
    assert fisher_worse_p(0, 16, 0, 16) == (1.0, 1.0)
    # Tarone: tests that cannot reject do not dilute Holm
    assert tarone_holm([0.01, 1.0, 1.0], [0.001, 1.0, 1.0], 0.05) == [0.01, 1.0, 1.0]
    # a deterministic rate with no case moved: the exact pooled bound decides
    pooled = PooledCounts(0, 384, 0, 384)
    b = paired_bound(np.zeros(24), 0.05, 0.05, Scale.RATE, pooled=pooled)
    assert b is not None and b.upper == pooled.upper(0.05) < 0.01 and b.worst_case


def test_cases_plan_prints_calls_and_detectable_changes(tmp_path: Path) -> None:
    import json

    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in _cases()), encoding="utf-8")
    result = CliRunner().invoke(cli, ["cases", "plan", "--cases", str(path), "--repeats", "16"])
    assert result.exit_code == 0, result.output
    assert "12 case(s) × 16 repeat(s) = 192 app call(s)" in result.output
    plan = plan_replay(_cases(), 16)
    assert plan.app_calls == 192 and plan.case_flip_caught is not None
    assert {m.metric for m in plan.metrics} >= {"pass_rate", "tool_count", "latency", "cost"}


def test_a_shown_bound_is_never_below_its_estimate_and_a_case_driven_fail_says_so() -> None:
    """Recorded traffic gives cases unequal repeats; the pooled exact bound then weights the
    common case most and fell below the mean over cases on the demo (+21.3 vs +21.6 pts).
    A metric FAILed by its cases' own tests while the mean is within tolerance says why."""
    cases = _cases()
    rng = random.Random(5)
    base: dict[str, list[Evidence]] = {}
    cur: dict[str, list[Evidence]] = {}
    for i, case in enumerate(cases):
        k = 200 if i == 0 else 16  # one common question, eleven rarer ones
        base[case.id] = [_call(case, rng, None, 1.0) for _ in range(k)]
        calls = [_call(case, rng, None, 1.0) for _ in range(k)]
        if i == 1:  # the rare case now always escalates
            calls = [replace(e, process=replace(e.process, escalated=True)) for e in calls]  # type: ignore[arg-type]
        cur[case.id] = calls
    verdict = decide(run_file(score_repeats(cases, base)), run_file(score_repeats(cases, cur)))
    for m in verdict.metrics:
        if m.bound is not None and math.isfinite(m.bound.upper):
            assert m.bound.upper >= m.bound.estimate - 1e-12, m
    esc = next(m for m in verdict.metrics if m.metric == "escalation_rate")
    assert esc.outcome is MetricOutcome.FAIL, esc  # the case's own test: 16/16 vs ~0/16
    assert esc.bound is not None and esc.bound.upper < esc.tolerance  # the mean moved ~8 pts
    assert "1 case(s) shown worse by their own test" in esc.note, esc.note
    assert "the mean over cases is within tolerance" in esc.note
    # the plan lists what check gates: one row per property kind, none for a timing limit's
    kinds = {m.metric for m in plan_replay(_cases(own_value=True, timing=True), 16).metrics}
    assert {"property: min_chars", "property: escalated"} <= kinds
    assert not {k for k in kinds if k.startswith("property: max_latency_ms")}
