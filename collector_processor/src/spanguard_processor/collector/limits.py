"""Request limits and back-pressure, applied by both receivers before spans reach the store.

* **Shape limits** (:meth:`Guard.shape_protobuf`, :meth:`Guard.shape_json`), applied to the
  parsed request in place: attributes beyond ``max_attributes_per_span`` are dropped (and
  counted in ``dropped_attributes_count``, as the OTel SDK does); spans beyond
  ``max_spans_per_trace`` are rejected and reported through OTLP partial success; the
  :class:`~spanguard_processor.collector.redaction.Redactor` runs here, so redacted text is
  never stored.
* **Admission before work** (:meth:`Guard.admit`, :meth:`Guard.resize`): at most
  ``max_pending_spans`` spans may be decoding or waiting for the store. A request reserves its
  spans *before* it is decoded — first an estimate from its size, then the exact count read
  from the wire format (:func:`~spanguard_processor.ingest.otlp_proto.count_spans`), then what
  decoding kept. What does not fit is refused at once with :class:`Overloaded` — HTTP 429 with
  ``Retry-After``, gRPC ``RESOURCE_EXHAUSTED`` — instead of being decoded or queued without
  bound; a request carrying more spans than ``max_pending_spans`` could never fit and is
  refused with :class:`TooLarge` (HTTP 413, gRPC ``RESOURCE_EXHAUSTED``). A store failure or a
  store slower than ``ack_timeout`` answers HTTP 503 / gRPC ``UNAVAILABLE``. Exporters retry
  429, 503 and ``UNAVAILABLE``, and the store keeps one copy of a re-sent span.

The per-trace span count is kept for the ``trace_memory`` most recently seen traces and counts
every span received, so a re-sent span counts again: the limit errs on the strict side.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, MutableMapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..ingest.otlp_proto import decode_request, index_request
from ..ingest.spans import FORMAT_PROTOBUF, DecodedBatch
from .redaction import Redactor

__all__ = ["DEFAULT_MAX_BODY", "Guard", "Limits", "Overloaded", "Reservation", "TooLarge"]

# The largest OTLP/HTTP request body and OTLP/gRPC message either receiver accepts.
DEFAULT_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit ``spanguard serve`` enforces (defaults are the safe ones)."""

    max_attributes_per_span: int = 128
    max_spans_per_trace: int = 10_000
    max_pending_spans: int = 50_000
    ack_timeout: float = 30.0
    retry_after: int = 1
    trace_memory: int = 100_000


class Overloaded(Exception):
    """Too many spans are waiting for the store; the client should retry after a pause."""


class TooLarge(Exception):
    """One request carries more spans than may ever be pending; it must be sent smaller."""


@dataclass(eq=False, slots=True)
class Reservation:
    """Spans one request holds against ``max_pending_spans`` until it is stored or refused."""

    spans: int
    released: bool = False
    owned: bool = False  # handed to a store future, which releases it


@dataclass
class _Shape:
    rejected: int = 0
    error: str | None = None
    changed: bool = False


@dataclass
class Guard:
    """Limits, redaction and admission shared by the gRPC and HTTP receivers of one process."""

    limits: Limits = field(default_factory=Limits)
    redactor: Redactor = field(default_factory=Redactor)
    pending: int = 0
    _counts: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- back-pressure ---------------------------------------------------------------------

    def admit(self, estimate: int) -> Reservation:
        """Reserve room for a request before decoding it, from an estimate of its spans.

        An estimate above ``max_pending_spans`` reserves all of it (the exact count decides
        later), so a large request is decoded only when nothing else is pending.
        """
        spans = max(1, min(estimate, self.limits.max_pending_spans))
        with self._lock:
            if self.pending + spans > self.limits.max_pending_spans:
                raise Overloaded(self._busy())
            self.pending += spans
        return Reservation(spans)

    def fits(self, estimate: int) -> bool:
        """Whether :meth:`admit` would admit ``estimate`` spans now (nothing is reserved)."""
        spans = max(1, min(estimate, self.limits.max_pending_spans))
        return self.pending + spans <= self.limits.max_pending_spans

    def busy(self) -> str:
        """Why a request is refused as overloaded."""
        return self._busy()

    def resize(self, reservation: Reservation, spans: int) -> None:
        """Hold ``spans`` (an exact count) instead of the estimate; refuses what cannot fit."""
        limit = self.limits.max_pending_spans
        if spans > limit:
            raise TooLarge(f"the request carries more than {limit} spans, the most one request "
                           "may carry (--max-pending-spans); send smaller batches.")
        with self._lock:
            if reservation.released:
                raise RuntimeError("the reservation was released")
            grow = spans - reservation.spans
            if grow > 0 and self.pending + grow > limit:
                raise Overloaded(self._busy())
            self.pending += grow
            reservation.spans = spans

    def release(self, reservation: Reservation) -> None:
        """Give the reservation back (idempotent)."""
        with self._lock:
            if not reservation.released:
                reservation.released = True
                self.pending -= reservation.spans

    def _busy(self) -> str:
        return (f"{self.pending} spans are being decoded or waiting for the store; retry in "
                f"{self.limits.retry_after} s.")

    def submit(self, send: Callable[[], Future[None]], reservation: Reservation
               ) -> Future[None]:
        """Call ``send`` (which queues the reserved spans); the reservation is released when
        the returned future is done (stored or failed) or when ``send`` raises."""
        try:
            future = send()
        except BaseException:
            self.release(reservation)
            raise
        reservation.owned = True
        future.add_done_callback(lambda _: self.release(reservation))
        return future

    # --- shape limits and redaction ------------------------------------------------------

    def _admit(self, counts: Mapping[str, int], shape: _Shape) -> dict[str, int]:
        """Count this request's spans per trace; how many of each trace's spans may pass."""
        limit = self.limits.max_spans_per_trace
        allowed: dict[str, int] = {}
        with self._lock:
            for trace_id, count in counts.items():
                before = self._counts.pop(trace_id, 0)
                self._counts[trace_id] = before + count
                allowed[trace_id] = max(0, min(count, limit - before))
            while len(self._counts) > self.limits.trace_memory:
                self._counts.popitem(last=False)
        for trace_id, count in counts.items():
            if allowed[trace_id] < count:
                shape.rejected += count - allowed[trace_id]
                shape.error = shape.error or (
                    f"trace {trace_id} has more than {limit} spans; later spans of it are "
                    "rejected.")
        return allowed

    def shape_and_decode(self, request: Any, body: bytes | None) -> DecodedBatch:
        """Limits, redaction and decoding of a parsed request in one pass when nothing needs
        editing (the common case); otherwise :meth:`shape_protobuf` then ``decode_request``.

        ``body`` is the request as received; a request the limits or redaction changed is
        serialized again, so the original text is never stored. Rejected spans (bad ids, or
        over the per-trace limit) are counted in the batch, with the first reason.
        """
        if not self.redactor.active:
            spans, rejected, error, counts, over = index_request(
                request, self.limits.max_attributes_per_span)
            if not over:
                shape = _Shape()
                allowed = self._admit(counts, shape)
                if not shape.rejected:
                    return DecodedBatch(tuple(spans), rejected, error, FORMAT_PROTOBUF,
                                        body if body is not None
                                        else request.SerializeToString())
                scopes = [ss for rs in request.resource_spans for ss in rs.scope_spans]
                self._drop_over_limit(scopes, allowed, shape)
                batch = decode_request(request)
                return DecodedBatch(batch.spans, batch.rejected + shape.rejected,
                                    batch.error or shape.error, FORMAT_PROTOBUF, batch.body)
        limited, limit_error, changed = self.shape_protobuf(request)
        batch = decode_request(request, None if changed else body)
        if not limited:
            return batch
        return DecodedBatch(batch.spans, batch.rejected + limited, batch.error or limit_error,
                            FORMAT_PROTOBUF, batch.body)

    def shape_protobuf(self, request: Any) -> tuple[int, str | None, bool]:
        """Apply the limits and redaction to a parsed ``ExportTraceServiceRequest`` in place.

        Returns ``(rejected spans, first reason, whether the request changed)``.
        """
        shape = _Shape()
        scopes = [ss for rs in request.resource_spans for ss in rs.scope_spans]
        limit = self.limits.max_attributes_per_span
        redact = self.redactor.active
        raw: Counter[bytes] = Counter()
        for scope_spans in scopes:  # one pass: every span wrapper is made once
            for span in scope_spans.spans:
                raw[span.trace_id] += 1
                if redact or len(span.attributes) > limit:
                    self._proto_attributes(span, shape)
                events = span.events
                if events:
                    for event in events:
                        if redact or len(event.attributes) > limit:
                            self._proto_attributes(event, shape)
        allowed = self._admit({t.hex(): n for t, n in raw.items()}, shape)
        if shape.rejected:
            self._drop_over_limit(scopes, allowed, shape)
        return shape.rejected, shape.error, shape.changed

    @staticmethod
    def _drop_over_limit(scopes: list[Any], allowed: dict[str, int], shape: _Shape) -> None:
        remaining = dict(allowed)
        for scope_spans in scopes:
            spans = scope_spans.spans
            over = []
            for index, span in enumerate(spans):
                trace_id = span.trace_id.hex()
                if remaining[trace_id] > 0:
                    remaining[trace_id] -= 1
                else:
                    over.append(index)
            for index in reversed(over):
                del spans[index]
                shape.changed = True

    def _proto_attributes(self, holder: Any, shape: _Shape) -> None:
        attributes = holder.attributes
        limit = self.limits.max_attributes_per_span
        if len(attributes) > limit:
            holder.dropped_attributes_count += len(attributes) - limit
            del attributes[limit:]
            shape.changed = True
        if not self.redactor.active:
            return
        for index in range(len(attributes) - 1, -1, -1):
            kv = attributes[index]
            text = kv.value.string_value if kv.value.HasField("string_value") else None
            keep, new = self.redactor.text(kv.key, text)
            if not keep:
                del attributes[index]
                holder.dropped_attributes_count += 1
                shape.changed = True
            elif new is not None and new != text:
                kv.value.string_value = new
                shape.changed = True

    def shape_json(self, document: Any) -> tuple[int, str | None, bool]:
        """The same for a parsed OTLP-JSON document; malformed parts are left to the decoder."""
        shape = _Shape()
        for span in _json_spans(document, shape, self):
            self._json_attributes(span, shape)
            events = span.get("events")
            for event in events if isinstance(events, list) else ():
                if isinstance(event, dict):
                    self._json_attributes(event, shape)
        return shape.rejected, shape.error, shape.changed

    def _json_attributes(self, holder: MutableMapping[str, Any], shape: _Shape) -> None:
        attributes = holder.get("attributes")
        if not isinstance(attributes, list):
            return
        limit = self.limits.max_attributes_per_span
        dropped = max(0, len(attributes) - limit)
        kept = attributes[:limit]
        if self.redactor.active:
            redacted = []
            for kv in kept:
                if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                    redacted.append(kv)
                    continue
                value = kv.get("value")
                text = value.get("stringValue") if isinstance(value, dict) else None
                keep, new = self.redactor.text(kv["key"], text if isinstance(text, str) else None)
                if not keep:
                    dropped += 1
                    continue
                if new is not None and new != text:
                    kv = {**kv, "value": {"stringValue": new}}
                redacted.append(kv)
            kept = redacted
        if dropped or kept != attributes:
            holder["attributes"] = kept
            previous = holder.get("droppedAttributesCount")
            holder["droppedAttributesCount"] = dropped + (
                previous if isinstance(previous, int) and not isinstance(previous, bool) else 0)
            shape.changed = True


def _json_trace_id(span: object) -> str | None:
    trace_id = span.get("traceId") if isinstance(span, dict) else None
    return trace_id.lower() if isinstance(trace_id, str) else None


def _json_spans(document: Any, shape: _Shape, guard: Guard) -> list[dict[str, Any]]:
    """The span objects of a document, with spans over the per-trace limit removed."""
    scopes: list[dict[str, Any]] = []
    resources = document.get("resourceSpans") if isinstance(document, dict) else None
    for resource in resources if isinstance(resources, list) else ():
        for key in ("scopeSpans", "instrumentationLibrarySpans"):
            found = resource.get(key) if isinstance(resource, dict) else None
            scopes.extend(scope for scope in (found if isinstance(found, list) else ())
                          if isinstance(scope, dict) and isinstance(scope.get("spans"), list))
    counts = Counter(t for scope in scopes for span in scope["spans"]
                     if (t := _json_trace_id(span)) is not None)
    remaining = guard._admit(counts, shape)
    spans: list[dict[str, Any]] = []
    for scope in scopes:
        kept = []
        for span in scope["spans"]:
            trace_id = _json_trace_id(span)
            if trace_id is not None:
                if remaining[trace_id] <= 0:
                    shape.changed = True
                    continue
                remaining[trace_id] -= 1
            kept.append(span)
            if isinstance(span, dict):
                spans.append(span)
        scope["spans"] = kept
    return spans
