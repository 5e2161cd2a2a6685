"""Request limits, applied by both receivers before spans reach the store.

:class:`Limits` holds every limit ``spanguard serve`` enforces; :data:`DEFAULT_MAX_BODY` is the
largest request body or message either receiver accepts. The back-pressure ones
(``max_pending_spans``, ``ack_timeout``, ``retry_after``) are applied by
:class:`~spanguard_processor.collector.admission.Admission`; the shape limits here, by
:class:`Shaper`, on the parsed request in place (:meth:`Shaper.shape_protobuf`,
:meth:`Shaper.shape_json`):

* attributes beyond ``max_attributes_per_span`` are dropped (and counted in
  ``dropped_attributes_count``, as the OTel SDK does);
* spans beyond ``max_spans_per_trace`` are rejected and reported through OTLP partial success;
* the :class:`~spanguard_processor.collector.redaction.Redactor` runs here, over every string
  of the request (:mod:`~spanguard_processor.collector.redact_otlp`), so redacted text is never
  stored.

The per-trace span count is kept for the ``trace_memory`` most recently seen traces and counts
every span received, so a re-sent span counts again: the limit errs on the strict side.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter, rshift
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from ..ingest.otlp_proto import decode_request, group_request
from ..ingest.spans import FORMAT_PROTOBUF, DecodedBatch, TraceGroup
from .redact_otlp import redact_document, redact_request
from .redaction import Redactor

__all__ = ["DEFAULT_MAX_BODY", "Limits", "Shaper"]

# The largest OTLP/HTTP request body and OTLP/gRPC message either receiver accepts.
DEFAULT_MAX_BODY = 16 * 1024 * 1024


def _with_bad(groups: Sequence[TraceGroup], bad: dict[str, int]) -> Iterable[tuple[str, int]]:
    """Each trace's spans in a request: its valid ones (grouped) and those with bad ids."""
    if not bad:  # the common case, at C speed
        return zip(map(itemgetter(0), groups),
                   map(rshift, map(len, map(itemgetter(1), groups)), repeat(3)), strict=True)
    return _counted_with_bad(groups, bad)


def _counted_with_bad(groups: Iterable[TraceGroup], bad: dict[str, int]
                      ) -> Iterator[tuple[str, int]]:
    for group in groups:
        yield group.trace_id, group.span_count + bad.pop(group.trace_id, 0)
    yield from bad.items()


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit ``spanguard serve`` enforces (defaults are the safe ones)."""

    max_attributes_per_span: int = 128
    max_spans_per_trace: int = 10_000
    max_pending_spans: int = 50_000
    ack_timeout: float = 30.0
    retry_after: int = 1
    trace_memory: int = 100_000


@dataclass
class _Shape:
    rejected: int = 0
    error: str | None = None
    changed: bool = False


@dataclass(eq=False)
class Shaper:
    """Shape limits and redaction shared by the gRPC and HTTP receivers of one process (it
    remembers how many spans of each recent trace it has let through)."""

    limits: Limits = field(default_factory=Limits)
    redactor: Redactor = field(default_factory=Redactor)
    _counts: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _admit(self, counts: Iterable[tuple[str, int]], shape: _Shape) -> dict[str, int]:
        """Count this request's spans per trace (each trace once in ``counts``); returns how
        many spans may pass of each trace the limit cuts (the others pass whole)."""
        limit = self.limits.max_spans_per_trace
        memory = self.limits.trace_memory
        limited: dict[str, int] = {}
        with self._lock:
            counted = self._counts
            pop = counted.pop
            for trace_id, count in counts:
                before = pop(trace_id, 0)
                total = counted[trace_id] = before + count  # now the most recently seen
                if total > limit:
                    allowed = limited[trace_id] = max(0, limit - before)
                    shape.rejected += count - allowed
                    shape.error = shape.error or (
                        f"trace {trace_id} has more than {limit} spans; later spans of it are "
                        "rejected.")
            while len(counted) > memory:  # forget the least recently seen
                counted.popitem(last=False)
        return limited

    def shape_and_decode(self, request: ExportTraceServiceRequest, body: bytes | None,
                         frames: Sequence[bytes] | None = None) -> DecodedBatch:
        """Limits, redaction and decoding of a parsed request in one pass when nothing needs
        editing (the common case); otherwise :meth:`shape_protobuf` then ``decode_request``.

        ``body`` is the request as received (``frames``: its spans' bytes, if already framed
        by ``span_frames``); a request the limits or redaction changed is serialized again,
        so the original text is never stored. Rejected spans (bad ids, or over the per-trace
        limit) are counted in the batch, with the first reason.
        """
        if not self.redactor.active:
            groups, rejected, error, bad, over = group_request(
                request, self.limits.max_attributes_per_span, body, frames)
            if not over:
                shape = _Shape()
                allowed = self._admit(_with_bad(groups, bad), shape)
                if not shape.rejected:
                    return DecodedBatch((), rejected, error, FORMAT_PROTOBUF,
                                        body if body is not None
                                        else request.SerializeToString(), groups)
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

    def shape_protobuf(self, request: ExportTraceServiceRequest
                       ) -> tuple[int, str | None, bool]:
        """Apply the limits and redaction to a parsed ``ExportTraceServiceRequest`` in place.

        Returns ``(rejected spans, first reason, whether the request changed)``.
        """
        shape = _Shape()
        scopes = [ss for rs in request.resource_spans for ss in rs.scope_spans]
        limit = self.limits.max_attributes_per_span
        if self.redactor.active:  # every string of the request, at any depth
            shape.changed |= redact_request(self.redactor, request)
        raw: Counter[bytes] = Counter()
        for scope_spans in scopes:  # one pass: every span wrapper is made once
            for span in scope_spans.spans:
                raw[span.trace_id] += 1
                if len(span.attributes) > limit:
                    self._proto_attributes(span, shape)
                events = span.events
                if events:
                    for event in events:
                        if len(event.attributes) > limit:
                            self._proto_attributes(event, shape)
        allowed = self._admit(((t.hex(), n) for t, n in raw.items()), shape)
        if shape.rejected:
            self._drop_over_limit(scopes, allowed, shape)
        return shape.rejected, shape.error, shape.changed

    @staticmethod
    def _drop_over_limit(scopes: list[ScopeSpans], allowed: dict[str, int], shape: _Shape
                         ) -> None:
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

    def _proto_attributes(self, holder: Span | Span.Event, shape: _Shape) -> None:
        attributes = holder.attributes
        limit = self.limits.max_attributes_per_span
        if len(attributes) > limit:
            holder.dropped_attributes_count += len(attributes) - limit
            del attributes[limit:]
            shape.changed = True

    def shape_json(self, document: Any) -> tuple[int, str | None, bool]:
        """The same for a parsed OTLP-JSON document; malformed parts are left to the decoder."""
        shape = _Shape()
        if self.redactor.active:  # every string of the document, at any depth
            shape.changed |= redact_document(self.redactor, document)
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
        if dropped or kept != attributes:
            holder["attributes"] = kept
            previous = holder.get("droppedAttributesCount")
            holder["droppedAttributesCount"] = dropped + (
                previous if isinstance(previous, int) and not isinstance(previous, bool) else 0)
            shape.changed = True


def _json_trace_id(span: object) -> str | None:
    trace_id = span.get("traceId") if isinstance(span, dict) else None
    return trace_id.lower() if isinstance(trace_id, str) else None


def _json_spans(document: Any, shape: _Shape, shaper: Shaper) -> list[dict[str, Any]]:
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
    remaining = shaper._admit(counts.items(), shape)
    spans: list[dict[str, Any]] = []
    for scope in scopes:
        kept = []
        for span in scope["spans"]:
            trace_id = _json_trace_id(span)
            left = remaining.get(trace_id) if trace_id is not None else None
            if left is not None and trace_id is not None:
                if left <= 0:
                    shape.changed = True
                    continue
                remaining[trace_id] = left - 1
            kept.append(span)
            if isinstance(span, dict):
                spans.append(span)
        scope["spans"] = kept
    return spans
