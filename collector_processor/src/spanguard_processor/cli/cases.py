"""``spanguard cases build|run``: regression cases from production traces."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..common.jsonio import write_text_atomic
from ..regression.build import BuildOptions, build_evalset
from ..regression.render import render_matching, render_metrics, run_junit
from ..regression.run import load_cases, load_outputs, outputs_from_traces, run_cases
from . import EXIT_FAILED
from ._common import BadInput

__all__ = ["cases"]

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group()
def cases() -> None:
    """Mine regression cases from traces (trace2eval-compatible) and run them."""


@cases.command()
@click.argument("inputs", nargs=-1, required=True, type=_FILE)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("evalset"),
    show_default=True,
    help="Output directory.",
)
@click.option("--max-cases", type=int, default=50, show_default=True, help="Cap on cases.")
@click.option("--min-score", type=float, default=1.0, show_default=True, help="Lowest score kept.")
@click.option(
    "--dedup-threshold",
    type=float,
    default=0.6,
    show_default=True,
    help="Jaccard similarity at which two questions are the same.",
)
@click.option("--similarity", metavar="MODULE:FUNCTION", help="Custom matcher (slow).")
@click.option("--expectations", type=_FILE, help="Default: OUT/expectations.jsonl.")
@click.option(
    "--ids",
    type=click.Choice(["stable", "sequential"]),
    default="stable",
    show_default=True,
    help="stable: case-<hash of the question>; sequential: case-001.",
)
@click.option(
    "--max-line-bytes",
    type=int,
    default=1 << 20,
    show_default=True,
    help="Longer lines are skipped.",
)
@click.option(
    "--no-timing-checks",
    is_flag=True,
    help="Latency and cost neither select cases (slow/expensive signals) nor limit them.",
)
@click.option("--strict", is_flag=True, help="Exit 2 if any input line was skipped.")
def build(
    inputs: tuple[Path, ...],
    out: Path,
    max_cases: int,
    min_score: float,
    dedup_threshold: float,
    similarity: str | None,
    expectations: Path | None,
    ids: str,
    max_line_bytes: int,
    no_timing_checks: bool,
    strict: bool,
) -> None:
    """Build cases.jsonl, report.md and an expectations template from INPUTS.

    INPUTS are trace2eval JSONL logs, spanguard agent traces (JSONL), span stores or OTLP span
    files (.gz too), told apart by content. Bad lines are reported by file and line and
    skipped; the rest of the log still counts (--strict makes any skip exit 2).

    Near-duplicate questions (numbers, amounts, ids and dates count as slots) become one case,
    unless their traces differ in process (tools, escalation, friction, plan length): then
    each process gets its own case. Every mined check passes on the clean traces it came
    from; slow or costly cases get a latency/cost limit from their question's own spread
    (1.5 x its p95, with 8+ clean runs); --no-timing-checks leaves timing out entirely.

    \b
    Example:
      spanguard cases build traces.jsonl -o evalset
      spanguard cases build spans.db --ids sequential --max-cases 100
    """
    options = BuildOptions(
        out=out,
        max_cases=max_cases,
        min_score=min_score,
        threshold=dedup_threshold,
        similarity=similarity,
        expectations=expectations,
        sequential_ids=ids == "sequential",
        timing_checks=not no_timing_checks,
        max_line_bytes=max_line_bytes,
    )
    outcome = build_evalset(list(inputs), options)
    for line in outcome.stderr:
        click.echo(line, err=True)
    for line in outcome.stdout:
        click.echo(line)
    if strict and outcome.skipped:
        raise BadInput(
            f"{outcome.skipped} input line(s) were skipped (see above) and --strict "
            "is set; the case set was written from the rest."
        )


@cases.command()
@click.option("--cases", "cases_path", type=_FILE, required=True, help="cases.jsonl.")
@click.option("--outputs", type=_FILE, help="JSONL of {id, output, ...} records.")
@click.option("--traces", type=_FILE, multiple=True, help="Agent-trace JSONL (repeatable).")
@click.option("-o", "--out", type=_FILE, help="Write metrics JSON here.")
@click.option("--min-pass-rate", type=float, help="Exit 1 below this pass rate.")
@click.option("--show-failures", is_flag=True, help="List failing cases and checks.")
@click.option("--markdown", type=_FILE, help="Also write the metrics table as Markdown.")
@click.option("--junit", type=_FILE, help="Also write JUnit XML (one testcase per case).")
def run(
    cases_path: Path,
    outputs: Path | None,
    traces: tuple[Path, ...],
    out: Path | None,
    min_pass_rate: float | None,
    show_failures: bool,
    markdown: Path | None,
    junit: Path | None,
) -> None:
    """Score candidate outputs (or agent traces) against a case set.

    A case finds its record by case id, then by the trace it was mined from (a record keyed by
    its source_trace_id, or carrying the same source_trace_id), then by its question text; the
    counts by kind, and of cases without a record, are printed. The -o file is what `check`
    reads.

    \b
    Example:
      spanguard cases run --cases evalset/cases.jsonl --outputs out.jsonl -o runs/now.json
      spanguard cases run --cases evalset/cases.jsonl --traces new_agent.jsonl -o runs/now.json
    """
    if (outputs is None) == (not traces):
        raise click.UsageError("give exactly one of --outputs or --traces.")
    if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
        raise click.BadParameter(
            f"must be in [0, 1], got {min_pass_rate}.", param_hint="--min-pass-rate"
        )
    case_list = load_cases(cases_path)
    records = load_outputs(outputs) if outputs is not None else outputs_from_traces(traces)
    for message in records.skipped:
        click.echo(f"skipped: {message}", err=True)
    result = run_cases(case_list, records)
    metrics = result.metrics
    if out is not None:
        write_text_atomic(out, result.to_json())
    table = render_metrics(metrics)
    click.echo(table)
    click.echo("\n" + render_matching(result.matching, len(case_list)))
    if case_list and result.matching["unmatched"] == len(case_list):
        click.echo(
            f"warning: no record in {(outputs or traces[0]).as_posix()} matched any of the "
            f"{len(case_list)} case(s) by case id, source_trace_id or question text; this run "
            "cannot serve as a baseline.",
            err=True,
        )
    if markdown is not None:
        write_text_atomic(markdown, table + "\n")
    if junit is not None:
        write_text_atomic(junit, run_junit(metrics, result.case_results))
    if out is not None:
        click.echo(f"\nwritten -> {out.as_posix()}")
    if metrics["failures"] and show_failures:
        click.echo("\nFailures:")
        for failure in metrics["failures"][:20]:
            detail = ", ".join(failure["failed_checks"]) or failure["reason"]
            click.echo(f"  {failure['case_id']}: {detail}")
        if len(metrics["failures"]) > 20:
            click.echo(f"  ... and {len(metrics['failures']) - 20} more")
    if min_pass_rate is not None and metrics["pass_rate"] < min_pass_rate:
        click.echo(
            f"\nFAIL: pass rate {metrics['pass_rate']:.2%} is below the required "
            f"{min_pass_rate:.2%}",
            err=True,
        )
        sys.exit(EXIT_FAILED)
