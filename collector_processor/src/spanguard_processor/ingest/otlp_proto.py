"""OTLP protobuf: requests in, :class:`EncodedSpan` out; stored span bodies back to records.

The receive path parses the ``ExportTraceServiceRequest`` with upb and keeps each ``Span`` as
its own serialized bytes; attributes are decoded only when a trace is converted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from ..spans import (
    FORMAT_PROTOBUF,
    AttrValue,
    DecodedBatch,
    EncodedSpan,
    SpanEvent,
    SpanRecord,
)

__all__ = [
    "any_value",
    "batch_records",
    "decode_request",
    "parse_request",
    "record_from_span",
]


def parse_request(body: bytes) -> Any:
    """Parse an ``ExportTraceServiceRequest``; raises :class:`TraceFormatError` if it is not one."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise TraceFormatError(f"is not a valid OTLP protobuf trace request ({exc}).") from None
    return request


_ANNOTATION = semconv.SPAN_ANNOTATION
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


def _all_spans(request: Any) -> list[Any]:
    return [span for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans for span in scope_spans.spans]


def decode_request(request: Any, body: bytes | None = None) -> DecodedBatch:
    """Every span of a parsed request, ids checked; spans with bad ids are counted as rejected.

    ``body`` is the request as received (serialized again when not given).
    """
    spans: list[EncodedSpan] = []
    rejected = 0
    error: str | None = None
    for position, span in enumerate(_all_spans(request)):
        trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
        bad_parent = parent and (len(parent) != 8 or parent == _ZERO_SPAN)
        if (len(trace_id) != 16 or trace_id == _ZERO_TRACE or len(span_id) != 8
                or span_id == _ZERO_SPAN or bad_parent):
            rejected += 1
            error = error or (
                f"span {span.name!r} has an invalid trace_id, span_id or parent_span_id "
                "(a trace id is 16 bytes, a span id 8 bytes, not all zero)."
            )
            continue
        spans.append(EncodedSpan(trace_id.hex(), span_id.hex(), parent.hex(),
                                 span.start_time_unix_nano, span.name == _ANNOTATION, position))
    if body is None:
        body = request.SerializeToString()
    return DecodedBatch(tuple(spans), rejected, error, FORMAT_PROTOBUF, body)


def any_value(value: Any) -> AttrValue:
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


def _attributes(items: Any) -> dict[str, AttrValue]:
    return {kv.key: any_value(kv.value) for kv in items}


def record_from_span(span: Any) -> SpanRecord:
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
    spans = _all_spans(parse_request(body))
    return lambda position: record_from_span(spans[position])
