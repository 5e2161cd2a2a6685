"""A case run and a check concluded, as ``cases run`` and ``check`` end: the files written
(the run result, Markdown, JUnit XML, HTML), the text the command prints, and the decision."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..regression.gate.diff import case_diffs
from ..regression.gate.gate import Comparison, GateOptions, check_comparable
from ..regression.gate.runfile import RunFile
from ..regression.gate.verdict import RegressionOptions, RegressionVerdict, decide
from ..regression.report.render import render_check, render_metrics, verdict_line
from ..regression.report.report_html import CheckReport
from ..regression.report.run_files import (
    CheckFiles,
    RunFiles,
    write_check_files,
    write_run_files,
    write_verdict_files,
)
from ..regression.report.verdict_report import render_verdict, verdict_summary
from ..regression.run.run import RunResult

__all__ = [
    "CaseRunOutcome",
    "CheckOutcome",
    "VerdictOutcome",
    "conclude_case_run",
    "conclude_check",
    "conclude_verdict",
]


def _as_written(text: str) -> str:
    return text


@dataclass(frozen=True)
class CaseRunOutcome:
    """A scored case run: its metrics table (as printed and written) and the decision."""

    table: str
    passed: bool  # no --min-pass-rate asked for, or the pass rate reaches it


@dataclass(frozen=True)
class CheckOutcome:
    """trace2eval's rules: the comparison as printed, its verdict line, and the decision."""

    text: str
    verdict: str
    passed: bool


@dataclass(frozen=True)
class VerdictOutcome:
    """The repeats gate: its verdict, its table and summary as printed, the cases that moved."""

    verdict: RegressionVerdict
    text: str
    summary: str
    moved: tuple[str, ...]  # the cases shown worse, first to last, each once

    @property
    def passed(self) -> bool:
        return self.verdict.passed


def conclude_case_run(
    result: RunResult, files: RunFiles, min_pass_rate: float | None = None
) -> CaseRunOutcome:
    """Write the run's files and decide: it passes unless its pass rate is under
    ``min_pass_rate``."""
    table = render_metrics(result.metrics)
    write_run_files(result, table, files)
    passed = min_pass_rate is None or result.metrics.pass_rate >= min_pass_rate
    return CaseRunOutcome(table, passed)


def conclude_check(
    base: RunFile,
    cur: RunFile,
    comparison: Comparison,
    files: CheckFiles,
    report: tuple[float, str | None, bool],
    terms: Callable[[str], str] = _as_written,
) -> CheckOutcome:
    """trace2eval's rules: the pass → fail cases' diffs, the comparison's text (its notes
    worded by ``terms``), its files written; ``report`` is the tolerance scale the page shows,
    the trace-link template and whether to leave app text out of the diffs."""
    tolerance_scale, trace_url, redact = report
    diffs = case_diffs(
        base.case_details or {}, cur.case_details or {}, comparison.pass_to_fail, redact=redact
    )
    text = render_check(base.metrics, cur.metrics, comparison, diffs, terms)
    page = CheckReport(
        base.path,
        cur.path,
        base.metrics,
        cur.metrics,
        comparison,
        tolerance_scale,
        diffs,
        trace_url,
    )
    write_check_files(page, text, files)
    return CheckOutcome(text, verdict_line(comparison), not comparison.violations)


def conclude_verdict(
    base: RunFile,
    cur: RunFile,
    gate: tuple[GateOptions, RegressionOptions],
    files: CheckFiles,
    terms: Callable[[str], str] = _as_written,
) -> VerdictOutcome:
    """The repeats gate: the options checked, the runs compared case by case, the verdict's
    text (worded by ``terms``) and its files written."""
    options, repeats = gate
    options.validate()
    check_comparable(base, cur, options.allow_different_cases)
    verdict = decide(base, cur, repeats)
    text = terms(render_verdict(verdict))
    summary = verdict_summary(verdict)
    write_verdict_files(verdict, text, summary, (base.path, cur.path), files)
    moved = tuple(dict.fromkeys(c.case_id for c in verdict.changes))
    return VerdictOutcome(verdict, text, summary, moved)
