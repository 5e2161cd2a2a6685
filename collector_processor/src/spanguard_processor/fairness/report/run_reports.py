"""A gate run's reports written (what ``-o DIR`` holds after ``fairness`` or ``run``): the
evaluation redacted when asked, report.json, report.md, junit.xml and report.html in the
folder, and the run appended to its history.jsonl with the trend against earlier runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..gate.results import Evaluation
from .evidence_report import ReportOptions
from .history import record_run, trend_lines
from .redaction import redact_evaluation
from .reports import _version, write_reports

__all__ = ["RunReports", "report_run"]


@dataclass(frozen=True)
class RunReports:
    """What a run's reports show, how, and its trend lines (none without a folder)."""

    evaluation: Evaluation  # redacted when the options say so, as every report is
    options: ReportOptions
    trends: tuple[str, ...] = ()  # one line per metric: this run against the earlier ones


def report_run(
    ev: Evaluation, output: Path | None, options: ReportOptions, *, label: str | None = None
) -> RunReports:
    """Redact ``ev`` when ``options.redact`` (no app-provided free text in any report), then,
    with an ``output`` folder, write the reports there and append the run to its history
    (labelled ``label``, by default the git commit)."""
    if options.redact:
        ev = redact_evaluation(ev)
    if output is None:
        return RunReports(ev, options)
    write_reports(ev, output, options)
    rows = record_run(ev, output, _version(), label=label)  # history.jsonl + trends
    return RunReports(ev, options, tuple(trend_lines(rows)))
