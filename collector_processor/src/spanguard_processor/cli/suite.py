"""``spanguard suite``: work with fairness suites outside ``spanguard run``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["suite"]


@click.group()
def suite() -> None:
    """Expand fairness suites for your own harness."""


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
    from ..fairness.suite import suite_variants
    from ..inputs import guard
    from ._common import check_files

    check_files([(guard.SUITE, suite_path)], [output])
    rows = suite_variants(suite_path)
    if output is None:
        sys.stdout.write("".join(dumps_line(row) + "\n" for row in rows))
        return
    count = write_jsonl(output, rows)
    click.echo(f"wrote {count} variant(s) to {output}")
