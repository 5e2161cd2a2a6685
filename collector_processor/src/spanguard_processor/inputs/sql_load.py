"""Spans into the Collector ClickHouse exporter's ``otel_traces`` shape: Parquet and chDB.

:func:`exporter_table` turns span records (from spanguard's store, span files or tests) into a
``pyarrow`` table with the exporter's columns and the exporter's text values
(:mod:`.sql_schema`); :func:`write_parquet` writes it (DuckDB, ClickHouse, Spark and Polars
read it); :func:`load_clickhouse` creates the exporter's tables on a ClickHouse connection (a
chDB session in tests, the same engine and DDL) and inserts the rows. pyarrow comes with the
``warehouse`` extra.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..ingest.spans import SpanRecord
from ..store.span_store import SpanStore
from .files import InputKind, detect_kind, expand
from .readers import ingest_files
from .sql_schema import SPAN_KINDS, STATUS_CODES, attribute_text, logs_ddl, traces_ddl

__all__ = ["exporter_table", "load_clickhouse", "spans_of", "write_parquet"]

_LOG_SPAN_NAME = "spanguard.log"


#: the exporter's span columns, in its DDL's order (nested ones flattened)
_NAMES = (
    *("Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind"),
    *("ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes"),
    *("Duration", "StatusCode", "StatusMessage", "Events.Timestamp", "Events.Name"),
    *("Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState"),
    "Links.Attributes",
)


def _pairs(attributes: Any) -> list[tuple[str, str]]:
    return [(str(k), attribute_text(v)) for k, v in attributes.items()]


def _columns(spans: Iterable[SpanRecord], service: str) -> dict[str, list[Any]]:
    names = _NAMES
    cols: dict[str, list[Any]] = {name: [] for name in names}
    for span in spans:
        values: tuple[Any, ...] = (
            span.start_ns,
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            "",
            span.name,
            SPAN_KINDS[span.kind] if 0 <= span.kind < len(SPAN_KINDS) else "",
            service,
            [("service.name", service)] if service else [],
            "",
            "",
            _pairs(span.attributes),
            max(span.end_ns - span.start_ns, 0),
            STATUS_CODES[span.status_code] if 0 <= span.status_code < 3 else "",
            "",
            [e.time_ns for e in span.events],
            [e.name for e in span.events],
            [_pairs(e.attributes) for e in span.events],
            [],
            [],
            [],
            [],
        )
        for name, value in zip(names, values, strict=True):
            cols[name].append(value)
    return cols


def exporter_table(spans: Iterable[SpanRecord], *, service: str = "") -> Any:
    """A ``pyarrow.Table`` with the exporter's span columns (nested ones flattened, as
    ClickHouse writes them to Parquet: ``Events.Name``, …), one row per span."""
    import pyarrow as pa

    text, stamp = pa.string(), pa.timestamp("ns", tz="UTC")
    attrs = pa.map_(text, text)
    types = {
        "Timestamp": stamp,
        "ResourceAttributes": attrs,
        "SpanAttributes": attrs,
        "Duration": pa.uint64(),
        "Events.Timestamp": pa.list_(stamp),
        "Events.Name": pa.list_(text),
        "Events.Attributes": pa.list_(attrs),
        "Links.TraceId": pa.list_(text),
        "Links.SpanId": pa.list_(text),
        "Links.TraceState": pa.list_(text),
        "Links.Attributes": pa.list_(attrs),
    }
    cols = _columns(spans, service)
    return pa.table({name: pa.array(col, types.get(name, text)) for name, col in cols.items()})


def write_parquet(spans: Iterable[SpanRecord], path: Path, *, service: str = "") -> int:
    """Write ``spans`` as one Parquet file of the exporter's columns; returns the row count."""
    import pyarrow.parquet as pq

    table = exporter_table(spans, service=service)
    pq.write_table(table, path, compression="zstd")
    return int(table.num_rows)


def load_clickhouse(
    query: Callable[[str], Any],
    spans: Iterable[SpanRecord],
    *,
    database: str = "otel",
    traces: str = "otel_traces",
    logs: str = "otel_logs",
) -> int:
    """Create the exporter's database and tables through ``query`` (one SQL statement per
    call: a chDB session's or clickhouse-connect's ``command``) and insert ``spans``;
    returns the row count. The rows travel as Parquet (the engine reads the file itself)."""
    query(f"CREATE DATABASE IF NOT EXISTS {database}")
    query(traces_ddl(database, traces))
    query(logs_ddl(database, logs))
    with tempfile.TemporaryDirectory(prefix="spanguard-") as tmp:
        path = Path(tmp) / "spans.parquet"
        rows = write_parquet(spans, path)
        if rows:
            query(
                f"INSERT INTO {database}.{traces} SELECT * FROM file('{path}', Parquet)"
                " SETTINGS input_format_parquet_allow_missing_columns = 1"
            )
    return rows


def spans_of(paths: Sequence[Path]) -> Iterator[SpanRecord]:
    """Every span of span stores and span files (annotation spans included, log records
    left out: the exporter keeps those in ``otel_logs``), in each store's trace order."""
    stores = [path for path in expand(paths) if detect_kind(path) == InputKind.STORE]
    files = [path for path in expand(paths) if path not in stores]
    for path in stores:
        with SpanStore(path, readonly=True) as store:
            yield from _stored(store)
    if files:
        with (
            tempfile.TemporaryDirectory(prefix="spanguard-") as tmp,
            SpanStore(Path(tmp) / "spans.db", durable=False) as store,
        ):
            ingest_files(store, files)
            yield from _stored(store)


def _stored(store: SpanStore) -> Iterator[SpanRecord]:
    yield from store.annotation_spans()
    for _, _, spans in store.trace_records(include_pending=True):
        yield from (span for span in spans if span.name != _LOG_SPAN_NAME)
