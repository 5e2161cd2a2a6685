"""The files ``cases run`` and ``check`` write beside what they print: the run result ``check``
reads, its metrics table as Markdown and JUnit XML; a comparison's Markdown, JUnit XML and HTML
(trace2eval's rules, or the repeats gate's verdict)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...common.jsonio import write_text_atomic
from ..gate.rules import RULES
from ..gate.verdict import RegressionVerdict
from ..run.run import RunResult
from .diff_report import diffs_markdown
from .render import check_junit, run_junit, verdict_line
from .report_html import CheckReport, render_check_html
from .verdict_report import render_verdict_html, verdict_junit, verdict_markdown

__all__ = [
    "CheckFiles",
    "RunFiles",
    "write_check_files",
    "write_run_files",
    "write_verdict_files",
]


@dataclass(frozen=True)
class RunFiles:
    """Where ``cases run`` writes (each optional): the run result, the table as Markdown, JUnit."""

    output: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None


@dataclass(frozen=True)
class CheckFiles:
    """Where ``check`` writes its comparison (each optional): Markdown, JUnit XML, HTML."""

    markdown: Path | None = None
    junit: Path | None = None
    html: Path | None = None


def write_run_files(result: RunResult, table: str, files: RunFiles) -> None:
    """The run result (what ``check`` reads), ``table`` (the metrics as printed) as Markdown,
    and one JUnit testcase per case."""
    if files.output is not None:
        write_text_atomic(files.output, result.to_json())
    if files.markdown is not None:
        write_text_atomic(files.markdown, table + "\n")
    if files.junit is not None:
        write_text_atomic(files.junit, run_junit(result.metrics, result.case_results))


def write_check_files(report: CheckReport, text: str, files: CheckFiles) -> None:
    """trace2eval's rules: ``text`` (the comparison as printed) with the verdict and the case
    diffs as Markdown, one JUnit testcase per gated metric and regressed case, the HTML page."""
    if files.markdown is not None:
        extra = diffs_markdown(report.diffs, report.trace_url)
        write_text_atomic(
            files.markdown,
            text
            + "\n\n"
            + f"**{verdict_line(report.comparison)}**\n"
            + ("\n" + extra if extra else ""),
        )
    if files.junit is not None:
        metrics = [rule.metric for rule in RULES]
        junit = check_junit(report.comparison, metrics, report.diffs, report.trace_url)
        write_text_atomic(files.junit, junit)
    if files.html is not None:
        write_text_atomic(files.html, render_check_html(report))


def write_verdict_files(
    verdict: RegressionVerdict, text: str, summary: str, paths: tuple[str, str], files: CheckFiles
) -> None:
    """The repeats gate: ``text`` and ``summary`` (as printed) as Markdown, JUnit XML, and the
    HTML page; ``paths``: the baseline's and the current run's files, as the reports name them."""
    baseline, current = paths
    if files.markdown is not None:
        write_text_atomic(files.markdown, verdict_markdown(text, summary, baseline, current))
    if files.junit is not None:
        write_text_atomic(files.junit, verdict_junit(verdict))
    if files.html is not None:
        write_text_atomic(files.html, render_verdict_html(verdict, baseline, current))
