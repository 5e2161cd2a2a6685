"""The outcome of the traces the SQL map finished: feedback, retry marks, expectations and
the model's response id.

The map (:mod:`~spanguard_processor.traces.sqlmap`) leaves these out: fairness does not read
them. Case mining and ``cases run`` do, so :func:`with_outcomes` reads them from the engine in
one filtered scan — only the spans that carry an outcome key or event or a response id, and
the annotation spans (``spanguard.annotate``, sent after the request) — and merges them with
the rules the span path uses (:func:`~spanguard_processor.traces.process.outcome_of`: the
root's attributes, then its events in time order, then the annotations by end time; the
response id of the last model call that has one, as ``traces/convert.py`` reads it). Traces
the reader converted from their spans already carry theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from spanguard import semconv

from ..ingest.spans import SpanRecord
from ..traces._llm import is_llm_span
from ..traces.annotations import Annotations
from ..traces.model import AgentTrace
from ..traces.process import outcome_of
from ..traces.sqlmap import expand_sql, spans_sql, typed_span

__all__ = ["outcome_sql", "with_outcomes"]

_EVENTS = (semconv.EVENT_FEEDBACK, semconv.EVENT_RETRY, semconv.EVENT_EXPECT)

#: a span that carries an outcome key or event, in each engine's spelling
_CARRIES = {
    "duckdb": (
        "map_contains(SpanAttributes, '{feedback}') OR map_contains(SpanAttributes, '{retried}') "
        "OR map_contains(SpanAttributes, '{response}') "
        "OR len(list_filter(map_keys(SpanAttributes), lambda k: starts_with(k, '{expect}'))) > 0 "
        'OR list_has_any("Events.Name", [{events}])'
    ),
    "clickhouse": (
        "mapContains(SpanAttributes, '{feedback}') OR mapContains(SpanAttributes, '{retried}') "
        "OR mapContains(SpanAttributes, '{response}') "
        "OR arrayExists(k -> startsWith(k, '{expect}'), mapKeys(SpanAttributes)) "
        'OR hasAny("Events.Name", [{events}])'
    ),
}


def outcome_sql(dialect: str, source: str, *, since: int | None, until: int | None) -> str:
    """The span rows (for :func:`typed_span`) that carry an outcome key or event, among the
    spans that start in ``[since, until)`` (epoch nanoseconds; annotation spans excluded)."""
    carries = _CARRIES[dialect].format(
        feedback=semconv.FEEDBACK,
        retried=semconv.RETRIED,
        response=semconv.GEN_AI_RESPONSE_ID,
        expect=semconv.EXPECT_PREFIX,
        events=", ".join(f"'{name}'" for name in _EVENTS),
    )
    window = "".join(
        f" AND @{name}(Timestamp; {int(moment)})"
        for name, moment in (("since", since), ("until", until))
        if moment is not None
    )
    body = (
        "SELECT TraceId, SpanId, ParentSpanId, SpanName, @ns(Timestamp) AS start_ns, Duration, "
        'SpanAttributes, @ns_list("Events.Timestamp") AS ev_t, "Events.Name" AS ev_n, '
        f'"Events.Attributes" AS ev_a FROM {source} '
        f"WHERE SpanName <> '{semconv.SPAN_ANNOTATION}' AND ({carries}){window} "
        "ORDER BY TraceId, start_ns, SpanId"
    )
    return expand_sql(dialect, body)


def with_outcomes(
    run: Callable[[str], list[dict[str, Any]]],
    dialect: str,
    source: str,
    traces: Sequence[AgentTrace],
    *,
    since: int | None = None,
    until: int | None = None,
) -> list[AgentTrace]:
    """``traces`` (finished by the SQL map, each one trace id) with their feedback, retry mark
    and expectations, read by ``run`` (SQL in, rows out) from the spans of ``source`` that
    start in ``[since, until)``."""
    carriers: dict[str, list[SpanRecord]] = {}
    for row in run(outcome_sql(dialect, source, since=since, until=until)):
        span = typed_span(row)
        carriers.setdefault(span.trace_id, []).append(span)
    annotations = Annotations(
        typed_span(row) for row in run(spans_sql(dialect, source, [], annotations=True))
    )
    return [_with_outcome(trace, carriers.get(trace.trace_id, []), annotations) for trace in traces]


def _with_outcome(
    trace: AgentTrace, spans: Sequence[SpanRecord], annotations: Annotations
) -> AgentTrace:
    aimed = annotations.for_request(trace.request_id)
    if not spans and not aimed:
        return trace
    root = next((s for s in spans if s.span_id == trace.root_span_id), None)
    if root is None:  # the root carries no outcome key: only the events and annotations count
        root = SpanRecord(trace.trace_id, trace.root_span_id or "", "", "", 0, 0, {})
    outcome = outcome_of(root, spans, aimed)
    calls = sorted((s for s in spans if is_llm_span(s)), key=lambda s: (s.start_ns, s.span_id))
    response_id = next(
        (
            str(s.attributes[semconv.GEN_AI_RESPONSE_ID])
            for s in reversed(calls)
            if s.attributes.get(semconv.GEN_AI_RESPONSE_ID)
        ),
        None,
    )
    return replace(
        trace,
        feedback=outcome.feedback,
        retried=outcome.retried,
        expect=dict(sorted(outcome.expect.items())) or None,
        response_id=response_id,
    )
