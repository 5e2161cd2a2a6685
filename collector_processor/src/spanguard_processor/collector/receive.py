"""The one receive pipeline both OTLP receivers run; each keeps only its transport.

A request goes through :class:`Receiver` in this order:

1. :meth:`Receiver.admit` — before the body is decoded: refused while shutting down or after
   the store failed, and admitted on an estimate of its spans from its size
   (:class:`~spanguard_processor.collector.admission.Admission`);
2. :meth:`Receiver.receive` — on any thread, with the
   :class:`~spanguard_processor.ingest.codec.Codec` of the request's media type (picked once
   from its content type, :data:`CODECS`): the exact span count read off the wire format
   replaces the estimate (what cannot fit is refused before decoding), then the codec parses,
   shapes (limits and redaction as data, :class:`~spanguard_processor.collector.limits.Shaper`)
   and decodes; only the spans kept stay reserved; a request whose every span was rejected is
   refused; the batch is queued for the writer
   (:meth:`~spanguard_processor.collector.ingestor.Ingestor.submit`);
3. :meth:`Receiver.wait` (blocking) or :meth:`Receiver.wait_async` (in an event loop) — until
   the spans are durable;
4. the codec's answer (``Codec.traces_reply``; gRPC: ``ingest.codec_protobuf.export_response``),
   with partial success when some spans were rejected.

Every refusal is a :class:`Refused` of one :class:`Refusal` kind, which each receiver maps to
its own status: HTTP 400/413/429/500/503 (``Retry-After`` on 429 and 503), gRPC
``INVALID_ARGUMENT``/``RESOURCE_EXHAUSTED``/``INTERNAL``/``UNAVAILABLE``.
"""

from __future__ import annotations

import asyncio
import enum
from concurrent.futures import Future
from dataclasses import dataclass

from spanguard.exceptions import TraceFormatError

from ..ingest.codec import Codec, Media
from ..ingest.codec_json import JSON_CODEC
from ..ingest.codec_protobuf import PROTOBUF_CODEC
from ..ingest.otlp_proto import MIN_SPAN_BYTES
from ..ingest.spans import DecodedBatch, gc_paused
from .admission import Admission, Overloaded, Reservation, TooLarge
from .ingestor import Ingestor
from .limits import Limits, Shaper
from .redaction import RedactionFailed

__all__ = ["CODECS", "Received", "Receiver", "Refusal", "Refused"]

#: The codec of each OTLP media type; a receiver picks one per request, from its content type.
CODECS: dict[str, Codec] = {Media.PROTOBUF: PROTOBUF_CODEC, Media.JSON: JSON_CODEC}


class Refusal(enum.Enum):
    """Why a request was refused; each receiver maps it to its own status."""

    MALFORMED = "malformed"  # not OTLP, or every span rejected: HTTP 400, INVALID_ARGUMENT
    TOO_LARGE = "too large"  # could never fit: HTTP 413, RESOURCE_EXHAUSTED
    OVERLOADED = "overloaded"  # back-pressure, retry later: HTTP 429, RESOURCE_EXHAUSTED
    REDACTION_FAILED = "redaction failed"  # the operator's hook: HTTP 500, INTERNAL
    UNAVAILABLE = "unavailable"  # store failed or slow, shutting down: HTTP 503, UNAVAILABLE


class Refused(Exception):
    """A request refused, with the message the client gets; nothing of it was stored."""

    def __init__(self, kind: Refusal, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class Received:
    """A request decoded and queued for the writer: the spans kept, and the future that
    resolves once they are durable (it holds the request's reservation until then)."""

    batch: DecodedBatch
    stored: Future[None]


class Receiver:
    """Admission, shaping, decoding and the durable commit, shared by both receivers."""

    def __init__(
        self, ingestor: Ingestor, admission: Admission | None = None, shaper: Shaper | None = None
    ) -> None:
        self.ingestor = ingestor
        self.admission = admission if admission is not None else Admission()
        self.shaper = shaper if shaper is not None else Shaper(self.admission.limits)

    @property
    def limits(self) -> Limits:
        return self.admission.limits

    def overloaded(self) -> Refused:
        """The refusal of a request that does not fit now (the client retries later)."""
        return Refused(Refusal.OVERLOADED, f"the processor is overloaded: {self.admission.busy()}")

    def estimate(self, size: int) -> int:
        """The spans a request of ``size`` (decoded) bytes is admitted for before decoding."""
        return -(-size // MIN_SPAN_BYTES)

    def admit(self, size: int) -> Reservation:
        """Reserve room for a request of ``size`` (decoded) bytes before decoding it."""
        if not self.ingestor.healthy:
            raise Refused(Refusal.UNAVAILABLE, "the processor is shutting down; retry later.")
        try:
            return self.admission.admit(self.estimate(size))
        except Overloaded:
            raise self.overloaded() from None

    def release_unless_stored(self, reservation: Reservation) -> None:
        """Give the reservation back unless a store future holds it (idempotent)."""
        if not reservation.owned:
            self.admission.release(reservation)

    def receive(
        self, body: bytes, codec: Codec, reservation: Reservation, *, what: str = "body"
    ) -> Received:
        """Count, parse, shape and decode ``body`` with ``codec`` (the request's media type),
        then queue its spans for the writer. On a refusal the reservation is given back; once
        queued, the store future holds it. ``what`` names the body in messages ("body",
        "request")."""
        admission = self.admission
        try:
            counted = codec.count(body, self.limits.max_pending_spans)
            admission.resize(reservation, counted.spans)  # what cannot fit is not decoded
            with gc_paused():
                batch = codec.decode(body, counted, self.shaper.shaping)
            admission.resize(reservation, batch.count)  # only the valid spans are kept
            if batch.rejected and not batch.count:
                raise Refused(Refusal.MALFORMED, f"every span was rejected: {batch.error}")
            return Received(batch, admission.hold(lambda: self.ingestor.submit(batch), reservation))
        except TraceFormatError as exc:
            raise Refused(
                Refusal.MALFORMED, str(exc) if exc.field else f"the {what} {exc}"
            ) from None
        except TooLarge as exc:
            raise Refused(Refusal.TOO_LARGE, str(exc)) from None
        except Overloaded:
            raise self.overloaded() from None
        except RedactionFailed as exc:
            raise Refused(Refusal.REDACTION_FAILED, f"{exc}; the spans were not stored.") from None
        finally:
            self.release_unless_stored(reservation)

    def wait(self, received: Received) -> None:
        """Block until the spans are durable; a store failure or timeout is UNAVAILABLE."""
        try:
            received.stored.result(timeout=self.limits.ack_timeout)
        except Exception as exc:
            raise _not_stored(exc) from exc

    async def wait_async(self, received: Received) -> None:
        """The same in an event loop; a timeout or a client hanging up (the task cancelled)
        leaves the writer's future as it is. One loop future and one timer per request: the
        writer's thread wakes the loop once (``asyncio.wrap_future`` under ``shield`` and
        ``wait_for`` took three futures and a chain of callbacks)."""
        stored = received.stored
        if not stored.done():
            loop = asyncio.get_running_loop()
            waiter = loop.create_future()

            def wake(_: object) -> None:  # in the writer's thread
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_resolve, waiter)

            timer = loop.call_later(self.limits.ack_timeout, _resolve, waiter)
            stored.add_done_callback(wake)
            try:
                await waiter
            finally:
                timer.cancel()
            if not stored.done():
                raise _not_stored(TimeoutError())
        exc = stored.exception()
        if exc is not None:
            raise _not_stored(exc) from exc


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _not_stored(exc: BaseException) -> Refused:
    if isinstance(exc, TimeoutError):
        return Refused(Refusal.UNAVAILABLE, "the store is slow; retry later.")
    return Refused(Refusal.UNAVAILABLE, f"the spans could not be stored ({exc}); retry later.")
