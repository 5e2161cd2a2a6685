"""``spanguard traces``: inspect and convert assembled agent traces."""

from __future__ import annotations

from pathlib import Path

import click

from ..formats import to_fairtrace_record, to_trace2eval_row
from ..jsonio import read_agent_traces, write_jsonl

__all__ = ["traces"]

_CONVERTERS = {
    "agent": lambda trace: trace.to_dict(),
    "fairtrace": to_fairtrace_record,
    "trace2eval": to_trace2eval_row,
}


@click.group()
def traces() -> None:
    """Inspect, validate and convert assembled agent traces."""


@traces.command()
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-f", "--format", "fmt", type=click.Choice(sorted(_CONVERTERS)), default="agent",
              show_default=True, help="Output format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="JSONL file to write (replaced atomically).")
def convert(source: Path, fmt: str, output: Path) -> None:
    """Validate the agent traces in SOURCE (JSONL) and write them in another format.

    \b
    Example:
      spanguard traces convert traces.jsonl --format fairtrace -o records.jsonl
    """
    converter = _CONVERTERS[fmt]
    rows = [converter(trace) for trace in read_agent_traces(source)]
    count = write_jsonl(output, rows)
    click.echo(f"wrote {count} {fmt} record(s) to {output}")
