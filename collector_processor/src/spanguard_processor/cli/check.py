"""``spanguard check``: gate a run against a baseline (trace2eval tolerances and more)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..jsonio import write_text_atomic
from ..regression.gate import RULES, compare, load_metrics
from ..regression.render import check_junit, render_check
from . import EXIT_FAILED

__all__ = ["check"]

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option("--baseline", type=_FILE, required=True, help="Baseline metrics JSON.")
@click.option("--current", type=_FILE, required=True, help="Current metrics JSON.")
@click.option(
    "--tolerance-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Multiply every allowance; below 1 is stricter.",
)
@click.option("--markdown", type=_FILE, help="Also write the comparison as Markdown.")
@click.option("--junit", type=_FILE, help="Also write JUnit XML.")
def check(
    baseline: Path, current: Path, tolerance_scale: float, markdown: Path | None, junit: Path | None
) -> None:
    """Compare two metrics files; exit 1 on a regression.

    \b
    Example:
      spanguard check --baseline runs/baseline.json --current runs/current.json
    """
    base = load_metrics(baseline)
    cur = load_metrics(current)
    comparison = compare(base, cur, tolerance_scale)
    text = render_check(base.values, cur.values, comparison)
    click.echo(text)
    if markdown is not None:
        write_text_atomic(markdown, text + "\n")
    if junit is not None:
        write_text_atomic(junit, check_junit(comparison, [rule[0] for rule in RULES]))
    if comparison.violations:
        click.echo(f"\nFAIL: {len(comparison.violations)} regression(s) detected", err=True)
        sys.exit(EXIT_FAILED)
    click.echo("\nPASS: no regressions detected")
