"""Spans → :class:`AgentTrace`, across four conventions: the one conversion.

Reads spanguard's own spans (``docs/attributes.md``), the OpenTelemetry GenAI conventions,
OpenInference and OpenLLMetry. Everything here is pure: span records in, agent traces out. The
root, identity, question and answer are read by :mod:`.identity`, the process trace and the
outcome by :mod:`.process`, annotation spans are merged by :mod:`.annotations`.

Public entry points:

* :func:`trace_from_records` — one trace's :class:`SpanRecord` s (plus annotation spans) to an
  :class:`AgentTrace`;
* :func:`annotated_trace` — the same, taking the annotations aimed at its request from an
  :class:`~spanguard_processor.traces.annotations.Annotations` (how every route merges them);
* :func:`traces_from_records` — any spans, grouped by trace id, annotations merged by request id;
* :func:`traces_from_readable_spans` — the same for in-process OTel SDK spans (for example from an
  ``InMemorySpanExporter``), used by ``spanguard run``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spanguard import semconv

from ..ingest.spans import AttrValue, SpanEvent, SpanRecord
from ._llm import is_llm_span, llm_call, output_messages, question_and_answer
from ._normalize import normalize
from .annotations import Annotations, annotation_request_id, is_annotation
from .evaluations import evaluations_of
from .events import with_log_events
from .identity import (
    ROOT_INPUT,
    ROOT_OUTPUT,
    content,
    conversation_key,
    cost,
    find_root,
    is_agent_span,
    plain,
    prefixed,
    request_identity,
    sender,
    sources,
    str_or_none,
    tool_name,
)
from .model import AgentTrace
from .process import outcome_of, process_trace
from .unread import unread_keys

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "annotated_trace",
    "annotation_request_id",
    "conversation_key",
    "find_root",
    "is_annotation",
    "record_from_readable_span",
    "tool_name",
    "trace_from_records",
    "traces_from_readable_spans",
    "traces_from_records",
]


def trace_from_records(
    spans: Sequence[SpanRecord],
    annotations: Sequence[SpanRecord] = (),
    *,
    partial: bool = False,
    diagnose: bool = True,
) -> AgentTrace:
    """One agent trace from the spans of one trace and the annotation spans aimed at it.

    ``partial`` marks a trace released before it was complete; a trace with no parentless span
    is always partial. ``diagnose=False`` leaves ``unread`` (the keys that look like a signal
    but were not read, for a NO_SIGNAL diagnosis) empty, for callers that never show it.
    Raises ``ValueError`` for an empty span list.
    """
    if not spans:
        raise ValueError("a trace needs at least one span")
    spans = with_log_events(spans)  # GenAI log events joined to their spans (traces/events.py)
    given = spans
    normalized = normalize(spans)
    spans = normalized.spans
    root = find_root(spans)
    assert root is not None  # a non-empty trace always has a span whose parent is not in it
    attrs = root.attributes
    outcome = outcome_of(root, spans, annotations)
    identity = request_identity(root, spans)
    assignments: dict[str, str] = identity.get("assignments", {})
    user_id, session_id = sender(root, spans)
    latency = (root.end_ns - root.start_ns) / 1e6 if root.end_ns >= root.start_ns > 0 else None
    if len({s.trace_id for s in spans}) > 1:  # a turn grouped from parentless model calls
        tops = [s for s in spans if not s.parent_span_id]
        start, end = min(s.start_ns for s in tops), max(s.end_ns for s in tops)
        latency = (end - start) / 1e6 if end >= start > 0 else None
    llm_spans = sorted((s for s in spans if is_llm_span(s)), key=lambda s: (s.start_ns, s.span_id))
    outputs = {s.span_id: output_messages(s) for s in llm_spans}
    question, answer = question_and_answer(llm_spans, outputs)
    input_text, input_source = content(root, ROOT_INPUT, question, input_side=True)
    output_text, output_source = content(root, ROOT_OUTPUT, answer, input_side=False)
    process = process_trace(spans, outputs)
    missing = frozenset(
        name
        for name, lacks in (
            ("text", output_text is None),
            ("documents", not process.retrieved_documents),
        )
        if lacks
    )
    return AgentTrace(
        trace_id=root.trace_id,
        request_id=str_or_none(attrs.get(semconv.REQUEST_ID)),
        seed_id=identity.get("seed_id"),
        variant_id=identity.get("variant_id"),
        assignments=dict(sorted(assignments.items())),
        repeat=identity.get("repeat", 0),
        input=input_text,
        output=output_text,
        latency_ms=latency,
        cost_usd=cost(root, spans),
        feedback=outcome.feedback,
        retried=outcome.retried,
        expect=dict(sorted(outcome.expect.items())) or None,
        metadata={k: plain(v) for k, v in sorted(prefixed(attrs, semconv.METADATA_PREFIX).items())},
        trace=process,
        partial=partial or root.parent_span_id != "",
        source=sources([*given, *annotations]),
        input_source=input_source,
        output_source=output_source,
        llm_calls=tuple(llm_call(s, outputs[s.span_id]) for s in llm_spans),
        evaluations=evaluations_of(spans),
        root_span_id=root.span_id or None,
        response_id=next(
            (
                str(s.attributes[semconv.GEN_AI_RESPONSE_ID])
                for s in reversed(llm_spans)
                if s.attributes.get(semconv.GEN_AI_RESPONSE_ID)
            ),
            None,
        ),
        unread=unread_keys(spans, normalized.placeholders, missing) if diagnose else (),
        lone_span=_lone_span(spans),
        user_id=user_id,
        session_id=session_id,
    )


def _lone_span(spans: Sequence[SpanRecord]) -> str | None:
    """The name of a request that is one parentless span, not an agent or spanguard request."""
    if len(spans) != 1:
        return None
    (span,) = spans
    if span.parent_span_id or is_agent_span(span) or semconv.REQUEST_ID in span.attributes:
        return None
    return span.name


def annotated_trace(
    spans: Sequence[SpanRecord],
    annotations: Annotations,
    *,
    partial: bool = False,
    diagnose: bool = True,
) -> AgentTrace:
    """One agent trace with the annotation spans aimed at its request merged in.

    The one merge of annotations: :func:`traces_from_records` (in-process spans, span files)
    and span stores (one or several partitions) all convert through it.
    """
    return trace_from_records(
        spans, annotations.for_trace(spans), partial=partial, diagnose=diagnose
    )


def traces_from_records(spans: Iterable[SpanRecord], *, diagnose: bool = True) -> list[AgentTrace]:
    """Group spans by trace id and convert each trace, merging annotations by request id.

    Annotation traces themselves are not returned; annotations whose request id matches no
    trace are dropped. Traces come out ordered by root start time, then trace id.
    """
    by_trace: dict[str, dict[str, SpanRecord]] = defaultdict(dict)
    annotations = Annotations()
    for span in spans:
        if is_annotation(span):
            annotations.add(span)
            continue
        by_trace[span.trace_id][span.span_id] = span  # a re-delivered span counts once
    traces = []
    conversations: dict[str, list[SpanRecord]] = {}
    groups: list[list[SpanRecord]] = []
    for members in by_trace.values():
        group = sorted(members.values(), key=lambda s: (s.start_ns, s.span_id))
        key = conversation_key(group)
        if key is None:
            groups.append(group)
        elif key in conversations:
            conversations[key].extend(group)
        else:
            groups.append(conversations.setdefault(key, list(group)))
    for group in groups:
        group.sort(key=lambda s: (s.start_ns, s.span_id))
        root = find_root(group)
        trace = annotated_trace(group, annotations, diagnose=diagnose)
        traces.append((root.start_ns if root else 0, trace))
    traces.sort(key=lambda item: (item[0], item[1].trace_id))
    return [trace for _, trace in traces]


# --- in-process OTel SDK spans -------------------------------------------------------------


def _sdk_value(value: Any) -> AttrValue:
    if isinstance(value, list | tuple):
        return tuple(_sdk_value(v) for v in value)
    if isinstance(value, str | bool | int | float | bytes) or value is None:
        return value
    return str(value)


def _sdk_attributes(attributes: Mapping[str, Any] | None) -> dict[str, AttrValue]:
    return {str(k): _sdk_value(v) for k, v in (attributes or {}).items()}


def record_from_readable_span(span: ReadableSpan) -> SpanRecord:
    """An OTel SDK ``ReadableSpan`` (ended) as a :class:`SpanRecord`."""
    context = span.get_span_context()
    if context is None:
        raise ValueError(f"span {span.name!r} has no span context")
    parent = span.parent
    return SpanRecord(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_span_id=format(parent.span_id, "016x") if parent is not None else "",
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_sdk_attributes(span.attributes),
        events=tuple(
            SpanEvent(e.name, e.timestamp, _sdk_attributes(e.attributes)) for e in span.events
        ),
        kind=span.kind.value + 1,  # OTLP numbers kinds from UNSPECIFIED = 0
        status_code=span.status.status_code.value,
    )


def traces_from_readable_spans(
    spans: Iterable[ReadableSpan], *, diagnose: bool = True
) -> list[AgentTrace]:
    """Agent traces from in-process OTel SDK spans (``InMemorySpanExporter.get_finished_spans()``).

    Spans are grouped by trace id and each trace is converted as the processor would (see
    :func:`traces_from_records`); ``spanguard.annotate`` spans merge into the trace whose root
    has the same ``spanguard.request.id``. Traces are ordered by root start time, then trace id.
    """
    return traces_from_records(
        (record_from_readable_span(span) for span in spans), diagnose=diagnose
    )
