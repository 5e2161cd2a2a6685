"""The span → agent-trace map pushed into an engine: one SQL template, finished in Python.

``agent_map.sql`` (beside this module) groups the exporter's span rows into agent traces in
the engine — the root, partial traces, the conversation merge, the identity precedence of
spanguard's keys, tool calls, plan steps, friction, escalation, usage, cost, latency, user
and session — and returns one row per agent trace, with the few attribute values the Python
rules read as text. :func:`map_sql` expands it for DuckDB or ClickHouse; :func:`agent_trace`
finishes one row with the same Python rules the span path uses (typed values from the
exporter's string maps: :func:`typed`), so both paths give one agent trace.

A row whose trace needs a rule this map leaves to Python (``python_rules``: a root that is
no spanguard request, so its text comes from model messages; nested or repeated model calls
that are merged into one; model-requested tool calls; Langfuse, OpenInference-metadata or
traceloop identity; OpenInference documents; GenAI events) carries the ids of its traces in
``trace_ids``: the reader converts those from their spans instead (:func:`typed_span`).
The outcome (feedback, retry marks, expectations) is not mapped: the evaluators that read
through a ``--source`` (fairness, case mining) do not use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from ..ingest.spans import AttrValue, SpanEvent, SpanRecord
from ._documents import finite_number, span_documents
from ._llm import llm_call
from ._sql_dialect import CLICKHOUSE, DUCKDB, Dialect, expand
from .model import AgentTrace, ProcessTrace, ToolCall

__all__ = [
    "DIALECTS",
    "MAPPED_FIELDS",
    "agent_trace",
    "expand_sql",
    "map_sql",
    "spans_sql",
    "typed",
    "typed_span",
]

DIALECTS: dict[str, Dialect] = {"duckdb": DUCKDB, "clickhouse": CLICKHOUSE}

#: the agent-trace fields the map computes (the outcome and diagnosis fields are not mapped)
MAPPED_FIELDS = (
    "trace_id",
    "request_id",
    "seed_id",
    "variant_id",
    "assignments",
    "repeat",
    "input",
    "output",
    "latency_ms",
    "cost_usd",
    "metadata",
    "trace",
    "partial",
    "source",
    "input_source",
    "output_source",
    "usage",
    "user_id",
    "session_id",
    "root_span_id",
)

_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SCALARS = (str, int, float, bool)


def _window(since: int | None, until: int | None) -> str:
    parts = []
    if since is not None:
        parts.append(f"AND @since(Timestamp; {int(since)})")
    if until is not None:
        parts.append(f"AND @until(Timestamp; {int(until)})")
    return " ".join(parts)


def map_sql(
    dialect: str,
    source: str,
    *,
    since: int | None = None,
    until: int | None = None,
    inner: bool = False,
) -> str:
    """The map for ``dialect`` (``duckdb`` or ``clickhouse``) reading spans from ``source``
    (a table or a table function) that start in ``[since, until)`` (epoch nanoseconds);
    ``inner``: unordered, without settings, to be read by an enclosing query."""
    template = resources.files(__package__).joinpath("agent_map.sql").read_text("utf-8")
    body = "\n".join(line for line in template.splitlines() if not line.startswith("--"))
    window = _window(since, until)
    order = "" if inner else "ORDER BY root_start, trace_id"
    extra: dict[str, Callable[..., str]] = {
        "source": lambda: source,
        "window": lambda: window,
        "order": lambda: order,
    }
    if inner:
        extra["settings"] = lambda: ""
    return expand(body, DIALECTS[dialect], extra).strip() + "\n"


def expand_sql(dialect: str, text: str) -> str:
    """``text`` with the map's macros spelled for ``dialect`` (queries around the map)."""
    return expand(text, DIALECTS[dialect], {})


def spans_sql(
    dialect: str, source: str, trace_ids: Sequence[str], *, annotations: bool = False
) -> str:
    """The span rows of ``trace_ids`` (or every annotation span) for :func:`typed_span`."""
    if annotations:
        where = "SpanName = 'spanguard.annotate'"
    else:
        where = "TraceId IN (" + ", ".join(f"'{t}'" for t in trace_ids if t.isalnum()) + ")"
    body = (
        "SELECT TraceId, SpanId, ParentSpanId, SpanName, @ns(Timestamp) AS start_ns, Duration, "
        'SpanAttributes, @ns_list("Events.Timestamp") AS ev_t, "Events.Name" AS ev_n, '
        f'"Events.Attributes" AS ev_a FROM {source} WHERE {where} '
        "ORDER BY TraceId, start_ns, SpanId"
    )
    return expand(body, DIALECTS[dialect], {})


def typed(text: str) -> AttrValue:
    """An exporter map value read back as the type it most likely had: ``true``/``false``,
    integers, decimals, JSON arrays of scalars (OTLP array values); other text as it is."""
    if text in ("true", "false"):
        return text == "true"
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return _array(text)


def _array(text: str) -> AttrValue:
    """A JSON array of scalars as a tuple (how OTLP array values come out); other text as is."""
    if text.startswith("[") and text.endswith("]"):
        try:
            items = json.loads(text)
        except ValueError:
            return text
        if isinstance(items, list) and all(isinstance(v, _SCALARS) for v in items):
            return tuple(items)
    return text


def _json(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    return json.loads(value) if isinstance(value, str) else value


def _stripped(pairs: Mapping[str, str], prefix: str) -> dict[str, AttrValue]:
    return {k[len(prefix) :]: typed(v) for k, v in sorted(pairs.items()) if k != prefix}


def typed_span(row: Mapping[str, Any]) -> SpanRecord:
    """One exporter span row (``TraceId``, ``SpanAttributes``, ``Events.*``, …) as a
    :class:`SpanRecord`, its values typed back by :func:`typed`."""
    start = int(row["start_ns"])
    events = tuple(
        SpanEvent(str(name), int(at), {k: typed(v) for k, v in dict(attrs).items()})
        for at, name, attrs in zip(
            row["ev_t"] or (), row["ev_n"] or (), row["ev_a"] or (), strict=True
        )
    )
    return SpanRecord(
        trace_id=str(row["TraceId"]),
        span_id=str(row["SpanId"]),
        parent_span_id=str(row["ParentSpanId"]),
        name=str(row["SpanName"]),
        start_ns=start,
        end_ns=start + int(row["Duration"]),
        attributes={k: typed(v) for k, v in dict(row["SpanAttributes"]).items()},
        events=events,
    )


def _text(value: str | None) -> str | None:
    """A content value (question or answer) as the span path reads it: text, or JSON of an
    array value."""
    if value is None:
        return None
    found = _array(value)
    if isinstance(found, tuple):
        return json.dumps(list(found), ensure_ascii=False, sort_keys=True)
    return value


def _latency(row: Mapping[str, Any]) -> float | None:
    start, end = int(row["root_start"]), int(row["root_end"])
    if int(row["trace_count"]) > 1:
        start, end = int(row["top_start"] or 0), int(row["top_end"] or 0)
    return (end - start) / 1e6 if end >= start > 0 else None


def _cost(row: Mapping[str, Any]) -> float | None:
    own = finite_number(row["root_cost"])
    if own is not None:
        return own
    total: float | None = None
    for text in _json(row["costs"], []):
        value = finite_number(text)
        if value is not None:
            total = (total or 0.0) + value
    return total


def _process(row: Mapping[str, Any]) -> ProcessTrace:
    documents = tuple(
        doc
        for text in _json(row["documents"], [])
        for doc in span_documents(
            SpanRecord("", "", "", "", 0, 0, {"gen_ai.retrieval.documents": text})
        )
    )
    return ProcessTrace(
        tool_calls=tuple(ToolCall(name) for name in _json(row["tools"], [])),
        retrieved_documents=documents,
        plan_steps=tuple(_json(row["plan_steps"], [])),
        escalated=bool(row["escalated"]),
        escalation_reason=row["escalation_reason"],
        friction_points=tuple(_json(row["friction"], [])),
    )


def _llm_calls(row: Mapping[str, Any]) -> tuple[Any, ...]:
    calls = []
    for attrs, start, end in zip(
        _json(row["llm_calls"], []),
        _json(row["llm_starts"], []),
        _json(row["llm_ends"], []),
        strict=True,
    ):
        pairs = _json(attrs, {})
        span = SpanRecord(
            "", "", "", "", int(start), int(end), {k: typed(v) for k, v in pairs.items()}
        )
        calls.append(llm_call(span, ()))
    return tuple(calls)


def _sources(row: Mapping[str, Any]) -> tuple[str, ...]:
    names = ("gen_ai", "openinference", "openllmetry", "langfuse", "spanguard")
    flags = ("src_gen_ai", "src_oi", "src_traceloop", "src_langfuse", "src_spanguard")
    return tuple(sorted(n for n, f in zip(names, flags, strict=True) if int(row[f] or 0)))


def agent_trace(row: Mapping[str, Any]) -> AgentTrace:
    """One row of the map as an :class:`AgentTrace` (the :data:`MAPPED_FIELDS`)."""
    prefix = "spanguard.assignment."
    assignments = {k[len(prefix) :]: str(v) for k, v in _json(row["assignments"], {}).items()}
    input_text, output_text = _text(row["input_text"]), _text(row["output_text"])
    request_id = row["request_id"]
    return AgentTrace(
        trace_id=str(row["trace_id"]),
        request_id=str(request_id) if request_id is not None else None,
        seed_id=row["seed_id"],
        variant_id=row["variant_id"],
        assignments=dict(sorted(assignments.items())),
        repeat=int(row["repeat"] or 0),
        input=input_text,
        output=output_text,
        latency_ms=_latency(row),
        cost_usd=_cost(row),
        metadata=_stripped(_json(row["metadata"], {}), "spanguard.metadata."),
        trace=_process(row),
        partial=bool(row["root_parent"]),
        source=_sources(row),
        input_source=row["input_key"] if input_text is not None else None,
        output_source=row["output_key"] if output_text is not None else None,
        llm_calls=_llm_calls(row),
        root_span_id=str(row["root_span_id"]) or None,
        user_id=row["user_id"],
        session_id=row["session_id"],
    )
