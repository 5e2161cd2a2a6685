"""``spanguard check``: gate a run against a baseline (trace2eval tolerances, noise-aware)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from ..common.jsonio import write_text_atomic
from ..common.markdown import console_text
from ..common.tracelinks import validate_template
from ..inputs import guard
from ..regression.gate.diff import case_diffs
from ..regression.gate.gate import DEFAULT_MIN_LATENCY_CHANGE_MS, Comparison, GateOptions, compare
from ..regression.gate.rules import RULES
from ..regression.gate.runfile import RunFile, load_run
from ..regression.report.diff_report import diffs_markdown
from ..regression.report.render import check_junit, render_check, verdict_line
from ..regression.report.report_html import CheckReport, render_check_html
from ._common import check_files, exit_gate, in_command_terms
from ._emit import emit_option, resolve_endpoint, send_case_events

__all__ = ["check"]

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option("--baseline", type=_FILE, required=True, help="Baseline run (from `cases run -o`).")
@click.option("--current", type=_FILE, required=True, help="Current run (from `cases run -o`).")
@click.option(
    "--tolerance-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Multiply every allowance; below 1 is stricter.",
)
@click.option(
    "--allow-different-cases",
    is_flag=True,
    help="Compare runs over different case sets (per-case rules use the shared cases).",
)
@click.option(
    "--allow-missing",
    is_flag=True,
    help="Do not fail when cases that had a record in the baseline have none now (they are "
    "still listed).",
)
@click.option(
    "--min-latency-change-ms",
    type=float,
    default=DEFAULT_MIN_LATENCY_CHANGE_MS,
    show_default=True,
    help="A smaller p95 latency rise is never a regression.",
)
@click.option("--markdown", type=_FILE, help="Also write the comparison as Markdown.")
@click.option("--junit", type=_FILE, help="Also write JUnit XML.")
@click.option("--html", type=_FILE, help="Also write a self-contained HTML report.")
@click.option(
    "--trace-url",
    "trace_url",
    metavar="TEMPLATE",
    help="Link the case diffs' trace ids to a trace viewer, e.g. "
    "http://localhost:16686/trace/{trace_id} (Jaeger).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Leave questions and outputs out of the case diffs (signals and ids stay).",
)
@emit_option
def check(
    baseline: Path,
    current: Path,
    tolerance_scale: float,
    allow_different_cases: bool,
    allow_missing: bool,
    min_latency_change_ms: float,
    markdown: Path | None,
    junit: Path | None,
    html: Path | None,
    trace_url: str | None,
    redact: bool,
    emit_otlp: str | None,
) -> None:
    """Compare two run results of `spanguard cases run`; exit 1 on a regression.

    Both files must be run results (`cases run -o FILE`, or trace2eval 0.5.1's metrics
    JSON) over the same cases; anything else exits 2 naming the file and field. A change is a
    regression when it is beyond the tolerance and beyond run-to-run noise (McNemar for
    rates, a case bootstrap for p95 latency and cost); a case that passed and now fails a
    content or process check fails the gate, and so does a case that had a record in the
    baseline and has none now (a missing case is not a pass; --allow-missing lists it). The
    verdict counts the regressed cases and names the failed rules.

    Each case that went from pass to fail is shown as a diff of what the baseline and the
    current run did (output, tools, escalation, plan, documents, latency, cost).

    \b
    Example:
      spanguard check --baseline runs/baseline.json --current runs/current.json --html check.html
    """
    check_files([(guard.RUN, baseline), (guard.RUN, current)], [markdown, junit, html])
    validate_template(trace_url)
    options = GateOptions(
        tolerance_scale, allow_different_cases, min_latency_change_ms, allow_missing
    )
    endpoint = resolve_endpoint(emit_otlp)
    base, cur, comparison = _compare_runs(baseline, current, options)
    diffs = case_diffs(
        base.case_details or {}, cur.case_details or {}, comparison.pass_to_fail, redact=redact
    )
    text = render_check(base.metrics, cur.metrics, comparison, diffs, in_command_terms)
    click.echo(console_text(text))  # app text: no terminal escapes
    if markdown is not None:
        extra = diffs_markdown(diffs, trace_url)
        write_text_atomic(
            markdown,
            text + "\n\n" + f"**{verdict_line(comparison)}**\n" + ("\n" + extra if extra else ""),
        )
    if junit is not None:
        write_text_atomic(
            junit, check_junit(comparison, [rule.metric for rule in RULES], diffs, trace_url)
        )
    if html is not None:
        report = CheckReport(
            baseline.as_posix(),
            current.as_posix(),
            base.metrics,
            cur.metrics,
            comparison,
            tolerance_scale,
            diffs,
            trace_url,
        )
        write_text_atomic(html, render_check_html(report))
    send_case_events(endpoint, (cur.case_details or {}).values(), comparison.pass_to_fail)
    passed = not comparison.violations
    click.echo(f"\n{verdict_line(comparison)}", err=not passed)
    exit_gate(passed)


def _compare_runs(
    baseline: Path, current: Path, options: GateOptions
) -> tuple[RunFile, RunFile, Comparison]:
    """Both runs read and compared; the gate's notes spelled in the command's terms."""
    base, cur = load_run(baseline), load_run(current)
    comparison = compare(base, cur, options)  # validates the options
    # the gate's notes name parameters (`min_latency_change_ms`): spelled as options once,
    # for the console, Markdown, JUnit and HTML reports alike
    return (
        base,
        cur,
        replace(
            comparison, within_noise=[in_command_terms(line) for line in comparison.within_noise]
        ),
    )
