"""``spanguard compare``: did the candidate's fairness regress against the baseline?"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._common import exit_gate, renamed, renamed_arguments

__all__ = ["compare"]


_REPORT = click.Path(path_type=Path)


@click.command()
@click.option(
    "--baseline", type=_REPORT, metavar="REPORT", help="The baseline's report (required)."
)
@click.option(
    "--current",
    type=_REPORT,
    metavar="REPORT",
    help="The candidate's report, compared against the baseline (required).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="What to print on stdout.",
)
@click.option(
    "--min-change",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Smallest worsening that can count as a regression.",
)
@renamed(
    "--tolerance",
    target="min_change",
    renamed_to="--min-change",
    type=click.FloatRange(min=0.0),
    default=None,
)
@renamed_arguments(
    "baseline",
    "current",
    usage="--baseline BASELINE --current CANDIDATE",
    metavars=("BASELINE", "CANDIDATE"),
)
def compare(baseline: Path, current: Path, fmt: str, min_change: float) -> None:
    """Compare two fairness reports: report.json files, the directories holding them, or a
    run of a history (history.jsonl@N).

    A metric regresses when the candidate is worse by more than the noise (the two reports'
    intervals) and past its threshold, or when its verdict gets worse: PASS to INCONCLUSIVE,
    NO_SIGNAL or FAIL, anything to FAIL, or anything to NO_SIGNAL (the signal was lost).

    \b
    Example:
      spanguard compare --baseline reports/main --current reports/pr-123 --format markdown
    Exit codes: 0 no regression, 1 regression, 2 bad input.
    """
    from ..fairness.report.compare import (
        compare_reports,
        load_report,
        render_comparison_markdown,
        signed,
        verdicts_text,
    )
    from ..fairness.report.verdict_text import number
    from ..inputs import guard
    from ._common import check_files

    # a history.jsonl@N reference names no file as such: its file is checked when read
    check_files([(guard.REPORT, [p for p in (baseline, current) if p.exists()])])
    result = compare_reports(load_report(baseline), load_report(current), tolerance=min_change)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    elif fmt == "markdown":
        click.echo(render_comparison_markdown(result), nl=False)
    else:
        for row in result.rows:
            if row.get("status") == "missing":
                click.echo(f"MISSING    {row['metric']}")
                continue
            tag = "REGRESSED" if row["regressed"] else "ok"
            click.echo(
                f"{tag:<10} {row['metric']:<30} {number(row['baseline_score'])} -> "
                f"{number(row['candidate_score'])} (delta {signed(row['delta'])}, noise "
                f"{number(row['noise_margin'])})  {verdicts_text(row)}"
                + (f": {row['reason']}" if row["regressed"] else "")
            )
    regressed = result.regressed
    click.echo(
        "no fairness regression"
        if not regressed
        else f"fairness regressed: {', '.join(regressed)}",
        err=fmt != "text",
    )
    exit_gate(not regressed)
