"""The library's conclusion of the gate commands (``evaluation/``), called as the commands call
it: the files each writes, the history a second run finds, the decision."""

from __future__ import annotations

import json
from pathlib import Path

from spanguard_processor.evaluation import conclude_case_run, conclude_suite_run
from spanguard_processor.fairness import load_suite
from spanguard_processor.fairness.report.evidence_report import ReportOptions
from spanguard_processor.regression.report.run_files import RunFiles
from spanguard_processor.regression.run.outputs import load_outputs
from spanguard_processor.regression.run.run import load_cases, run_cases

from ..reports.verdicts import FAILING, PASSING, evaluation

ROOT = Path(__file__).resolve().parents[2]
TRACE2EVAL = ROOT / "tests" / "data" / "trace2eval"
SUITE = ROOT / "examples" / "rag_suite.yaml"


def test_a_case_run_writes_its_three_files_and_fails_under_the_pass_rate(tmp_path: Path) -> None:
    cases = load_cases(TRACE2EVAL / "expected_cases_0.5.1.jsonl")
    result = run_cases(cases, load_outputs(TRACE2EVAL / "outputs_regressed.jsonl"))
    files = RunFiles(tmp_path / "run.json", tmp_path / "run.md", tmp_path / "junit.xml")
    rate = result.metrics.pass_rate
    assert 0 < rate < 1, rate
    failed = conclude_case_run(result, files, min_pass_rate=rate + 0.01)
    assert not failed.passed
    assert json.loads((tmp_path / "run.json").read_text()) == json.loads(result.to_json())
    assert (tmp_path / "run.md").read_text() == failed.table + "\n"
    assert failed.table.startswith("| Metric | Value |")
    junit = (tmp_path / "junit.xml").read_text()
    assert f'tests="{len(result.case_results)}"' in junit
    assert conclude_case_run(result, RunFiles(), min_pass_rate=rate).passed
    assert conclude_case_run(result, RunFiles()).passed


def test_a_suite_run_writes_reports_and_history_and_makes_records_only_when_asked(
    tmp_path: Path,
) -> None:
    suite = load_suite(SUITE)
    ev = evaluation(PASSING, FAILING)
    first = conclude_suite_run(SUITE, suite, ev, tmp_path, ReportOptions(), label="one")
    assert not first.passed and first.events == () and first.mined.seeds == 0
    assert first.reports.trends == ()  # no earlier run to compare with
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "history.jsonl",
        "junit.xml",
        "report.html",
        "report.json",
        "report.md",
    ]
    second = conclude_suite_run(
        SUITE, suite, ev, tmp_path, ReportOptions(redact=True), label="two", events=True
    )
    assert len((tmp_path / "history.jsonl").read_text().splitlines()) == 2
    assert [line.split()[1] for line in second.reports.trends] == [
        "escalation_parity",
        "tool_use_parity",
    ]
    assert [(e.name, e.label) for e in second.events] == [
        ("escalation_parity", "pass"),
        ("tool_use_parity", "fail"),
    ]
    assert conclude_suite_run(SUITE, suite, ev, None, ReportOptions()).reports.trends == ()
