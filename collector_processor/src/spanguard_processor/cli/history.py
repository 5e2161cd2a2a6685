"""``spanguard history``: the runs recorded in an output folder and each metric's trend."""

from __future__ import annotations

import json
from pathlib import Path

import click

__all__ = ["history"]


def _score(value: object) -> str:
    return "–" if not isinstance(value, int | float) else f"{value:.4f}"


@click.command()
@click.argument("directory", metavar="[DIR]", required=False, default=".",
                type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="What to print on stdout.")
def history(directory: Path, fmt: str) -> None:
    """List the runs recorded in DIR/history.jsonl and each metric's trend, per suite.

    DIR is an output folder of `spanguard run -o` or `spanguard fairness -o` (default: the
    current folder), or the history file itself. Runs of different suites (by the suite's
    SHA-256) are listed and trended separately, never mixed.

    \b
    Example:
      spanguard history reports/
    Exit codes: 0 listed, 2 no or damaged history.
    """
    from spanguard.exceptions import InputError

    from ..fairness.history import HISTORY_FILE, history_summary, load_history

    path = directory if directory.suffix in (".jsonl", ".json") else directory / HISTORY_FILE
    if not path.exists():
        raise InputError("there is no run history here; `spanguard run -o DIR` and "
                         "`spanguard fairness -o DIR` record one.", file=str(path))
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.HISTORY, path)])
    suites = history_summary(load_history(path))
    if fmt == "json":
        click.echo(json.dumps({"file": str(path), "suites": suites}, indent=2,
                              allow_nan=False))
        return
    for number, suite in enumerate(suites, start=1):
        digest = suite["suite_sha256"] or "unknown"
        click.echo(f"suite {number} (sha256 {digest[:12]}): {len(suite['runs'])} run(s)")
        for run in suite["runs"]:
            verdict = "PASSED" if run["passed"] else "FAILED: " + ", ".join(
                run["failed_metrics"])
            click.echo(f"  @{run['index']:<4} {run['label'] or '-':<14} "
                       f"{run['generated_at'] or '-':<27} {verdict}")
        for metric, scores in sorted(suite["metrics"].items()):
            click.echo(f"  trend {metric:<30} {' → '.join(_score(s) for s in scores)}")
