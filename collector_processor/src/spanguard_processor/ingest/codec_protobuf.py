"""The protobuf codec (``application/x-protobuf``, and every OTLP/gRPC message).

Counting frames the spans of a body up to 1 MiB once (:func:`~.otlp_columns.framed_count`), and
decoding reuses those frames. When no redactor is active, limits and decoding go in one pass
(:func:`~.otlp_proto.group_request`): spans stay bytes, grouped by trace, and the body received
is what is stored. Otherwise — or when a span or event has more attributes than the limit —
the parsed request is shaped in place (:meth:`ProtobufCodec.shape`) and decoded again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from operator import itemgetter, rshift

from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from spanguard.exceptions import TraceFormatError

from .codec import Codec, Counted, LogsSpans, Media
from .otlp_columns import count_spans, framed_count
from .otlp_logs_proto import request_as_spans, unnamed_records
from .otlp_proto import decode_request, group_request, parse_request
from .redact_otlp import redact_request
from .shaping import Shape, Shaping
from .spans import FORMAT_PROTOBUF, DecodedBatch, TraceGroup

__all__ = ["PROTOBUF_CODEC", "ProtobufCodec", "export_response", "logs_export_response"]


def _with_bad(groups: Sequence[TraceGroup], bad: dict[str, int]) -> Iterable[tuple[str, int]]:
    """Each trace's spans in a request: its valid ones (grouped) and those with bad ids."""
    if not bad:  # the common case, at C speed
        return zip(
            map(itemgetter(0), groups),
            map(rshift, map(len, map(itemgetter(1), groups)), repeat(3)),
            strict=True,
        )
    return _counted_with_bad(groups, bad)


def _counted_with_bad(
    groups: Iterable[TraceGroup], bad: dict[str, int]
) -> Iterator[tuple[str, int]]:
    for group in groups:
        yield group.trace_id, group.span_count + bad.pop(group.trace_id, 0)
    yield from bad.items()


class ProtobufCodec(Codec):
    """OTLP protobuf: ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest``."""

    media = Media.PROTOBUF

    def count(self, body: bytes, stop: int) -> Counted:
        count, frames = framed_count(body, stop)  # framed once (if small enough)
        return Counted(count, frames)

    def decode(self, body: bytes, counted: Counted | None, shaping: Shaping) -> DecodedBatch:
        request = parse_request(body)
        shape: Shape | None = None
        if not shaping.redactor.active:  # limits and grouping in one pass (the common case)
            groups, rejected, error, bad, over = group_request(
                request,
                shaping.attribute_limit,
                body,
                counted.frames if counted is not None else None,
            )
            if not over:
                shape = Shape()
                allowed = shaping.budget.admit(_with_bad(groups, bad), shape)
                if not shape.rejected:
                    return DecodedBatch((), rejected, error, FORMAT_PROTOBUF, body, groups)
                _drop_over_limit(_scopes(request), allowed, shape)  # changes the request
        if shape is None:  # redaction, or an attribute over the limit: edit the request
            shape = self.shape(request, shaping)
        batch = decode_request(request, None if shape.changed else body)
        if not shape.rejected:
            return batch
        return DecodedBatch(
            batch.spans,
            batch.rejected + shape.rejected,
            batch.error or shape.error,
            FORMAT_PROTOBUF,
            batch.body,
        )

    @staticmethod
    def shape(request: ExportTraceServiceRequest, shaping: Shaping) -> Shape:
        """Apply the limits and redaction to a parsed request in place."""
        shape = Shape()
        scopes = _scopes(request)
        limit = shaping.attribute_limit
        if shaping.redactor.active:  # every string of the request, at any depth
            shape.changed |= redact_request(shaping.redactor, request)
        raw: Counter[bytes] = Counter()
        for scope_spans in scopes:  # one pass: every span wrapper is made once
            for span in scope_spans.spans:
                raw[span.trace_id] += 1
                if len(span.attributes) > limit:
                    _cut_attributes(span, limit, shape)
                events = span.events
                if events:
                    for event in events:
                        if len(event.attributes) > limit:
                            _cut_attributes(event, limit, shape)
        allowed = shaping.budget.admit(((t.hex(), n) for t, n in raw.items()), shape)
        if shape.rejected:
            _drop_over_limit(scopes, allowed, shape)
        return shape

    def count_records(self, body: bytes, stop: int) -> int:
        # ResourceLogs/ScopeLogs/LogRecord have the field numbers of the trace request's
        # ResourceSpans/ScopeSpans/Span (1, 2, 2): the span count of the wire format is theirs
        try:
            return count_spans(body, stop)
        except TraceFormatError:
            raise TraceFormatError(
                "is not an ExportLogsServiceRequest (malformed wire format)."
            ) from None

    def logs_as_spans(self, body: bytes) -> LogsSpans:
        request = ExportLogsServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise TraceFormatError(f"is not an ExportLogsServiceRequest ({exc}).") from None
        total = sum(
            len(scope.log_records)
            for resource in request.resource_logs
            for scope in resource.scope_logs
        )
        spans, kept = request_as_spans(request, trace_level=True)
        unnamed = unnamed_records(request) if kept < total else 0
        return LogsSpans(spans.SerializeToString() if kept else b"", total - kept, unnamed)

    def traces_reply(self, batch: DecodedBatch) -> bytes:
        return export_response(batch).SerializeToString()

    def logs_reply(self, batch: DecodedBatch) -> bytes:
        return logs_export_response(batch).SerializeToString()

    def error_reply(self, status: int, rpc_code: int, message: str) -> bytes:
        return Status(code=rpc_code, message=message).SerializeToString()


def _scopes(request: ExportTraceServiceRequest) -> list[ScopeSpans]:
    return [ss for rs in request.resource_spans for ss in rs.scope_spans]


def _drop_over_limit(scopes: list[ScopeSpans], allowed: dict[str, int], shape: Shape) -> None:
    remaining = dict(allowed)
    for scope_spans in scopes:
        spans = scope_spans.spans
        over = []
        for index, span in enumerate(spans):
            trace_id = span.trace_id.hex()
            left = remaining.get(trace_id)
            if left is None:  # within the limit
                continue
            if left > 0:
                remaining[trace_id] = left - 1
            else:
                over.append(index)
        for index in reversed(over):
            del spans[index]
            shape.changed = True


def _cut_attributes(holder: Span | Span.Event, limit: int, shape: Shape) -> None:
    attributes = holder.attributes
    if len(attributes) > limit:
        holder.dropped_attributes_count += len(attributes) - limit
        del attributes[limit:]
        shape.changed = True


def export_response(batch: DecodedBatch) -> ExportTraceServiceResponse:
    """The OTLP answer: partial success counts the rejected spans, with the first reason."""
    reply = ExportTraceServiceResponse()
    if batch.rejected:
        reply.partial_success.rejected_spans = batch.rejected
        reply.partial_success.error_message = batch.error or ""
    return reply


def logs_export_response(batch: DecodedBatch) -> ExportLogsServiceResponse:
    """The OTLP logs answer: partial success counts the records not kept, with the reason."""
    reply = ExportLogsServiceResponse()
    if batch.rejected:
        reply.partial_success.rejected_log_records = batch.rejected
        reply.partial_success.error_message = batch.error or ""
    return reply


PROTOBUF_CODEC = ProtobufCodec()
