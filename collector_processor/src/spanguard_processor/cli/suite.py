"""``spanguard suite``: work with fairness suites outside ``spanguard run``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["echo_plan", "suite"]


@click.group()
def suite() -> None:
    """Expand fairness suites for your own harness, and plan their power."""


@suite.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL file to write (replaced atomically); default: standard output.")
def variants(suite_path: Path, output: Path | None) -> None:
    """Write every variant of SUITE as JSONL: one {id, seed_id, prompt, assignments} per line,
    in suite order.

    Send each prompt through your own stack inside spanguard.request(seed_id=...,
    variant_id=id, assignments=...), record the spans (e.g. with spanguard serve), and
    `spanguard fairness SUITE traces.jsonl` matches the traces to the variants.

    \b
    Example:
      spanguard suite variants fairness.yaml -o variants.jsonl
    """
    from ..common.jsonio import dumps_line, write_jsonl
    from ..fairness.design.suite import suite_variants
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.SUITE, suite_path)], [output])
    rows = suite_variants(suite_path)
    if output is None:
        sys.stdout.write("".join(dumps_line(row) + "\n" for row in rows))
        return
    count = write_jsonl(output, rows)
    click.echo(f"wrote {count} variant(s) to {output}")


@suite.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Calls per variant the run will make (as spanguard run --repeats).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Family-wise error rate of the gate.")
def plan(suite_path: Path, repeats: int, alpha: float) -> None:
    """Print each metric's design MDE on SUITE and the seeds it would need, without running
    anything.

    The design MDE is the smallest true gap the gate would detect 4 times in 5 on this suite
    (seeds × groups × repeats) when the app shows no variation of its own, at the worst-case
    variance of the metric's scale. A metric whose design MDE exceeds twice its threshold gets
    a warning with the number of seeds that would bring it there. `spanguard run` and
    `spanguard fairness` print the same table before they start.

    \b
    Example:
      spanguard suite plan fairness.yaml --repeats 3
    Exit codes: 0 the plan was printed (whatever it says), 2 bad input.
    """
    from ..fairness import load_suite
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.SUITE, suite_path)])
    echo_plan(load_suite(suite_path), repeats, alpha, err=False)


def echo_plan(suite_: Any, repeats: int, alpha: float, *, err: bool = True) -> None:
    """The suite's power table (``spanguard suite plan``); on stderr for run and fairness, so
    their stdout stays the verdict (and valid JSON with --format json)."""
    from ..fairness.design.plan import plan_lines, plan_suite

    for line in plan_lines(plan_suite(suite_, repeats, alpha)):
        click.echo(line, err=err)
