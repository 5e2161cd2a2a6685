"""``spanguard history``: the runs recorded in an output folder and each metric's trend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

__all__ = ["history"]


@click.command()
@click.argument(
    "directory", metavar="[DIR]", required=False, default=".", type=click.Path(path_type=Path)
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="What to print on stdout.",
)
def history(directory: Path, fmt: str) -> None:
    """List the runs recorded in DIR and below it, and each metric's trend, per suite.

    DIR is an output folder of `spanguard run -o` or `spanguard fairness -o` (default: the
    current folder), a folder holding several of them (reports/main, reports/pr: each is
    listed on its own), or a history file itself. Each run shows its gate verdict; each trend
    the metric's score and verdict (PASS, FAIL, INCONCLUSIVE, NO_SIGNAL) run by run. Runs of
    different suites (by the suite's SHA-256) are listed and trended separately, never mixed.

    \b
    Example:
      spanguard history reports/
    Exit codes: 0 listed, 2 no or damaged history.
    """
    from spanguard.exceptions import InputError

    from ..fairness.report.history import (
        HISTORY_FILE,
        find_histories,
        history_summary,
        load_history,
    )
    from ..inputs import guard
    from ._common import check_files

    if directory.suffix in (".jsonl", ".json"):
        paths = [directory] if directory.exists() else []
    else:
        paths = find_histories(directory) if directory.is_dir() else []
    if not paths:
        where = directory if directory.suffix in (".jsonl", ".json") else directory / HISTORY_FILE
        raise InputError(
            "there is no run history here or below it; `spanguard run -o DIR` "
            "and `spanguard fairness -o DIR` record one.",
            file=str(where),
        )
    check_files([(guard.HISTORY, paths)])
    histories: list[dict[str, Any]] = [
        {"file": str(path), "suites": history_summary(load_history(path))} for path in paths
    ]
    if fmt == "json":
        click.echo(json.dumps({"histories": histories}, indent=2, allow_nan=False))
        return
    nested = len(paths) > 1 or paths[0].parent != directory
    for item in histories:
        if nested:
            click.echo(f"{item['file']}:")
        for line in _suite_lines(item["suites"]):
            click.echo(("  " if nested else "") + line)


def _suite_lines(suites: list[dict[str, Any]]) -> list[str]:
    from ..fairness.report.history import run_verdict, trend_points

    lines = []
    for number, suite in enumerate(suites, start=1):
        digest = suite["suite_sha256"] or "unknown"
        lines.append(f"suite {number} (sha256 {digest[:12]}): {len(suite['runs'])} run(s)")
        for run in suite["runs"]:
            lines.append(
                f"  @{run['index']:<4} {run['label'] or '-':<14} "
                f"{run['generated_at'] or '-':<27} {run_verdict(run)}"
            )
        for metric, scores in sorted(suite["metrics"].items()):
            verdicts = suite["verdicts"].get(metric, [None] * len(scores))
            lines.append(f"  trend {metric:<30} {trend_points(scores, verdicts)}")
    return lines
