"""``spanguard init``: write a starter fairness suite."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._common import output_option

__all__ = ["init"]


@click.command()
@output_option(
    default=Path("fairness.yaml"),
    show_default=True,
    help="Suite file to create (.yaml/.yml for YAML, anything else JSON).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init(output: Path, force: bool) -> None:
    """Write a starter fairness suite that a fair app can pass: 16 questions × 6 channels
    (96 seeds) × 3 groups, two gating text metrics and five optional process metrics, each
    with a comment saying what it catches (`spanguard suite plan` shows its power).

    \b
    Example:
      spanguard init -o fairness.yaml && spanguard run fairness.yaml --app myapp:answer
    """
    from ..common.jsonio import write_text_atomic
    from ..fairness.design.starter import starter_suite, starter_suite_yaml
    from ._common import BadInput

    if output.exists() and not force:
        raise BadInput(f"{output} already exists; pass --force to overwrite it.")
    if output.suffix.lower() in {".yaml", ".yml"}:
        text = starter_suite_yaml()
    else:
        text = json.dumps(starter_suite(), indent=2) + "\n"
    write_text_atomic(output, text)
    click.echo(f"wrote a starter suite to {output}")
