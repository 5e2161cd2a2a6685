"""The OpenTelemetry Collector ``clickhouseexporter``'s trace table, as spanguard reads it.

The exporter (opentelemetry-collector-contrib, ``exporter/clickhouseexporter``) writes one row
per span into ``otel_traces``: ids as lowercase hex, ``Timestamp`` the start, ``Duration`` in
nanoseconds, every attribute value as text in a ``Map(LowCardinality(String), String)`` (strings
as they are, booleans ``true``/``false``, numbers in decimal, lists and maps as JSON, bytes as
base64), events and links as parallel arrays (``Events.Timestamp``, ``Events.Name``,
``Events.Attributes``). This module holds those facts as data: the columns the SQL map reads
(:data:`TRACE_COLUMNS`), the exporter's DDL for chDB and ClickHouse (:func:`traces_ddl`,
:func:`logs_ddl`), and :func:`attribute_text`, the exporter's value-to-text rule, so spans from
spanguard's own store or span files load into the same shape (:mod:`.sql_load`).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

from ..ingest.spans import AttrValue

__all__ = [
    "EVENT_COLUMNS",
    "SPAN_KINDS",
    "STATUS_CODES",
    "TRACE_COLUMNS",
    "attribute_text",
    "logs_ddl",
    "traces_ddl",
]

#: the columns of ``otel_traces`` the SQL map reads, with their ClickHouse types; a table that
#: lacks one (or has it renamed) is refused naming it
TRACE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Timestamp", "DateTime64(9)"),
    ("TraceId", "String"),
    ("SpanId", "String"),
    ("ParentSpanId", "String"),
    ("SpanName", "LowCardinality(String)"),
    ("SpanAttributes", "Map(LowCardinality(String), String)"),
    ("Duration", "UInt64"),
)
#: the nested event columns the SQL map reads (flattened names, as both engines show them)
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Events.Timestamp", "Array(DateTime64(9))"),
    ("Events.Name", "Array(LowCardinality(String))"),
    ("Events.Attributes", "Array(Map(LowCardinality(String), String))"),
)

#: the exporter's span kinds and status codes (OTLP's numbering, the proto's names)
SPAN_KINDS = (
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
)
STATUS_CODES = ("STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR")

_MAP = "Map(LowCardinality(String), String)"


def traces_ddl(database: str, table: str) -> str:
    """The exporter's ``CREATE TABLE`` for spans (its default MergeTree, no TTL, no cluster)."""
    return f"""CREATE TABLE IF NOT EXISTS {database}.{table} (
    Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes {_MAP} CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes {_MAP} CODEC(ZSTD(1)),
    Duration UInt64 CODEC(T64, ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes {_MAP}
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes {_MAP}
    ) CODEC(ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
PRIMARY KEY (ServiceName, SpanName, toDateTime(Timestamp))
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""


def logs_ddl(database: str, table: str) -> str:
    """The exporter's ``CREATE TABLE`` for log records (the columns the GenAI events use)."""
    return f"""CREATE TABLE IF NOT EXISTS {database}.{table} (
    Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    TimestampTime DateTime DEFAULT toDateTime(Timestamp),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    TraceFlags UInt8,
    SeverityText LowCardinality(String) CODEC(ZSTD(1)),
    SeverityNumber UInt8,
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    Body String CODEC(ZSTD(1)),
    ResourceSchemaUrl LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes {_MAP} CODEC(ZSTD(1)),
    ScopeSchemaUrl LowCardinality(String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion LowCardinality(String) CODEC(ZSTD(1)),
    ScopeAttributes {_MAP} CODEC(ZSTD(1)),
    LogAttributes {_MAP} CODEC(ZSTD(1)),
    EventName String CODEC(ZSTD(1))
) ENGINE = MergeTree()
PARTITION BY toDate(TimestampTime)
PRIMARY KEY (ServiceName, TimestampTime)
ORDER BY (ServiceName, TimestampTime, Timestamp)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""


def _number_text(value: float) -> str:
    """A double as the Collector writes it (ES6 number-to-string: shortest round trip)."""
    if math.isnan(value) or math.isinf(value):
        return f"json: unsupported value: {value!r}"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


def _plain(value: AttrValue) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def attribute_text(value: AttrValue) -> str:
    """One attribute value as the exporter stores it (pdata's ``Value.AsString``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number_text(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if value is None:
        return ""
    return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"))
