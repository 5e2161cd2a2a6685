"""Every output says the four outcomes plainly: the console (``finish``), report.json,
Markdown, HTML and JUnit, for results built with each verdict directly."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import click
import pytest
from click.testing import CliRunner, Result

from spanguard_processor.cli._evaluation import evaluation_options, finish
from spanguard_processor.fairness.gate.results import Evaluation, Verdict
from spanguard_processor.fairness.report.evidence_report import ReportOptions
from spanguard_processor.fairness.report.reports import (
    render_junit,
    render_markdown,
    report_dict,
    write_reports,
)
from spanguard_processor.fairness.report.run_reports import report_run

from .verdicts import DIAGNOSIS, FAILING, PASSING, SILENT, UNDECIDED, evaluation


def _console(ev: Evaluation, *args: str) -> Result:
    """``finish`` as ``spanguard fairness`` calls it, on ``ev`` (its options are the real
    command's, so flags are spelled as users type them)."""

    @click.command()
    @evaluation_options
    @click.pass_context
    def show(ctx: click.Context, output: Path | None, fmt: str, **_: Any) -> None:
        finish(ctx, report_run(ev, output, ReportOptions()), output, fmt)

    return CliRunner().invoke(show, list(args))


def test_each_outcome_has_its_own_console_line_and_the_gate_names_why() -> None:
    result = _console(evaluation(PASSING, FAILING, UNDECIDED, SILENT))
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["PASS", "escalation_parity", "0.0200"]
    fail = next(line for line in lines if line.startswith("FAIL "))
    assert "tool_use_parity" in fail and "underpowered" not in result.output
    undecided = lines.index(next(line for line in lines if line.startswith("INCONCLUSIVE")))
    assert "[0.0000, unbounded]" in lines[undecided]
    assert lines[undecided].endswith(  # the gate's "upper bound inf ≥ 1", said in words
        "thr 1  inconclusive: the data cannot show the gap within the threshold (no finite "
        "upper bound, Holm p = 0.5)"
    )
    assert lines[undecided + 1].strip() == (
        "needs about 64 seeds (this suite has 20) for its MDE to reach the threshold 1"
    )
    assert lines[undecided + 2].strip() == (
        "no finite upper bound: the gap has no maximum on its scale and 20 seed(s) do not bound it"
    )
    silent = lines.index(next(line for line in lines if line.startswith("NO_SIGNAL")))
    assert lines[silent].split()[1:4] == ["refusal_gap", "–", "–"]
    assert lines[silent].endswith("thr 0.1  no record carries output text")
    assert [line.strip() for line in lines[silent + 1 : silent + 4]] == [  # the diagnosis
        "no output text in 40 record(s)",
        "24 span(s) named answer with llm.completion: not read",
        "see docs/attributes.md#foreign-conventions-the-processor-reads.",
    ]
    assert "inf" not in result.output.replace("information", "")
    assert lines[-1] == (
        "fairness gate FAILED: tool_use_parity, friction_point_gap "
        "(INCONCLUSIVE), refusal_gap (NO_SIGNAL)"
    )


def test_a_rate_metric_with_an_infinite_bound_shows_the_scale_that_bounds_it() -> None:
    rate = replace(UNDECIDED, metric="escalation_parity", threshold=0.1, seeds_needed=None)
    lines = _console(evaluation(rate)).output.splitlines()
    assert "[0.0000, 1.0000]" in lines[0]
    assert [line.strip() for line in lines[1:-1]] == [
        "the upper bound 1 is the rate scale's maximum: the data bound it no lower"
    ]


def test_the_seeds_needed_are_said_once() -> None:
    said = replace(
        UNDECIDED,
        reason_text=UNDECIDED.reason_text + "; about 64 seeds (now 20) would let a fair app pass",
    )
    lines = _console(evaluation(said)).output.splitlines()
    assert lines[0].endswith("; about 64 seeds (now 20) would let a fair app pass")
    assert not any("needs about" in line for line in lines)


def test_allow_inconclusive_exits_0_with_one_warning_line_per_inconclusive_metric() -> None:
    second = replace(UNDECIDED, metric="plan_length_gap", seeds_needed=None)
    strict = _console(evaluation(PASSING, UNDECIDED, second))
    assert strict.exit_code == 1
    assert "warning:" not in strict.output
    allowed = _console(evaluation(PASSING, UNDECIDED, second, allow_inconclusive=True))
    assert allowed.exit_code == 0, allowed.output
    warnings = [line for line in allowed.output.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: friction_point_gap is INCONCLUSIVE (neither shown within nor beyond its "
        "threshold 1; about 64 seeds would decide it); allowed by --allow-inconclusive",
        "warning: plan_length_gap is INCONCLUSIVE (neither shown within nor beyond its "
        "threshold 1); allowed by --allow-inconclusive",
    ]
    assert allowed.output.splitlines()[-1] == (
        "fairness gate PASSED; 2 INCONCLUSIVE allowed by --allow-inconclusive: "
        "friction_point_gap, plan_length_gap"
    )
    # a FAIL still fails, and so does a NO_SIGNAL: the flag allows INCONCLUSIVE only
    for blocker in (FAILING, SILENT):
        mixed = _console(evaluation(UNDECIDED, blocker, allow_inconclusive=True))
        assert mixed.exit_code == 1
        assert mixed.output.splitlines()[-1].startswith(f"fairness gate FAILED: {blocker.metric}")


def test_no_signal_gates_unless_the_metric_is_optional() -> None:
    assert _console(evaluation(PASSING, SILENT)).exit_code == 1
    optional = replace(SILENT, optional=True)
    result = _console(evaluation(PASSING, optional))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "optional: reported, not gated" in [line.strip() for line in lines]
    assert lines[-1] == "fairness gate PASSED; not gated (optional, NO_SIGNAL): refusal_gap"
    # optional does not soften the other outcomes
    assert _console(evaluation(replace(FAILING, optional=True))).exit_code == 1
    assert _console(evaluation(replace(UNDECIDED, optional=True))).exit_code == 1


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_the_printed_verdict_always_matches_the_exit_code(fmt: str) -> None:
    outcomes = (
        PASSING,
        FAILING,
        UNDECIDED,
        SILENT,
        replace(SILENT, metric="tool_name_gap", optional=True),
    )
    for size, allow in itertools.product((1, 2, 3), (False, True)):
        for combo in itertools.combinations(outcomes, size):
            result = _console(evaluation(*combo, allow_inconclusive=allow), "--format", fmt)
            gate = [
                line for line in result.output.splitlines() if line.startswith("fairness gate ")
            ]
            assert len(gate) == 1, result.output
            assert gate[0].startswith("fairness gate PASSED") == (result.exit_code == 0)
            assert result.exit_code in (0, 1)
            blocked = {
                r.metric
                for r in combo
                if r is FAILING or r is SILENT or (r is UNDECIDED and not allow)
            }
            assert (result.exit_code == 1) == bool(blocked), (combo, allow)


def test_report_json_says_the_verdict_and_passed_only_for_pass(tmp_path: Path) -> None:
    optional = replace(SILENT, metric="tool_name_gap", optional=True)
    ev = evaluation(PASSING, FAILING, UNDECIDED, SILENT, optional)
    write_reports(ev, tmp_path)
    data = json.loads(
        (tmp_path / "report.json").read_text(),
        parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"),
    )
    rows = {r["metric"]: r for r in data["metric_results"]}
    assert {m: (r["verdict"], r["passed"]) for m, r in rows.items()} == {
        "escalation_parity": ("pass", True),
        "tool_use_parity": ("fail", False),
        "friction_point_gap": ("inconclusive", False),
        "refusal_gap": ("no_signal", False),
        "tool_name_gap": ("no_signal", False),
    }
    fairtrace_keys = [
        "metric",
        "score",
        "threshold",
        "direction",
        "passed",
        "confidence_interval",
        "details",
        "p_value",
    ]
    assert all(list(r)[:8] == fairtrace_keys for r in rows.values())
    assert rows["friction_point_gap"]["seeds_needed"] == 64
    assert rows["friction_point_gap"]["confidence_interval"] == [0.0, None]  # strict JSON
    silent = rows["refusal_gap"]
    assert (silent["signal"], silent["signal_records"], silent["optional"], silent["gating"]) == (
        "output text",
        0,
        False,
        True,
    )
    assert silent["diagnosis"] == DIAGNOSIS
    assert rows["tool_name_gap"]["gating"] is False
    block = data["spanguard"]
    assert block["passed"] is False
    assert block["failed_metrics"] == ["tool_use_parity", "friction_point_gap", "refusal_gap"]
    assert block["verdicts"] == {"pass": 1, "fail": 1, "inconclusive": 1, "no_signal": 2}
    assert block["not_gated"] == ["tool_name_gap"] and block["allowed_inconclusive"] == []
    allowed = report_dict(evaluation(PASSING, UNDECIDED, allow_inconclusive=True))
    assert allowed["spanguard"]["passed"] is True
    assert allowed["spanguard"]["allowed_inconclusive"] == ["friction_point_gap"]
    assert allowed["spanguard"]["allow_inconclusive"] is True


def test_markdown_shows_each_outcome_and_why_it_is_not_pass() -> None:
    md = render_markdown(
        evaluation(
            PASSING,
            FAILING,
            UNDECIDED,
            SILENT,
            replace(SILENT, metric="tool_name_gap", optional=True),
        )
    )
    assert md.startswith(
        "# spanguard fairness report\n\n**FAILED** — 1 PASS, 1 FAIL, "
        "1 INCONCLUSIVE, 2 NO_SIGNAL of 5 metrics"
    )
    rows = {
        line.split(" | ")[0][2:]: line
        for line in md.splitlines()
        if line.startswith("| ") and not line.startswith("| Metric")
    }
    assert rows["escalation_parity"].endswith("| ✅ PASS |")
    assert rows["tool_use_parity"].endswith("| ❌ FAIL |")
    assert rows["friction_point_gap"].endswith("| ⚠️ INCONCLUSIVE |")
    assert "[0.0000, unbounded]" in rows["friction_point_gap"]
    assert rows["refusal_gap"] == (
        "| refusal_gap | – | – | 0.1 (lower) | 0.5000 | 0.5000 | 0.0800 | ⛔ NO_SIGNAL |"
    )
    assert rows["tool_name_gap"].endswith("| ⛔ NO_SIGNAL (optional, not gated) |")
    assert (
        "_PASS: the data show the gap within the threshold; FAIL: the data show the gap "
        "beyond the threshold; INCONCLUSIVE: the data show neither: the interval straddles "
        "the threshold, or lies beyond it while the test adjusted across the run's metrics "
        "(Holm) does not reject (leans FAIL); NO_SIGNAL: no record carries what the metric "
        "reads. Intervals are each metric's own (unadjusted) bounds, the ones PASS uses; "
        "FAIL also needs the Holm-adjusted p below alpha._"
    ) in md
    why = md.split("## Why not PASS\n\n")[1].split("\n\n")[0].splitlines()
    assert why[0].startswith(
        "- **friction_point_gap** (INCONCLUSIVE): inconclusive: the "
        "data cannot show the gap within the threshold (no finite upper "
        "bound, Holm p = 0.5); needs about 64 seeds (this suite has 20)"
    )
    assert why[1] == f"- **refusal_gap** (NO_SIGNAL): no record carries output text; {DIAGNOSIS}"
    assert "underpowered" not in md and "a warning that stays" in md
    assert "inf" not in md.replace("information", "")


def test_html_shows_each_outcome(tmp_path: Path) -> None:
    write_reports(evaluation(PASSING, FAILING, UNDECIDED, SILENT), tmp_path)
    html = (tmp_path / "report.html").read_text()
    for verdict, text in (
        ("pass", "PASS"),
        ("fail", "FAIL"),
        ("inconclusive", "INCONCLUSIVE"),
        ("no_signal", "NO_SIGNAL"),
    ):
        assert f'<span class="{verdict}">{text}</span>' in html
    assert "needs about 64 seeds (this suite has 20)" in html
    assert "no record carries output text" in html and DIAGNOSIS in html
    assert html.count("<svg") == 3  # nothing to draw for the metric without signal
    assert "inf" not in html.replace("information", "")
    assert "underpowered" not in html


def test_junit_fails_gating_outcomes_and_skips_what_does_not_gate() -> None:
    optional = replace(SILENT, metric="tool_name_gap", optional=True)
    junit = ElementTree.fromstring(
        render_junit(evaluation(PASSING, FAILING, UNDECIDED, SILENT, optional))
    )
    suite = junit.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("5", "3", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    kinds = {name: [child.tag for child in case] for name, case in cases.items()}
    assert kinds == {
        "escalation_parity": [],
        "tool_use_parity": ["failure"],
        "friction_point_gap": ["failure"],
        "refusal_gap": ["failure"],
        "tool_name_gap": ["skipped"],
    }
    failures = {n: c.find("failure") for n, c in cases.items() if kinds[n] == ["failure"]}
    assert {n: f.get("type") for n, f in failures.items() if f is not None} == {
        "tool_use_parity": "fail",
        "friction_point_gap": "inconclusive",
        "refusal_gap": "no_signal",
    }
    silent = failures["refusal_gap"]
    assert silent is not None and silent.get("message") == (
        "NO_SIGNAL: no record carries output text"
    )
    assert (silent.text or "").splitlines() == [
        "NO_SIGNAL: no record carries output text",
        DIAGNOSIS,
    ]
    undecided = failures["friction_point_gap"]
    assert undecided is not None and "needs about 64 seeds" in (undecided.text or "")
    assert "underpowered" not in (failures["tool_use_parity"].text or "")  # type: ignore[union-attr]
    allowed = ElementTree.fromstring(
        render_junit(evaluation(PASSING, UNDECIDED, allow_inconclusive=True))
    )
    skipped = allowed.find("./testsuite/testcase[@name='friction_point_gap']/skipped")
    assert skipped is not None
    assert skipped.get("message") == "INCONCLUSIVE: allowed by `allow_inconclusive`"
    optional_case = cases["tool_name_gap"].find("skipped")
    assert optional_case is not None
    assert optional_case.get("message") == "NO_SIGNAL: an optional metric: reported, not gated"


def _report(path: Path, *results: Any) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "report.json").write_text(json.dumps(report_dict(evaluation(*results))))
    return path


def test_compare_never_counts_losing_a_pass_as_an_improvement(tmp_path: Path) -> None:
    from spanguard_processor.cli import cli
    from spanguard_processor.fairness.gate.results import Verdict

    base = _report(
        tmp_path / "main",
        PASSING,
        replace(PASSING, metric="refusal_gap"),
        replace(UNDECIDED, metric="plan_length_gap"),
        replace(FAILING, metric="tool_name_gap"),
    )
    # the candidate's scores are all lower (better), but PASS became INCONCLUSIVE and
    # NO_SIGNAL, and an INCONCLUSIVE metric lost its signal
    cand = _report(
        tmp_path / "pr",
        replace(
            UNDECIDED,
            metric="escalation_parity",
            score=0.01,
            threshold=0.1,
            confidence_interval=(0.0, 0.3),
        ),
        replace(SILENT, metric="refusal_gap", score=0.0),
        replace(SILENT, metric="plan_length_gap", score=0.0),
        replace(PASSING, metric="tool_name_gap", score=0.0, verdict=Verdict.PASS),
    )
    result = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--format", "json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["regressed"] == ["escalation_parity", "plan_length_gap", "refusal_gap"]
    rows = {r["metric"]: r for r in data["metrics"]}
    assert (
        rows["escalation_parity"]["baseline_verdict"],
        rows["escalation_parity"]["candidate_verdict"],
    ) == ("pass", "inconclusive")
    assert rows["escalation_parity"]["reason"] == "verdict went from PASS to INCONCLUSIVE"
    assert rows["refusal_gap"]["reason"] == (
        "verdict went from PASS to NO_SIGNAL: the candidate lost the signal"
    )
    assert rows["refusal_gap"]["severity"] == 0.0  # a score without signal is no measurement
    assert rows["plan_length_gap"]["reason"].startswith(
        "verdict went from INCONCLUSIVE to NO_SIGNAL"
    )
    assert (rows["plan_length_gap"]["candidate_score"], rows["plan_length_gap"]["delta"]) == (
        None,
        None,
    )  # its 0.0 measured nothing
    assert rows["tool_name_gap"]["regressed"] is False
    assert rows["tool_name_gap"]["reason"] == "verdict went from FAIL to PASS"
    text = (
        CliRunner()
        .invoke(cli, ["compare", "--baseline", str(base), "--current", str(cand)])
        .output.splitlines()
    )
    assert text[0].startswith("REGRESSED  escalation_parity")
    assert text[0].endswith("PASS → INCONCLUSIVE: verdict went from PASS to INCONCLUSIVE")
    assert any(line.startswith("ok ") and line.endswith("FAIL → PASS") for line in text)
    md = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--format", "markdown"])
    assert "| PASS → NO_SIGNAL | ❌ regressed |" in md.output
    # the reverse: INCONCLUSIVE → PASS is no regression, NO_SIGNAL → FAIL is one
    back = CliRunner().invoke(cli, ["compare", str(cand), str(base), "--format", "json"])
    assert json.loads(back.stdout)["regressed"] == ["tool_name_gap"]


def test_assert_fair_names_each_blocking_outcome_in_the_consoles_words() -> None:
    from spanguard_processor.fairness.testing import _message

    text = _message(
        evaluation(
            PASSING,
            FAILING,
            UNDECIDED,
            SILENT,
            replace(SILENT, metric="tool_name_gap", optional=True),
        )
    )
    lines = text.splitlines()
    assert [
        line.split(":")[0].strip()
        for line in lines
        if line.startswith("  ") and not line.startswith("    ")
    ] == ["tool_use_parity", "friction_point_gap", "refusal_gap"]
    assert "  friction_point_gap: INCONCLUSIVE, score 0.2 [0.0000, unbounded]" in text
    assert (
        "    needs about 64 seeds (this suite has 20) for its MDE to reach the threshold 1" in lines
    )
    assert "  refusal_gap: NO_SIGNAL" in text and "inf" not in text


def test_compare_reads_a_metric_without_signal_whose_score_is_null(tmp_path: Path) -> None:
    from spanguard_processor.cli import cli

    base = _report(tmp_path / "main", PASSING, replace(PASSING, metric="refusal_gap"))
    cand = _report(tmp_path / "pr", PASSING, SILENT)
    data = json.loads((cand / "report.json").read_text())  # a report that says null
    data["metric_results"][1]["score"] = None
    (cand / "report.json").write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["compare", str(base), str(cand)])
    assert result.exit_code == 1, result.output
    line = next(line for line in result.output.splitlines() if "refusal_gap" in line)
    assert line.startswith("REGRESSED  refusal_gap") and "0.0200 -> –" in line
    assert line.endswith(
        "PASS → NO_SIGNAL: verdict went from PASS to NO_SIGNAL: the candidate lost the signal"
    )
    md = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--format", "markdown"])
    assert "| refusal_gap | 0.0200 | – | – |" in md.output


_STABILITY = replace(
    PASSING,
    metric="counterfactual_stability",
    direction="higher",
    threshold=0.75,
    score=0.6,
    verdict="report_only",
    passed=False,
    reason="report_only",
    reason_text="report-only: no noise model for stability",
)


def test_a_report_only_metric_is_shown_and_never_gates() -> None:
    result = _console(evaluation(PASSING, _STABILITY))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("REPORT_ONLY  counterfactual_stability")
    assert lines[-1] == "fairness gate PASSED"
    junit = ElementTree.fromstring(render_junit(evaluation(PASSING, _STABILITY)))
    skipped = junit.find("./testsuite/testcase[@name='counterfactual_stability']/skipped")
    assert skipped is not None and skipped.get("message") == (
        "REPORT_ONLY: report-only: never gating"
    )
    md = render_markdown(evaluation(PASSING, _STABILITY))
    assert "## Why not PASS" not in md and "| REPORT_ONLY |" in md


def test_compare_never_calls_a_metric_turning_report_only_a_regression(tmp_path: Path) -> None:
    from spanguard_processor.cli import cli

    base = _report(
        tmp_path / "main", PASSING, replace(_STABILITY, verdict=Verdict.PASS, passed=True)
    )
    cand = _report(tmp_path / "pr", PASSING, _STABILITY)
    result = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--format", "json"])
    assert result.exit_code == 0, result.output
    row = next(
        r for r in json.loads(result.stdout)["metrics"] if r["metric"] == "counterfactual_stability"
    )
    assert (row["baseline_verdict"], row["candidate_verdict"], row["regressed"]) == (
        "pass",
        "report_only",
        False,
    )
