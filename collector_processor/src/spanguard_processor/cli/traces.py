"""``spanguard traces``: inspect and convert assembled agent traces."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from ..common.jsonio import write_jsonl
from ..traces.formats import to_fairtrace_record, to_trace2eval_row
from ..traces.model import AgentTrace
from ._common import BadInput, F, check_files, output_option, renamed

__all__ = ["traces"]

_CONVERTERS = {
    "agent": lambda trace: trace.to_dict(),
    "fairtrace": to_fairtrace_record,
    "trace2eval": to_trace2eval_row,
}


_PRICES_HELP = (
    "JSON or YAML price table {model: {input, output}} in US dollars per million "
    "tokens: fills in cost_usd from token counts where the spans carry no cost."
)


def _output_format(command: F) -> F:
    """``-f/--output-format``: the written file's format (``--format``, its old spelling, is
    what every other command prints on stdout)."""
    choice = click.Choice(sorted(_CONVERTERS))
    command = renamed(
        "--format", target="output_format", renamed_to="--output-format", type=choice, default=None
    )(command)
    return click.option(
        "-f",
        "--output-format",
        type=choice,
        default="agent",
        show_default=True,
        help="Format of the written records.",
    )(command)


_EMPTY_HELP = (
    "Write an empty file when the input holds no traces (by default that is an error, exit 2)."
)


def _refuse_empty(count: int, sources: Sequence[Path], allow_empty: bool) -> None:
    if not count and not allow_empty:
        names = ", ".join(str(path) for path in sources)
        raise BadInput(
            f"no records in {names}: it holds no agent traces. Pass --allow-empty "
            "to write an empty file anyway."
        )


def _pricer(prices: Path | None) -> Callable[[AgentTrace], AgentTrace]:
    if prices is None:
        return lambda trace: trace
    from ..traces.pricing import apply_prices, load_prices

    table = load_prices(prices)
    return lambda trace: apply_prices(trace, table)


_LONE_SHARE = 0.25  # say so when at least this share of the requests are lone spans
_LONE_NAMES = 5  # span names listed


def _lone_spans_note(lone: Counter[str], total: int) -> str | None:
    """The diagnostic for requests that are one parentless span each, when they are many."""
    count = sum(lone.values())
    if count < 2 or count < _LONE_SHARE * total:
        return None
    names = sorted(lone.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{name!r} {n}" for name, n in names[:_LONE_NAMES])
    more = f", {len(names) - _LONE_NAMES} more name(s)" if len(names) > _LONE_NAMES else ""
    return (
        f"{count} of {total} request(s) are a single parentless span ({listed}{more}): "
        "each model or tool call became a request of its own. Put each request's calls "
        "under one parent span (spanguard.request, or the framework's agent span) or give "
        "them one session id; see docs/adapters.md#one-request-per-parent-span"
    )


@dataclass
class _Seen:
    """What an export met besides the rows it wrote."""

    total: int = 0
    without_input: int = 0
    lone: Counter[str] = field(default_factory=Counter)


@click.group()
def traces() -> None:
    """Convert agent-trace JSONL, and export assembled traces from span stores."""


@traces.command()
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@_output_format
@output_option(required=True, help="JSONL file to write (replaced atomically).")
@click.option(
    "--prices", type=click.Path(dir_okay=False, exists=True, path_type=Path), help=_PRICES_HELP
)
@click.option("--allow-empty", is_flag=True, help=_EMPTY_HELP)
def convert(
    source: Path, output_format: str, output: Path, prices: Path | None, allow_empty: bool
) -> None:
    """Validate the agent traces in SOURCE (JSONL) and write them in another format.

    SOURCE may also be a span file or store: its traces are assembled first, as `export` does.

    \b
    Example:
      spanguard traces convert traces.jsonl --output-format fairtrace -o records.jsonl
    """
    from ..inputs import guard
    from ..inputs.readers import read_agent_traces_any

    check_files([(guard.TRACES, source), (guard.DOCUMENT, prices)], [output])
    converter = _CONVERTERS[output_format]
    price = _pricer(prices)
    rows = (converter(price(trace)) for trace in read_agent_traces_any([source]))
    count = write_jsonl(
        output, rows, check=lambda written: _refuse_empty(written, [source], allow_empty)
    )
    click.echo(f"wrote {count} {output_format} record(s) to {output}")


@traces.command()
@click.option(
    "--store",
    "stores",
    type=click.Path(path_type=Path),
    multiple=True,
    required=True,
    help="A span store, a span file, a folder of span files or agent-trace JSONL; "
    "repeat to read several (e.g. one store per processor replica).",
)
@_output_format
@output_option(required=True, help="JSONL file to write (replaced atomically).")
@click.option(
    "--include-pending",
    is_flag=True,
    help="Also export traces still in flight in a store (marked partial).",
)
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Skip (and count) traces with unreadable spans in a damaged store, and bad "
    "lines of span files, instead of stopping at the first.",
)
@click.option(
    "--prices", type=click.Path(dir_okay=False, exists=True, path_type=Path), help=_PRICES_HELP
)
@click.option("--allow-empty", is_flag=True, help=_EMPTY_HELP)
def export(
    stores: tuple[Path, ...],
    output_format: str,
    output: Path,
    include_pending: bool,
    skip_bad: bool,
    prices: Path | None,
    allow_empty: bool,
) -> None:
    """Export the assembled traces of span stores as JSONL.

    With -f trace2eval, traces recorded without input text (content capture off) cannot
    become regression cases; they are left out and counted. When many requests are a single
    parentless span (model calls with no parent span), their count by span name is printed.

    \b
    Example:
      spanguard traces export --store spans.db -f trace2eval -o logs.jsonl
      spanguard traces export --store a.db --store b.db -f fairtrace -o records.jsonl
      spanguard traces export --store spans.db -f trace2eval --prices prices.yaml -o logs.jsonl
    """
    from spanguard.exceptions import TraceFormatError

    from ..inputs.readers import read_agent_traces_any

    for path in stores:
        if not path.exists():
            raise TraceFormatError("does not exist.", file=str(path))
    from ..inputs import guard

    check_files([(guard.TRACES, stores), (guard.DOCUMENT, prices)], [output])
    converter = _CONVERTERS[output_format]
    price = _pricer(prices)
    seen = _Seen()
    skipped: list[str] | None = [] if skip_bad else None
    orphans: list[str] = []

    def rows() -> Iterator[object]:  # written as they come: memory stays flat
        for trace in read_agent_traces_any(
            list(stores),
            include_pending=include_pending,
            skip_bad=skip_bad,
            skipped=skipped,
            orphans=orphans,
        ):
            seen.total += 1
            if trace.lone_span is not None:
                seen.lone[trace.lone_span] += 1
            if output_format == "trace2eval" and (trace.input is None or not trace.input.strip()):
                seen.without_input += 1
                continue
            yield converter(price(trace))

    def check(written: int) -> None:
        if not seen.without_input:
            _refuse_empty(written, stores, allow_empty)

    count = write_jsonl(output, rows(), check=check)
    click.echo(f"wrote {count} {output_format} record(s) to {output}")
    _echo_notes(seen, skipped, orphans)


def _echo_notes(seen: _Seen, skipped: list[str] | None, orphans: list[str]) -> None:
    """What an export left out, and why, on stderr."""
    if seen.without_input:
        click.echo(
            f"left out {seen.without_input} trace(s) without input text (record with content "
            "capture on to mine regression cases from them)",
            err=True,
        )
    if skipped:
        click.echo(
            f"skipped {len(skipped)} unreadable trace(s), annotation(s) or index row(s); "
            "the first: "
            f"{skipped[0]}",
            err=True,
        )
    if orphans:
        click.echo(
            f"left out {len(orphans)} trace(s) of log records only (their spans never reached "
            f"the store; e.g. trace {orphans[0]})",
            err=True,
        )
    note = _lone_spans_note(seen.lone, seen.total)
    if note:
        click.echo(note, err=True)
