"""OTLP protobuf: requests in, span ids grouped by trace out; stored bodies back to records.

The receive path parses the ``ExportTraceServiceRequest`` with upb (which also checks it:
wire format, UTF-8), reads only each span's ids, start time and name
(:func:`group_request`) and stores the request's bytes as received; attributes are decoded
only when a trace is converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from .otlp_columns import (
    ANNOTATION_BYTES,
    COLUMNS_MIN_SPANS,
    MALFORMED,
    group_frames,
    merged_span,
    span_frames,
)
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
    "count_spans",
    "decode_request",
    "framed_count",
    "group_request",
    "parse_request",
    "record_from_span",
    "span_frames",
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

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise TraceFormatError(MALFORMED)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _submessages(buf: bytes, pos: int, end: int, number: int, stop: int, collect: bool = True
                 ) -> tuple[list[tuple[int, int]], int]:
    """Offsets (when ``collect``) of the length-delimited fields ``number`` in ``buf[pos:end]``
    (other fields are skipped by wire type), and how many there were; stops after ``stop``."""
    found: list[tuple[int, int]] = []
    count = 0
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _varint(buf, pos)
        wire = tag & 7
        if wire == 2:
            size = buf[pos] if pos < end else 0x80
            if size < 0x80:
                pos += 1
            elif pos + 1 < end and buf[pos + 1] < 0x80:  # most spans: 128 B to 16 KiB
                size = (size & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                size, pos = _varint(buf, pos)
            if tag >> 3 == number:
                count += 1
                if count > stop:
                    return found, count
                if collect:
                    found.append((pos, pos + size))
            pos += size
        elif wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:  # groups (3, 4) are not used by OTLP; 6 and 7 do not exist
            raise TraceFormatError(MALFORMED)
    if pos != end:
        raise TraceFormatError(MALFORMED)
    return found, count


#: Bodies up to this size are counted from their frames (:func:`span_frames`); larger ones by
#: the wire scan, which stops early.
_FRAMED_MAX = 1 << 20


def count_spans(body: bytes, stop: int) -> int:
    """The spans of a serialized ``ExportTraceServiceRequest``, counted from the wire format
    (no span is built), so a request can be admitted or refused before it is decoded; see
    :func:`framed_count`."""
    return framed_count(body, stop)[0]


def framed_count(body: bytes, stop: int) -> tuple[int, Sequence[bytes] | None]:
    """:func:`count_spans`, with the spans' bytes when counting framed them (for
    :func:`group_request`, which then need not frame them again).

    Bodies up to 1 MiB are framed by :func:`span_frames`; larger ones are scanned in
    Python and counting stops once it passes ``stop``: a request of millions of empty spans
    costs no more than ``stop`` steps. Raises :class:`TraceFormatError` on malformed framing.
    """
    if len(body) <= _FRAMED_MAX:
        frames = span_frames(body)
        return len(frames), frames
    total = 0
    resources, _ = _submessages(body, 0, len(body), 1, len(body))
    for start, end in resources:
        scopes, _ = _submessages(body, start, end, 2, len(body))
        for scope_start, scope_end in scopes:
            _, spans = _submessages(body, scope_start, scope_end, 2, stop - total, False)
            total += spans
            if total > stop:
                return total, None
    return total, None


_ANNOTATION = semconv.SPAN_ANNOTATION
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


def _all_spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [span for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans for span in scope_spans.spans]


def _events_over(spans: Any, attribute_limit: int) -> bool:
    """From a request's merged span (the request already parsed whole, so well-formed):
    whether any event has more than ``attribute_limit`` attributes, read at C speed."""
    events = spans.events
    # every attribute takes at least 2 bytes (tag and length): only events at least this
    # long can be over the limit, and only those are parsed
    longest = 2 * (attribute_limit + 1)
    return bool(events) and max(map(len, events)) >= longest and any(
        len(Span.Event.FromString(event).attributes) > attribute_limit
        for event in events if len(event) >= longest)


def group_request(request: ExportTraceServiceRequest, attribute_limit: int,
                  body: bytes | None = None, frames: Sequence[bytes] | None = None
                  ) -> tuple[tuple[TraceGroup, ...], int, str | None, dict[str, int], bool]:
    """One pass over a parsed request for the receive path: its valid spans grouped by trace
    (no object per span: the ids stay the bytes upb hands out, hex only per trace), the
    rejected count and first reason, the spans with invalid ids per trace id (the per-trace
    limit counts them too), and whether any span or event has more than ``attribute_limit``
    attributes (then the limits must edit the request).

    With ``body`` (the request's bytes), events are checked for the whole request at once
    (:func:`_events_over`), and a request of at least
    :data:`~spanguard_processor.ingest.otlp_columns.COLUMNS_MIN_SPANS` spans laid out as
    exporters write them is grouped from its bytes
    (:func:`~spanguard_processor.ingest.otlp_columns.group_frames`; ``frames``, its spans'
    bytes, if already framed). Otherwise, span by span, only the ids, the start time and the
    attribute count are read (and the name, if an annotation span may be among them): the
    result is the same."""
    over, names, merged = False, True, None
    if body is not None and (merged := merged_span(body)) is not None:
        over = _events_over(merged, attribute_limit)
        if len(merged.span_ids) >= COLUMNS_MIN_SPANS:
            grouped = group_frames(span_frames(body) if frames is None else frames, merged,
                                   attribute_limit)
            if grouped is not None:
                return grouped, 0, None, {}, over
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
                if (len(trace_id) != 16 or trace_id == _ZERO_TRACE or len(span_id) != 8
                        or span_id == _ZERO_SPAN
                        or (parent and (len(parent) != 8 or parent == _ZERO_SPAN))):
                    rejected += 1
                    error = error or (
                        f"span {span.name!r} has an invalid trace_id, span_id or "
                        "parent_span_id (a trace id is 16 bytes, a span id 8 bytes, not all "
                        "zero).")
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
        groups.append(TraceGroup(trace_id.hex(), held, starts[index], roots[index],
                                 int(notes[index])))
    return tuple(groups), rejected, error, bad, over


def decode_request(request: ExportTraceServiceRequest, body: bytes | None = None
                   ) -> DecodedBatch:
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
    return ([span.trace_id.hex() for span in spans],
            lambda position: record_from_span(spans[position]))
