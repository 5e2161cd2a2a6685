"""``spanguard init``: write a starter fairness suite."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

__all__ = ["init"]


@click.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("fairness.yaml"), show_default=True,
              help="Suite file to create (.yaml/.yml for YAML, anything else JSON).")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init(output: Path, force: bool) -> None:
    """Write a starter fairness suite: eight templates × three groups, five metrics.

    \b
    Example:
      spanguard init -o fairness.yaml && spanguard run fairness.yaml --app myapp:answer
    """
    from ..common.jsonio import write_text_atomic
    from ..fairness.suite import starter_suite
    from ._common import BadInput

    if output.exists() and not force:
        raise BadInput(f"{output} already exists; pass --force to overwrite it.")
    suite = starter_suite()
    if output.suffix.lower() in {".yaml", ".yml"}:
        text = yaml.safe_dump(suite, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(suite, indent=2) + "\n"
    write_text_atomic(output, text)
    click.echo(f"wrote a starter suite to {output}")
