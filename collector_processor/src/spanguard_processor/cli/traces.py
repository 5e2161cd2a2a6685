"""``spanguard traces``: inspect and convert assembled agent traces."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from ..common.jsonio import dumps_line
from ..traces.formats import to_fairtrace_record, to_trace2eval_row
from ..traces.model import AgentTrace
from ._common import BadInput, F, check_files, output_option, renamed

__all__ = ["traces"]

_CONVERTERS = {
    "agent": lambda trace: trace.to_dict(),
    "fairtrace": to_fairtrace_record,
    "trace2eval": to_trace2eval_row,
}
PARQUET = "parquet"  # one row per agent trace, typed columns (traces/parquet.py)


class _JsonlSink:
    """JSONL records of one format, written as they come (memory stays flat in the traces) to
    a temporary file that :meth:`close` puts in place and :meth:`abort` drops."""

    def __init__(self, path: Path, output_format: str) -> None:
        from ..common.writes import AtomicOutput, WriteFailed

        self.converter = _CONVERTERS[output_format]
        self.count = 0
        self._output = AtomicOutput(Path(path))
        try:
            self._file = open(self._output.temporary, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            self._output.abort()
            raise WriteFailed(self._output.path, exc) from None

    def add(self, trace: AgentTrace) -> None:
        from ..common.writes import WriteFailed

        try:
            self._file.write(dumps_line(self.converter(trace)) + "\n")
        except OSError as exc:  # no space left, an I/O error: a sentence, not a traceback
            raise WriteFailed(self._output.path, exc) from None
        self.count += 1

    def close(self) -> int:
        from ..common.writes import WriteFailed

        try:
            self._file.close()
        except OSError as exc:
            self._output.abort()
            raise WriteFailed(self._output.path, exc) from None
        self._output.commit()
        return self.count

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        self._output.abort()


def _open_sink(output_format: str, output: Path) -> Any:
    """Where the traces go: a Parquet file, else JSONL records of the format. Opening a
    Parquet sink fails first (exit 2, an install hint) when pyarrow is missing."""
    if output_format == PARQUET:
        from ..traces.parquet import ParquetSink

        return ParquetSink(output)
    return _JsonlSink(output, output_format)


_PRICES_HELP = (
    "JSON or YAML price table {model: {input, output}} in US dollars per million "
    "tokens: fills in cost_usd from token counts where the spans carry no cost."
)


def _output_format(command: F) -> F:
    """``-f/--output-format``: the written file's format (``--format``, its old spelling, is
    what every other command prints on stdout)."""
    choice = click.Choice(sorted([*_CONVERTERS, PARQUET]))
    command = renamed(
        "--format", target="output_format", renamed_to="--output-format", type=choice, default=None
    )(command)
    return click.option(
        "-f",
        "--output-format",
        type=choice,
        default="agent",
        show_default=True,
        help="Format of the written records: JSONL of agent traces, fairtrace records or "
        "trace2eval rows, or a Parquet file of one row per agent trace (needs "
        "'spanguard[warehouse]'; schema in docs/scale.md).",
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


class _Tally:
    """What an export read and left out, for the notes printed after it."""

    def __init__(self, skipped: list[str] | None) -> None:
        self.skipped = skipped
        self.orphans: list[str] = []
        self.lone: Counter[str] = Counter()
        self.total = 0
        self.without_input = 0

    def read(
        self, stores: Sequence[Path], *, include_pending: bool, skip_bad: bool
    ) -> Iterator[AgentTrace]:
        from ..inputs.readers import read_agent_traces_any

        for trace in read_agent_traces_any(
            list(stores),
            include_pending=include_pending,
            skip_bad=skip_bad,
            skipped=self.skipped,
            orphans=self.orphans,
        ):
            self.total += 1
            if trace.lone_span is not None:
                self.lone[trace.lone_span] += 1
            yield trace

    def notes(self) -> list[str]:
        notes = []
        if self.without_input:
            notes.append(
                f"left out {self.without_input} trace(s) without input text (record with "
                "content capture on to mine regression cases from them)"
            )
        if self.skipped:
            notes.append(
                f"skipped {len(self.skipped)} unreadable trace(s), annotation(s) or index "
                f"row(s); the first: {self.skipped[0]}"
            )
        if self.orphans:
            notes.append(
                f"left out {len(self.orphans)} trace(s) of log records only (their spans never "
                f"reached the store; e.g. trace {self.orphans[0]})"
            )
        lone = _lone_spans_note(self.lone, self.total)
        return [*notes, lone] if lone else notes


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
    price = _pricer(prices)
    sink = _open_sink(output_format, output)
    try:
        for trace in read_agent_traces_any([source]):
            sink.add(price(trace))
        _refuse_empty(sink.count, [source], allow_empty)
    except BaseException:
        sink.abort()
        raise
    count = sink.close()
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
    """Export the assembled traces of span stores as JSONL, or as Parquet (-f parquet).

    With -f trace2eval, traces recorded without input text (content capture off) cannot
    become regression cases; they are left out and counted. When many requests are a single
    parentless span (model calls with no parent span), their count by span name is printed.
    -f parquet writes one row per agent trace with typed columns (schema version in the
    file), for DuckDB, Polars, Spark or ClickHouse; it needs 'spanguard[warehouse]'.

    \b
    Example:
      spanguard traces export --store spans.db -f trace2eval -o logs.jsonl
      spanguard traces export --store a.db --store b.db -f fairtrace -o records.jsonl
      spanguard traces export --store spans.db -f trace2eval --prices prices.yaml -o logs.jsonl
      spanguard traces export --store spans.db -f parquet -o traces.parquet
    """
    from spanguard.exceptions import TraceFormatError

    for path in stores:
        if not path.exists():
            raise TraceFormatError("does not exist.", file=str(path))
    from ..inputs import guard

    check_files([(guard.TRACES, stores), (guard.DOCUMENT, prices)], [output])
    price = _pricer(prices)
    sink = _open_sink(output_format, output)
    tally = _Tally(skipped=[] if skip_bad else None)
    try:
        for trace in tally.read(stores, include_pending=include_pending, skip_bad=skip_bad):
            if output_format == "trace2eval" and (trace.input is None or not trace.input.strip()):
                tally.without_input += 1
                continue
            sink.add(price(trace))
        if not tally.without_input:
            _refuse_empty(sink.count, stores, allow_empty)
    except BaseException:
        sink.abort()
        raise
    count = sink.close()
    click.echo(f"wrote {count} {output_format} record(s) to {output}")
    for note in tally.notes():
        click.echo(note, err=True)
