"""The OTLP logs receivers' one step of their own: a logs request becomes the span form.

``POST /v1/logs`` and ``LogsService/Export`` run the trace receive pipeline
(:class:`~spanguard_processor.collector.receive.Receiver`) unchanged — admission, limits,
redaction, the durable commit and the acknowledgement are the traces' own — after
:func:`logs_request_as_spans` turned the request into a trace request: each log record that
names a span becomes a ``spanguard.log`` child span carrying the record as its one event (its
attributes, and its body under ``spanguard.log.body``; :func:`~spanguard_processor.ingest.
otlp_logs.logs_as_spans`). The store holds them beside the spans, a re-sent record is stored
once (its span id is derived from the record), and conversion folds the event into the span it
names whichever arrived first. Redaction therefore reaches the records' attributes and body as
it reaches any span event's.

A ``gen_ai.evaluation.result`` that names its trace but no span (a verdict about a whole
request) is kept with the trace's root. Other log records that name no span (no valid
``trace_id`` and ``span_id``) cannot be joined to a trace; they are reported through OTLP
partial success (``rejected_log_records``, with a message) and the rest are stored. A request
of such records only is answered 200 / OK with that partial success: nothing of it is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from ..ingest.otlp_logs import LogEvent, _items, events_from_document, logs_as_spans
from ..ingest.otlp_logs_proto import request_as_spans
from ..ingest.spans import DecodedBatch, gc_paused
from .admission import Reservation
from .receive import JSON, PROTOBUF, Received, Receiver, Refusal, Refused

__all__ = ["LogsReceiver", "LogsSpans", "logs_export_response", "logs_http_response",
           "logs_request_as_spans"]


@dataclass(frozen=True, slots=True)
class LogsSpans:
    """A logs request in the span form: the serialized ``ExportTraceServiceRequest``, and how
    many of its log records named no span (left out)."""

    body: bytes
    unjoined: int


def _count_records(doc: Mapping[str, Any]) -> int:
    return sum(len(_items(scope, "logRecords")) for resource in _items(doc, "resourceLogs")
               for scope in _items(resource, "scopeLogs"))


def _from_json(body: bytes, what: str) -> tuple[list[LogEvent], int]:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise Refused(Refusal.MALFORMED,
                      f"the {what} is not valid JSON (or not UTF-8): {exc}.") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceLogs", []), list):
        raise Refused(Refusal.MALFORMED, f"the {what} is not an OTLP-JSON logs request: it "
                                         "must be an object whose 'resourceLogs' is a list.")
    return events_from_document(doc, trace_level=True), _count_records(doc)


def _from_protobuf(body: bytes, what: str) -> LogsSpans:
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise Refused(Refusal.MALFORMED,
                      f"the {what} is not an ExportLogsServiceRequest ({exc}).") from None
    total = sum(len(scope.log_records) for resource in request.resource_logs
                for scope in resource.scope_logs)
    spans, kept = request_as_spans(request, trace_level=True)
    return LogsSpans(spans.SerializeToString() if kept else b"", total - kept)


def logs_request_as_spans(body: bytes, media: str, what: str = "body") -> LogsSpans:
    """A logs request (``media``: protobuf or JSON, already decompressed) as the trace request
    the receive pipeline takes; :class:`Refused` (MALFORMED) when it is not a logs request."""
    with gc_paused():
        if media == PROTOBUF:
            return _from_protobuf(body, what)
        events, total = _from_json(body, what)
        return LogsSpans(logs_as_spans(events).SerializeToString() if events else b"",
                         total - len(events))


def _unjoined_message(count: int) -> str:
    return (f"{count} log record(s) name no span (a valid trace_id and span_id); spanguard "
            "keeps only log records it can join to a span.")


class LogsReceiver(Receiver):
    """The trace :class:`Receiver` (the same ingestor, admission and shaper) taking logs
    requests: :meth:`receive` turns the body into the span form first."""

    @classmethod
    def beside(cls, traces: Receiver) -> LogsReceiver:
        """A logs receiver sharing everything with the trace receiver ``traces``."""
        return cls(traces.ingestor, traces.admission, traces.shaper)

    def receive(self, body: bytes, media: str, reservation: Reservation, *,
                what: str = "body") -> Received:
        try:
            spans = logs_request_as_spans(body, media if media in (PROTOBUF, JSON) else JSON,
                                          what)
        except Refused:
            self.release_unless_stored(reservation)
            raise
        received = super().receive(spans.body, PROTOBUF, reservation, what=what)
        if not spans.unjoined:
            return received
        batch: DecodedBatch = received.batch
        return Received(replace(batch, rejected=batch.rejected + spans.unjoined,
                                error=batch.error or _unjoined_message(spans.unjoined)),
                        received.stored)


def logs_export_response(batch: DecodedBatch) -> ExportLogsServiceResponse:
    """The OTLP logs answer: partial success counts the records not kept, with the reason."""
    reply = ExportLogsServiceResponse()
    if batch.rejected:
        reply.partial_success.rejected_log_records = batch.rejected
        reply.partial_success.error_message = batch.error or ""
    return reply


def logs_http_response(media: str, batch: DecodedBatch) -> bytes:
    """The OTLP/HTTP logs answer's body in ``media`` (protobuf or OTLP-JSON)."""
    if media == PROTOBUF:
        return logs_export_response(batch).SerializeToString()
    body: dict[str, Any] = {}
    if batch.rejected:
        body["partialSuccess"] = {"rejectedLogRecords": str(batch.rejected),
                                  "errorMessage": batch.error or ""}
    return orjson.dumps(body)
