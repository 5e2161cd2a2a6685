"""``spanguard traces``: inspect and convert assembled agent traces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from ..common.jsonio import write_jsonl
from ..traces.formats import to_fairtrace_record, to_trace2eval_row
from ..traces.model import AgentTrace
from ._common import refuse_overwrite

__all__ = ["traces"]

_CONVERTERS = {
    "agent": lambda trace: trace.to_dict(),
    "fairtrace": to_fairtrace_record,
    "trace2eval": to_trace2eval_row,
}


_PRICES_HELP = ("JSON or YAML price table {model: {input, output}} in US dollars per million "
                "tokens: fills in cost_usd from token counts where the spans carry no cost.")


def _pricer(prices: Path | None) -> Callable[[AgentTrace], AgentTrace]:
    if prices is None:
        return lambda trace: trace
    from ..traces.pricing import apply_prices, load_prices

    table = load_prices(prices)
    return lambda trace: apply_prices(trace, table)


@click.group()
def traces() -> None:
    """Convert agent-trace JSONL, and export assembled traces from span stores."""


@traces.command()
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-f", "--format", "fmt", type=click.Choice(sorted(_CONVERTERS)), default="agent",
              show_default=True, help="Output format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="JSONL file to write (replaced atomically).")
@click.option("--prices", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help=_PRICES_HELP)
def convert(source: Path, fmt: str, output: Path, prices: Path | None) -> None:
    """Validate the agent traces in SOURCE (JSONL) and write them in another format.

    SOURCE may also be a span file or store: its traces are assembled first, as `export` does.

    \b
    Example:
      spanguard traces convert traces.jsonl --format fairtrace -o records.jsonl
    """
    from ..inputs.readers import read_agent_traces_any

    refuse_overwrite([source, prices], [output])
    converter = _CONVERTERS[fmt]
    price = _pricer(prices)
    rows = [converter(price(trace)) for trace in read_agent_traces_any([source])]
    count = write_jsonl(output, rows)
    click.echo(f"wrote {count} {fmt} record(s) to {output}")


@traces.command()
@click.option("--store", "stores", type=click.Path(path_type=Path),
              multiple=True, required=True,
              help="A span store, a span file, a folder of span files or agent-trace JSONL; "
                   "repeat to read several (e.g. one store per processor replica).")
@click.option("-f", "--format", "fmt", type=click.Choice(sorted(_CONVERTERS)), default="agent",
              show_default=True, help="Output format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="JSONL file to write (replaced atomically).")
@click.option("--include-pending", is_flag=True,
              help="Also export traces still in flight in a store (marked partial).")
@click.option("--skip-bad", is_flag=True,
              help="Skip (and count) traces with unreadable spans in a damaged store, and bad "
                   "lines of span files, instead of stopping at the first.")
@click.option("--prices", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help=_PRICES_HELP)
def export(stores: tuple[Path, ...], fmt: str, output: Path, include_pending: bool,
           skip_bad: bool, prices: Path | None) -> None:
    """Export the assembled traces of span stores as JSONL.

    With --format trace2eval, traces recorded without input text (content capture off) cannot
    become regression cases; they are left out and counted.

    \b
    Example:
      spanguard traces export --store spans.db --format trace2eval -o logs.jsonl
      spanguard traces export --store a.db --store b.db -f fairtrace -o records.jsonl
      spanguard traces export --store spans.db -f trace2eval --prices prices.yaml -o logs.jsonl
    """
    from spanguard.exceptions import TraceFormatError

    from ..inputs.readers import read_agent_traces_any

    for path in stores:
        if not path.exists():
            raise TraceFormatError("does not exist.", file=str(path))
    refuse_overwrite([*stores, prices], [output])
    converter = _CONVERTERS[fmt]
    price = _pricer(prices)
    rows = []
    without_input = 0
    skipped: list[str] | None = [] if skip_bad else None
    for trace in read_agent_traces_any(list(stores), include_pending=include_pending,
                                       skip_bad=skip_bad, skipped=skipped):
        if fmt == "trace2eval" and (trace.input is None or not trace.input.strip()):
            without_input += 1
            continue
        rows.append(converter(price(trace)))
    count = write_jsonl(output, rows)
    click.echo(f"wrote {count} {fmt} record(s) to {output}")
    if without_input:
        click.echo(f"left out {without_input} trace(s) without input text (record with content "
                   "capture on to mine regression cases from them)", err=True)
    if skipped:
        click.echo(f"skipped {len(skipped)} unreadable trace(s), annotation(s) or index row(s); "
                   "the first: "
                   f"{skipped[0]}", err=True)
