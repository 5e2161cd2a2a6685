"""``spanguard check``: gate a run against a baseline (trace2eval tolerances, noise-aware)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..common.markdown import console_text
from ..common.tracelinks import validate_template
from ..evaluation.case_run import conclude_check
from ..inputs import guard
from ..regression.gate.gate import DEFAULT_MIN_LATENCY_CHANGE_MS, Comparison, GateOptions, compare
from ..regression.gate.runfile import RunFile, load_run
from ..regression.gate.verdict import RegressionOptions
from ..regression.report.run_files import CheckFiles
from ._check_repeats import compare_repeats
from ._common import check_files, exit_gate, in_command_terms
from ._emit import emit_option, resolve_endpoint, send_case_events

if TYPE_CHECKING:
    from ..emit.otlp import Endpoint

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
    help="A smaller p95 latency rise is never a regression (--rules trace2eval); a latency "
    "under it is read as it (--rules spanguard).",
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
@click.option(
    "--rules",
    type=click.Choice(["spanguard", "trace2eval"]),
    default="spanguard",
    show_default=True,
    help="spanguard: four outcomes per metric from every case's repeats (run files written "
    "by `cases run` since repeats are kept); trace2eval: trace2eval 0.5.1's tolerances with "
    "run-to-run noise tests (used for files without repeats, e.g. trace2eval metrics files).",
)
@click.option(
    "--allow-inconclusive",
    is_flag=True,
    help="Exit 0 when no metric FAILs, even if some are INCONCLUSIVE (--rules spanguard).",
)
@click.option(
    "--same-machine",
    is_flag=True,
    help="The two runs were measured under the same load: gate the overall latency ratio "
    "too (by default only per-case latency shifts, normalised by the run's median ratio, "
    "gate).",
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
    rules: str,
    allow_inconclusive: bool,
    same_machine: bool,
    emit_otlp: str | None,
) -> None:
    """Compare two run results of `spanguard cases run`; exit 0 only when every gating
    metric PASSes.

    Both files must be run results (`cases run -o FILE`, or trace2eval 0.5.1's metrics
    JSON) over the same cases; anything else exits 2 naming the file and field. With the
    repeats `cases run` keeps (--rules spanguard, the default), each metric is PASS (the
    candidate is shown not worse than the baseline by more than the tolerance: a one-sided
    95% bound, paired by case), FAIL (shown worse, or a case shown worse against its own
    repeats; Holm across cases and metrics), INCONCLUSIVE (neither: it says how many cases
    or repeats would decide; --allow-inconclusive exits 0) or NO_SIGNAL. Each FAIL names the
    cases that moved most, baseline → current. A case with repeats in the baseline and none
    now fails (--allow-missing lists it).

    With --rules trace2eval (and for files without repeats) a change is a regression when it
    is beyond trace2eval's tolerance and beyond run-to-run noise (McNemar for rates, a case
    bootstrap for p95 latency and cost), and a case that passed and now fails a content or
    process check fails the gate; each such case is shown as a diff of what the baseline and
    the current run did.

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
    repeats = RegressionOptions(
        tolerance_scale=tolerance_scale,
        allow_inconclusive=allow_inconclusive,
        allow_missing=allow_missing,
        same_machine=same_machine,
        min_latency_ms=min_latency_change_ms,
    )
    if rules == "spanguard":
        _with_repeats(
            baseline, current, options, repeats, CheckFiles(markdown, junit, html), endpoint
        )
    base, cur, comparison = _compare_runs(baseline, current, options)
    files = CheckFiles(markdown, junit, html)
    report = (tolerance_scale, trace_url, redact)
    outcome = conclude_check(base, cur, comparison, files, report, in_command_terms)
    click.echo(console_text(outcome.text))  # app text: no terminal escapes
    send_case_events(endpoint, (cur.case_details or {}).values(), comparison.pass_to_fail)
    click.echo(f"\n{outcome.verdict}", err=not outcome.passed)
    exit_gate(outcome.passed)


def _with_repeats(
    baseline: Path,
    current: Path,
    options: GateOptions,
    repeats: RegressionOptions,
    files: CheckFiles,
    endpoint: Endpoint | None,
) -> None:
    """The repeats gate, which exits, when both files keep repeats; else a note on stderr."""
    base_run, cur_run = load_run(baseline), load_run(current)
    if base_run.repeats and cur_run.repeats:
        compare_repeats(base_run, cur_run, (options, repeats), files, endpoint)
    if base_run.case_results is not None or cur_run.case_results is not None:
        click.echo(
            "note: a run file without repeats (written before `cases run` kept them): "
            "trace2eval's rules decide, as with --rules trace2eval.",
            err=True,
        )


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
