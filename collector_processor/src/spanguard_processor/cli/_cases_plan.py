"""``spanguard cases plan``: a replay's app calls and each metric's smallest detectable change,
before any call is made (as ``suite plan`` does for fairness suites)."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import check_files

__all__ = ["DEFAULT_REPEATS", "echo_replay_plan", "plan"]

#: The replay size the calibration bench measured (docs/regression.md, "Check").
DEFAULT_REPEATS = 16


def echo_replay_plan(cases_path: Path, repeats: int, *, err: bool = False) -> None:
    """The plan's lines, for ``cases plan`` and, before its first call, the replay."""
    from ..regression.gate.plan import plan_lines, plan_replay  # scipy: loaded when run
    from ..regression.run.run import load_cases

    for line in plan_lines(plan_replay(load_cases(cases_path), repeats)):
        click.echo(line, err=err)


@click.command()
@click.option(
    "--cases",
    "cases_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="cases.jsonl.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=DEFAULT_REPEATS,
    show_default=True,
    help="Calls of the app per case and version.",
)
def plan(cases_path: Path, repeats: int) -> None:
    """Print how many app calls replaying the cases makes, and the smallest change each
    metric of `check` can detect at that size (80% power, one-sided 5%).

    \b
    Example:
      spanguard cases plan --cases evalset/cases.jsonl --repeats 16
    """
    from ..inputs import guard

    check_files([(guard.CASES, cases_path)], [])
    echo_replay_plan(cases_path, repeats)
