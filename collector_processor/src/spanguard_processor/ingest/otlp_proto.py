"""OTLP protobuf: requests in, span ids grouped by trace out; stored bodies back to records.

The receive path parses the ``ExportTraceServiceRequest`` with upb (which also checks it:
wire format, UTF-8), reads only each span's ids, start time and name
(:func:`group_request`) and stores the request's bytes as received; attributes are decoded
only when a trace is converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from .otlp_columns import ANNOTATION_BYTES, read_columns
from .spans import (
    FORMAT_PROTOBUF,
    AttrValue,
    DecodedBatch,
    EncodedSpan,
    SpanEvent,
    SpanRecord,
    TraceGroup,
)

__all__ = [
    "MIN_SPAN_BYTES",
    "any_value",
    "batch_records",
    "batch_spans",
    "decode_request",
    "group_request",
    "parse_request",
    "record_from_span",
]


def parse_request(body: bytes) -> ExportTraceServiceRequest:
    """Parse an ``ExportTraceServiceRequest``; raises :class:`TraceFormatError` if it is not one."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise TraceFormatError(f"is not a valid OTLP protobuf trace request ({exc}).") from None
    return request


#: Bytes of a small but real span on the wire (ids, name, times, a couple of attributes): the
#: size-based estimate of a request's spans before anything is read. Exact counts follow.
MIN_SPAN_BYTES = 64

_ANNOTATION = semconv.SPAN_ANNOTATION
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


def _all_spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [
        span
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]


def group_request(
    request: ExportTraceServiceRequest,
    attribute_limit: int,
    body: bytes | None = None,
    frames: Sequence[bytes] | None = None,
) -> tuple[tuple[TraceGroup, ...], int, str | None, dict[str, int], bool]:
    """One pass over a parsed request for the receive path: its valid spans grouped by trace
    (no object per span: the ids stay the bytes upb hands out, hex only per trace), the
    rejected count and first reason, the spans with invalid ids per trace id (the per-trace
    limit counts them too), and whether any span or event has more than ``attribute_limit``
    attributes (then the limits must edit the request).

    With ``body`` (the request's bytes), events are checked for the whole request at once
    (:func:`~spanguard_processor.ingest.otlp_columns.read_columns`), and a request of at least
    :data:`~spanguard_processor.ingest.otlp_columns.COLUMNS_MIN_SPANS` spans laid out as
    exporters write them is grouped from its bytes
    (:func:`~spanguard_processor.ingest.otlp_columns.group_frames`; ``frames``, its spans'
    bytes, if already framed). Otherwise, span by span, only the ids, the start time and the
    attribute count are read (and the name, if an annotation span may be among them): the
    result is the same."""
    over, names, merged = False, True, None
    if body is not None:
        merged, over, grouped = read_columns(body, frames, attribute_limit)
        if grouped is not None:
            return grouped, 0, None, {}, over
        if merged is not None:
            # names are read span by span only if an annotation span may be among them
            names = ANNOTATION_BYTES in body and ANNOTATION_BYTES in merged.names
    events_read = merged is None
    found: dict[bytes, int] = {}  # trace id -> its index in the lists below
    get = found.get
    ids: list[bytes | list[bytes]] = []  # a trace's span id, or a list of them once it has several
    starts: list[int] = []
    roots: list[bool] = []
    notes: list[int] = []
    rejected = 0
    error: str | None = None
    bad: dict[str, int] = {}
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if len(span.attributes) > attribute_limit:
                    over = True
                if events_read:
                    for event in span.events:
                        if len(event.attributes) > attribute_limit:
                            over = True
                if (
                    len(trace_id) != 16
                    or trace_id == _ZERO_TRACE
                    or len(span_id) != 8
                    or span_id == _ZERO_SPAN
                    or (parent and (len(parent) != 8 or parent == _ZERO_SPAN))
                ):
                    rejected += 1
                    error = error or (
                        f"span {span.name!r} has an invalid trace_id, span_id or "
                        "parent_span_id (a trace id is 16 bytes, a span id 8 bytes, not all "
                        "zero)."
                    )
                    trace = trace_id.hex()
                    bad[trace] = bad.get(trace, 0) + 1
                    continue
                index = get(trace_id)
                if index is None:
                    found[trace_id] = len(ids)
                    ids.append(span_id)
                    starts.append(span.start_time_unix_nano)
                    roots.append(not parent)
                    notes.append(names and span.name == _ANNOTATION)
                    continue
                held = ids[index]
                if isinstance(held, list):
                    held.append(span_id)
                else:
                    ids[index] = [held, span_id]
                start = span.start_time_unix_nano
                if start < starts[index]:
                    starts[index] = start
                if not parent:
                    roots[index] = True
                if names and span.name == _ANNOTATION:
                    notes[index] += 1
    groups = []
    for (trace_id, index), held in zip(found.items(), ids, strict=True):
        if isinstance(held, list):
            if len(set(held)) < len(held):  # a span sent twice in one request
                held = list(dict.fromkeys(held))
            held = b"".join(held)
        groups.append(
            TraceGroup(trace_id.hex(), held, starts[index], roots[index], int(notes[index]))
        )
    return tuple(groups), rejected, error, bad, over


def decode_request(request: ExportTraceServiceRequest, body: bytes | None = None) -> DecodedBatch:
    """Every span of a parsed request, ids checked; spans with bad ids are counted as rejected.

    ``body`` is the request as received (serialized again when not given).
    """
    spans: list[EncodedSpan] = []
    rejected = 0
    error: str | None = None
    for position, span in enumerate(_all_spans(request)):
        trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
        bad_parent = parent and (len(parent) != 8 or parent == _ZERO_SPAN)
        if (
            len(trace_id) != 16
            or trace_id == _ZERO_TRACE
            or len(span_id) != 8
            or span_id == _ZERO_SPAN
            or bad_parent
        ):
            rejected += 1
            error = error or (
                f"span {span.name!r} has an invalid trace_id, span_id or parent_span_id "
                "(a trace id is 16 bytes, a span id 8 bytes, not all zero)."
            )
            continue
        spans.append(
            EncodedSpan(
                trace_id.hex(),
                span_id.hex(),
                parent.hex(),
                span.start_time_unix_nano,
                span.name == _ANNOTATION,
                position,
            )
        )
    if body is None:
        body = request.SerializeToString()
    return DecodedBatch(tuple(spans), rejected, error, FORMAT_PROTOBUF, body)


def any_value(value: AnyValue) -> AttrValue:
    """A protobuf ``AnyValue`` as a plain Python value (arrays as tuples, kvlists as dicts)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return tuple(any_value(item) for item in value.array_value.values)
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    result: AttrValue = getattr(value, which)
    return result


def _attributes(items: Iterable[KeyValue]) -> dict[str, AttrValue]:
    return {kv.key: any_value(kv.value) for kv in items}


def record_from_span(span: Span) -> SpanRecord:
    """A protobuf ``Span`` message as a :class:`SpanRecord`."""
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=_attributes(span.attributes),
        events=tuple(
            SpanEvent(event.name, event.time_unix_nano, _attributes(event.attributes))
            for event in span.events
        ),
        kind=span.kind,
        status_code=span.status.code,
    )


def batch_records(body: bytes) -> Callable[[int], SpanRecord]:
    """Parse a stored request once; returns position -> :class:`SpanRecord`."""
    return batch_spans(body)[1]


def batch_spans(body: bytes) -> tuple[list[str], Callable[[int], SpanRecord]]:
    """Parse a stored request once: the trace id of each span (by position), and
    position -> :class:`SpanRecord`."""
    spans = _all_spans(parse_request(body))
    return (
        [span.trace_id.hex() for span in spans],
        lambda position: record_from_span(spans[position]),
    )
