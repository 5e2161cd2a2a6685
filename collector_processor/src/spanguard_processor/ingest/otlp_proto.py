"""OTLP protobuf: requests in, :class:`EncodedSpan` out; stored span bodies back to records.

The receive path parses the ``ExportTraceServiceRequest`` with upb and keeps each ``Span`` as
its own serialized bytes; attributes are decoded only when a trace is converted.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from ..spans import (
    FORMAT_PROTOBUF,
    AttrValue,
    DecodedBatch,
    EncodedSpan,
    SpanEvent,
    SpanRecord,
    valid_span_id,
    valid_trace_id,
)

__all__ = [
    "any_value",
    "decode_request",
    "parse_request",
    "record_from_payload",
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


def decode_request(request: Any) -> DecodedBatch:
    """Every span of a parsed request, ids checked; spans with bad ids are counted as rejected."""
    spans: list[EncodedSpan] = []
    rejected = 0
    error: str | None = None
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id = span.trace_id.hex()
                span_id = span.span_id.hex()
                parent = span.parent_span_id.hex()
                if not (valid_trace_id(trace_id) and valid_span_id(span_id)) or (
                    parent and not valid_span_id(parent)
                ):
                    rejected += 1
                    error = error or (
                        f"span {span.name!r} has an invalid trace_id, span_id or parent_span_id "
                        "(a trace id is 16 bytes, a span id 8 bytes, not all zero)."
                    )
                    continue
                spans.append(
                    EncodedSpan(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_span_id=parent,
                        start_ns=span.start_time_unix_nano,
                        annotation=span.name == semconv.SPAN_ANNOTATION,
                        fmt=FORMAT_PROTOBUF,
                        payload=span.SerializeToString(),
                    )
                )
    return DecodedBatch(tuple(spans), rejected, error)


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


def record_from_payload(payload: bytes) -> SpanRecord:
    """Decode one stored protobuf span body."""
    span = Span()
    span.ParseFromString(payload)
    return record_from_span(span)
