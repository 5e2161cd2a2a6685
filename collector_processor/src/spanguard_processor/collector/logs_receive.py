"""The OTLP logs receivers' one step of their own: a logs request becomes the span form.

``POST /v1/logs`` and ``LogsService/Export`` run the trace receive pipeline
(:class:`~spanguard_processor.collector.receive.Receiver`) unchanged — admission, limits,
redaction, the durable commit and the acknowledgement are the traces' own — after the codec of
the request's media type (``Codec.logs_as_spans``, :func:`logs_request_as_spans`) turned the
request into a trace request: each log record that
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

from dataclasses import replace

from spanguard.exceptions import TraceFormatError

from ..ingest.codec import Codec, LogsSpans
from ..ingest.codec_protobuf import PROTOBUF_CODEC
from ..ingest.spans import DecodedBatch, gc_paused
from .admission import Overloaded, Reservation
from .receive import Received, Receiver, Refusal, Refused

__all__ = ["LogsReceiver", "logs_request_as_spans"]


def logs_request_as_spans(body: bytes, codec: Codec, what: str = "body") -> LogsSpans:
    """A logs request (already decompressed, read by the ``codec`` of its media type) as the
    trace request the receive pipeline takes; :class:`Refused` (MALFORMED) when it is not a
    logs request."""
    try:
        with gc_paused():
            return codec.logs_as_spans(body)
    except TraceFormatError as exc:
        raise Refused(Refusal.MALFORMED, f"the {what} {exc}") from None


def _unjoined_message(count: int, unnamed: int) -> str:
    parts = []
    if unnamed:
        parts.append(
            f"{unnamed} log record(s) say not what they are (no event_name, no event.name "
            "attribute, no GenAI attributes or message body)"
        )
    if count > unnamed:
        parts.append(f"{count - unnamed} log record(s) name no span (a valid trace_id and span_id)")
    return "; ".join(parts) + "; spanguard keeps only GenAI event records it can join to a span."


def _too_many(share: int) -> Refused:
    return Refused(
        Refusal.TOO_LARGE,
        f"the request carries more than {share} log records, the most one request may carry "
        "(a quarter of the processor's max_pending_spans limit); send smaller batches.",
    )


class LogsReceiver(Receiver):
    """The trace :class:`Receiver` (the same ingestor, admission and shaper) taking logs
    requests: :meth:`receive` turns the body into the span form first."""

    @classmethod
    def beside(cls, traces: Receiver) -> LogsReceiver:
        """A logs receiver sharing everything with the trace receiver ``traces``."""
        return cls(traces.ingestor, traces.admission, traces.shaper)

    def estimate(self, size: int) -> int:
        """A logs request is admitted for at most its share of the pending budget
        (:attr:`~.limits.Limits.request_share`), so one request never holds all of it."""
        return min(super().estimate(size), self.limits.request_share)

    def receive(
        self, body: bytes, codec: Codec, reservation: Reservation, *, what: str = "body"
    ) -> Received:
        try:
            self._admit_records(body, codec, reservation, what)
            spans = logs_request_as_spans(body, codec, what)
        except Refused:
            self.release_unless_stored(reservation)
            raise
        received = super().receive(spans.body, PROTOBUF_CODEC, reservation, what=what)
        if not spans.unjoined:
            return received
        batch: DecodedBatch = received.batch
        return Received(
            replace(
                batch,
                rejected=batch.rejected + spans.unjoined,
                error=batch.error or _unjoined_message(spans.unjoined, spans.unnamed),
            ),
            received.stored,
        )

    def _admit_records(
        self, body: bytes, codec: Codec, reservation: Reservation, what: str
    ) -> None:
        """Count the records off the wire and hold exactly them, before any is converted:
        more than the request's share is TOO_LARGE, what does not fit now OVERLOADED."""
        share = self.limits.request_share
        try:
            records = codec.count_records(body, share)
        except TraceFormatError as exc:
            raise Refused(Refusal.MALFORMED, f"the {what} {exc}") from None
        if records > share:
            raise _too_many(share)
        try:
            self.admission.resize(reservation, max(1, records))
        except Overloaded:
            raise self.overloaded() from None
