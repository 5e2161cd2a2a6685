"""``--source``, ``--since``, ``--until`` and ``--explain``: an evaluator reads the engine the
spans already live in (the Collector ClickHouse exporter's tables, or Parquet of its columns)
instead of files (:mod:`spanguard_processor.inputs.sql_source`)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # the readers load the engines' modules: imported when a command runs
    from ..inputs.evaluation import RecordedTraces

__all__ = [
    "WAREHOUSE_HINT",
    "check_source_usage",
    "read_source_traces",
    "recorded_traces",
    "source_evaluation",
    "source_options",
]

WAREHOUSE_HINT = "pip install 'spanguard[warehouse]'"
_NEEDS = {"parquet": ("duckdb", "pyarrow"), "clickhouse": ("clickhouse_connect", "pyarrow")}


def _moment(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a time (ISO 8601: 2026-12-01 or 2026-12-01T08:00:00Z)."
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


_OPTIONS = (
    click.option(
        "--source",
        metavar="URL",
        help="Read the spans from an engine instead of input files: "
        "clickhouse://HOST[:PORT]/DB?traces=otel_traces&logs=otel_logs (the Collector "
        "ClickHouse exporter's tables) or parquet://PATH (a file or folder of Parquet with "
        "its columns, read by DuckDB). Needs spanguard[warehouse].",
    ),
    click.option(
        "--since", metavar="TIME", callback=_moment, help="With --source: spans from TIME (UTC)."
    ),
    click.option(
        "--until",
        metavar="TIME",
        callback=_moment,
        help="With --source: spans before TIME (UTC). ClickHouse needs --since and --until.",
    ),
    click.option(
        "--explain", is_flag=True, help="With --source: print the SQL the engine runs, and stop."
    ),
)


def source_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--source``, ``--since``, ``--until`` and ``--explain`` to ``command``."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def _check_installed(kind: str) -> None:
    missing = [m for m in _NEEDS[kind] if importlib.util.find_spec(m) is None]
    if missing:
        click.echo(
            f"spanguard: --source {kind}:// needs {', '.join(missing)}, which is not installed; "
            f"install it with: {WAREHOUSE_HINT}",
            err=True,
        )
        raise SystemExit(2)


def check_source_usage(
    inputs: tuple[Any, ...], source: str | None, window: bool, inputs_name: str = "TRACES..."
) -> None:
    """Either ``inputs`` or ``--source``, never both; ``window`` (``--since``, ``--until``,
    ``--explain``) only with ``--source``. A usage error (exit 2) otherwise."""
    if source is None:
        if not inputs:
            raise click.UsageError(f"give {inputs_name} or --source URL.")
        if window:
            raise click.UsageError("--since, --until and --explain go with --source.")
    elif inputs:
        raise click.UsageError(f"give {inputs_name} or --source, not both.")


def _engine(source: str, since: datetime | None, until: datetime | None) -> tuple[Any, Any]:
    """The parsed ``--source`` and its engine (usage errors: exit 2)."""
    from ..inputs.sql_source import open_engine, parse_source

    spec = parse_source(source)
    _check_installed(spec.kind)
    if spec.kind == "clickhouse" and (since is None or until is None):
        raise click.UsageError(
            "--source clickhouse:// needs --since and --until (the exporter's tables are "
            "ordered by time: a read without a window scans every partition)."
        )
    return spec, open_engine(spec)


def source_evaluation(
    suite: Any,
    inputs: tuple[Any, ...],
    options: tuple[Any, Any, Any, bool],
    config: Any,
    stream: bool,
) -> tuple[Any, int, int] | None:
    """With ``--source`` and ``--stream`` (``options``: source, since, until, explain) and a
    suite whose every metric the engine reduces (``stats.sufficient_sql.SQL_VALUES``): the
    gate's evaluation of the table the engine fills (``fairness.table_sql``), no agent trace built
    in Python, with the records matching no variant and the variants without a record. None
    otherwise (the agent traces are read instead; a note says why)."""
    source, since, until, explain = options
    if source is None or inputs or explain or not stream:
        return None
    from ..fairness.stats.sufficient_sql import SQL_VALUES
    from ..inputs.sql_source import check_columns, fetch_columns, window_ns

    spec, engine = _engine(source, since, until)
    check_columns(engine)  # a table that is not the exporter's: one error, before any note
    names = [mc.type for mc in suite.metrics]
    other = sorted({n for n in names if n not in SQL_VALUES})
    if other:
        click.echo(
            f"note: {', '.join(other)} not reduced in SQL: the agent traces are mapped and "
            "evaluated in Python.",
            err=True,
        )
        return None
    from ..fairness.evaluate_table import evaluate_sufficient
    from ..fairness.records import group_label
    from ..fairness.table_sql import suite_table, suite_table_sql

    start, end = window_ns(since), window_ns(until)
    sql = suite_table_sql(engine.dialect, engine.source, names, since=start, until=end)
    got = suite_table(lambda text: fetch_columns(engine, text), sql, suite)
    if got.table is None:
        click.echo(f"note: {got.reason}: the agent traces are read instead.", err=True)
        return None
    table = got.table
    click.echo(
        f"note: {sum(c.records for c in table.observed)} record(s) from {spec.text} reduced "
        f"in {engine.dialect} to the gate's table ({len(table.cells)} cells).",
        err=True,
    )
    seen = {(c.seed_id, c.group) for c in table.observed}
    missing = sum(1 for v in suite.variants if (v.seed_id, group_label(v.assignments)) not in seen)
    return evaluate_sufficient(table, suite, config), table.unmatched, missing


def read_source_traces(
    inputs: tuple[Any, ...],
    source: str | None,
    since: datetime | None,
    until: datetime | None,
    explain: bool,
    *,
    outcomes: bool = False,
    inputs_name: str = "TRACES...",
) -> list[Any] | None:
    """The agent traces of ``--source`` (None without it, when ``inputs`` are read instead);
    with ``--explain`` the SQL is printed and the command stops. ``outcomes``: with their
    feedback, retry marks, expectations and response ids (case mining, ``cases run``)."""
    check_source_usage(inputs, source, bool(since or until or explain), inputs_name)
    if source is None:
        return None
    from ..inputs.sql_source import read_source

    spec, engine = _engine(source, since, until)
    read = read_source(engine, since=since, until=until, explain_only=explain, outcomes=outcomes)
    if explain:
        click.echo(read.sql, nl=False)
        raise SystemExit(0)
    click.echo(
        f"note: {len(read.traces)} agent trace(s) from {spec.text}: {read.mapped} mapped in "
        f"SQL, {read.converted} converted from their spans.",
        err=True,
    )
    return read.traces


def recorded_traces(
    inputs: tuple[Any, ...],
    source: str | None,
    since: datetime | None,
    until: datetime | None,
    explain: bool,
    *,
    inputs_name: str,
) -> RecordedTraces | None:
    """``--source``'s agent traces with their outcomes, as the
    :class:`~spanguard_processor.inputs.evaluation.RecordedTraces` case mining and suite
    mining read (None without ``--source``)."""
    traces = read_source_traces(
        inputs, source, since, until, explain, outcomes=True, inputs_name=inputs_name
    )
    if traces is None:
        return None
    from ..inputs.evaluation import RecordedTraces
    from ..inputs.sql_source import parse_source

    return RecordedTraces(parse_source(str(source)).text, tuple(traces))
