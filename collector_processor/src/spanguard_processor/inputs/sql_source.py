"""Agent traces from the engine the spans already live in: ClickHouse, or Parquet via DuckDB.

A source is named by a URL (:func:`parse_source`): ``clickhouse://HOST[:PORT]/DB?traces=…
&logs=…`` (the Collector ClickHouse exporter's tables, read with clickhouse-connect; tests
pass a chDB session, the same engine) or ``parquet://PATH`` (files or a folder of the
exporter's columns, read by DuckDB). :func:`read_source` checks the table's columns, runs the
SQL map (:mod:`spanguard_processor.traces.sqlmap`) in the engine and finishes each row in
Python; the few traces that need a rule the map leaves to Python are read back as spans and
converted by the one conversion. DuckDB, pyarrow and clickhouse-connect come with the
``warehouse`` extra.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from spanguard.exceptions import InputError

from ..ingest.spans import SpanRecord
from ..traces.annotations import Annotations
from ..traces.convert import annotated_trace
from ..traces.model import AgentTrace
from ..traces.sqlmap import agent_trace, map_sql, spans_sql, typed_span
from .sql_outcome import outcome_sql, with_outcomes
from .sql_schema import EVENT_COLUMNS, TRACE_COLUMNS

__all__ = [
    "Engine",
    "SourceRead",
    "SqlSource",
    "check_columns",
    "fetch_columns",
    "open_engine",
    "parse_source",
    "read_source",
    "window_ns",
]

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class SqlSource:
    """Where the spans are: a ClickHouse database's exporter tables, or Parquet files."""

    kind: str  # "clickhouse" or "parquet"
    text: str  # the URL as given, without its password
    host: str = ""
    port: int | None = None
    database: str = "otel"
    traces: str = "otel_traces"
    logs: str = "otel_logs"
    user: str | None = None
    password: str | None = None
    secure: bool = False
    paths: tuple[Path, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()  # DuckDB's threads / memory_limit from the URL

    @property
    def table(self) -> str:
        return f"{self.database}.{self.traces}"


def parse_source(text: str) -> SqlSource:
    """A ``clickhouse://`` or ``parquet://`` URL; anything else is an :class:`InputError`."""
    parts = urlsplit(text)
    shown = text.replace(f":{parts.password}@", ":***@") if parts.password else text
    if parts.scheme == "parquet":
        path = Path(unquote(parts.netloc + parts.path))
        files = tuple(sorted(path.rglob("*.parquet"))) if path.is_dir() else (path,)
        missing = [p for p in files if not p.is_file()]
        if missing or not files:
            raise InputError("no Parquet file there.", file=str(missing[0] if missing else path))
        return SqlSource("parquet", shown, paths=files, settings=_duckdb_settings(parts.query))
    if parts.scheme not in ("clickhouse", "clickhouses"):
        raise InputError(f"source {shown!r} is neither clickhouse://HOST/DB nor parquet://PATH.")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    names = [query.get("traces", "otel_traces"), query.get("logs", "otel_logs")]
    database = parts.path.strip("/") or "otel"
    for name in (database, *names):
        if not name.replace("_", "").isalnum():
            raise InputError(f"source {shown!r}: {name!r} is not a table or database name.")
    try:
        port = parts.port
    except ValueError:
        raise InputError(f"source {shown!r}: the port is not a number.") from None
    return SqlSource(
        "clickhouse",
        shown,
        host=parts.hostname or "localhost",
        port=port,
        database=database,
        traces=names[0],
        logs=names[1],
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        secure=parts.scheme == "clickhouses" or query.get("secure") == "true",
    )


_SETTINGS = {
    "threads": re.compile(r"[1-9][0-9]{0,3}"),
    "memory_limit": re.compile(r"[0-9]+(\.[0-9]+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)"),
}


def _duckdb_settings(query: str) -> tuple[tuple[str, str], ...]:
    """``?threads=N&memory_limit=800MB`` of a ``parquet://`` URL: DuckDB's own settings."""
    out = []
    for key, values in sorted(parse_qs(query).items()):
        value = values[-1]
        pattern = _SETTINGS.get(key)
        if pattern is None or not pattern.fullmatch(value):
            raise InputError(
                f"source parquet://…?{key}={value}: the URL takes threads=N and "
                "memory_limit=SIZE (e.g. 800MB) only."
            )
        out.append((key, value))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Engine:
    """One engine: its dialect, the table expression the map reads, and how a query runs
    (SQL in, rows out as dicts; or ``fetch``: columns out as lists, through Arrow) and which
    columns the table has."""

    dialect: str
    source: str
    run: Callable[[str], list[dict[str, Any]]]
    columns: Callable[[], set[str]]
    where: str
    fetch: Callable[[str], dict[str, list[Any]]]


def _lists(table: Any) -> dict[str, list[Any]]:
    """A ``pyarrow.Table`` as one Python list per column."""
    return {name: table.column(name).to_pylist() for name in table.column_names}


def _duckdb(source: SqlSource) -> Engine:
    import duckdb

    con = duckdb.connect()
    # every query orders its result: the scan need not keep the files' row order
    con.execute("SET preserve_insertion_order = false")
    for key, value in source.settings:  # checked by _duckdb_settings
        con.execute(f"SET {key} = '{value}'")
    files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in source.paths)
    table = f"read_parquet([{files}])"

    def run(sql: str) -> list[dict[str, Any]]:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def columns() -> set[str]:
        return {str(row["column_name"]) for row in run(f"DESCRIBE SELECT * FROM {table}")}

    def fetch(sql: str) -> dict[str, list[Any]]:
        return _lists(con.sql(sql).to_arrow_table())

    return Engine("duckdb", table, run, columns, str(source.paths[0]), fetch)


def clickhouse_engine(source: SqlSource, query: Callable[[str], Any]) -> Engine:
    """An engine over a ClickHouse connection: ``query`` runs one SQL statement and returns
    a ``pyarrow.Table`` (clickhouse-connect's ``query_arrow``, a chDB session's
    ``query(sql, "ArrowTable")``)."""

    def run(sql: str) -> list[dict[str, Any]]:
        return list(query(sql).to_pylist())

    def columns() -> set[str]:
        rows = run(
            "SELECT name FROM system.columns WHERE database = "
            f"'{source.database}' AND table = '{source.traces}'"
        )
        return {str(row["name"]) for row in rows}

    return Engine(
        "clickhouse", source.table, run, columns, source.table, lambda sql: _lists(query(sql))
    )


def open_engine(source: SqlSource) -> Engine:
    """The engine for ``source``: DuckDB over its files, or a ClickHouse connection."""
    if source.kind == "parquet":
        return _duckdb(source)
    import clickhouse_connect

    try:
        client = clickhouse_connect.get_client(
            host=source.host,
            port=source.port or 0,
            database=source.database,
            username=source.user or "default",
            password=source.password or "",
            secure=source.secure,
        )
    except Exception as exc:  # the driver raises its own errors for every network failure
        raise InputError(f"cannot connect to {source.text} ({exc}).") from None
    return clickhouse_engine(source, client.query_arrow)


@dataclass(frozen=True, slots=True)
class SourceRead:
    """The agent traces of a source, the SQL that mapped them, and how many the map finished
    (``mapped``) or left to the span conversion (``converted``)."""

    traces: list[AgentTrace]
    sql: str
    mapped: int = 0
    converted: int = 0
    skipped: list[str] = field(default_factory=list)


def window_ns(moment: datetime | None) -> int | None:
    """``--since``/``--until`` as the map's epoch nanoseconds."""
    return None if moment is None else int(moment.timestamp() * 1_000_000) * 1000


def check_columns(engine: Engine) -> None:
    """Refuse a table without one of the exporter's columns the map reads, naming it."""
    present = engine.columns()
    if not present:
        raise InputError(
            "there is no such table (or it has no columns); the Collector ClickHouse exporter "
            "writes spans to otel_traces unless configured otherwise (traces=NAME in the URL).",
            file=engine.where,
        )
    for name, kind in (*TRACE_COLUMNS, *EVENT_COLUMNS):
        if name not in present:
            raise InputError(
                f"has no column {name} ({kind}): not the Collector ClickHouse exporter's "
                "otel_traces schema (renamed or missing column).",
                file=engine.where,
                field=name,
            )


def read_source(
    engine: Engine,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    explain_only: bool = False,
    outcomes: bool = False,
) -> SourceRead:
    """The agent traces whose spans start in ``[since, until)`` (every span without either),
    in the span path's order (root start, then trace id:
    :func:`~spanguard_processor.traces.convert.traces_from_records`). ``outcomes``: also read
    the feedback, retry marks and expectations of the traces the map finished
    (:mod:`.sql_outcome`; case mining and ``cases run`` read them, fairness does not)."""
    check_columns(engine)
    sql = map_sql(engine.dialect, engine.source, since=window_ns(since), until=window_ns(until))
    if explain_only:
        return SourceRead([], sql + (_outcome_queries(engine, since, until) if outcomes else ""))
    mapped: list[tuple[int, str, AgentTrace]] = []
    pending: list[tuple[int, str, list[str]]] = []
    for row in _run(engine, sql):
        key = (int(row["root_start"]), str(row["trace_id"]))
        if int(row["python_rules"]):
            pending.append((*key, sorted(set(_ids(row["trace_ids"])))))  # once per trace id
        else:
            mapped.append((*key, agent_trace(row)))
    if outcomes and mapped:
        finished = with_outcomes(
            lambda text: _run(engine, text),
            engine.dialect,
            engine.source,
            [trace for *_, trace in mapped],
            since=window_ns(since),
            until=window_ns(until),
        )
        mapped = [(s, t, trace) for (s, t, _), trace in zip(mapped, finished, strict=True)]
    converted = list(_converted(engine, pending))
    ordered = sorted([*mapped, *converted], key=lambda item: (item[0], item[1]))
    return SourceRead([trace for *_, trace in ordered], sql, len(mapped), len(converted))


def _outcome_queries(engine: Engine, since: datetime | None, until: datetime | None) -> str:
    """The queries of the outcome scan (:mod:`.sql_outcome`), for ``--explain``."""
    scan = outcome_sql(
        engine.dialect, engine.source, since=window_ns(since), until=window_ns(until)
    )
    annotations = spans_sql(engine.dialect, engine.source, [], annotations=True)
    return (
        "\n-- the outcome: feedback, retry marks, expectations, response ids\n"
        f"{scan.strip()}\n\n-- the annotation spans\n{annotations.strip()}\n"
    )


def _run(engine: Engine, sql: str) -> list[dict[str, Any]]:
    try:
        return engine.run(sql)
    except Exception as exc:  # each engine raises its own error types for a failed query
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"the SQL map failed in {engine.dialect}: {first}", file=engine.where
        ) from None


def fetch_columns(engine: Engine, sql: str) -> dict[str, list[Any]]:
    """``engine.fetch(sql)``; a failed query is an :class:`InputError` naming the engine."""
    try:
        return engine.fetch(sql)
    except Exception as exc:  # each engine raises its own error types for a failed query
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"the SQL failed in {engine.dialect}: {first}", file=engine.where
        ) from None


def _ids(value: Any) -> list[str]:
    import json

    return [str(v) for v in (json.loads(value) if isinstance(value, str) else value or [])]


def _converted(
    engine: Engine, groups: Sequence[tuple[int, str, list[str]]]
) -> Iterator[tuple[int, str, AgentTrace]]:
    """The traces of ``groups`` (each one agent trace's root start, trace id and trace ids)
    converted from spans, each with its order key."""
    if not groups:
        return
    wanted = sorted({tid for *_, group in groups for tid in group})
    spans: dict[str, dict[str, SpanRecord]] = {}
    annotations = Annotations()
    for row in _run(engine, spans_sql(engine.dialect, engine.source, [], annotations=True)):
        annotations.add(typed_span(row))
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        for row in _run(engine, spans_sql(engine.dialect, engine.source, chunk)):
            span = typed_span(row)
            spans.setdefault(span.trace_id, {})[span.span_id] = span
    for root_start, trace_id, group in groups:
        members = [s for tid in group for s in spans.get(tid, {}).values()]
        members.sort(key=lambda s: (s.start_ns, s.span_id))
        if members:
            yield root_start, trace_id, annotated_trace(members, annotations)
