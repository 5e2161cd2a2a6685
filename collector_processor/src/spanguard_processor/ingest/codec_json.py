"""The OTLP-JSON codec (``application/json``).

Counting estimates the spans from the text (:func:`~.otlp_json.estimate_spans`); decoding
parses with ``orjson``, shapes the document in place (malformed parts are left to the decoder)
and decodes it (:func:`~.otlp_json.decode_document`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from typing import Any

import orjson

from spanguard.exceptions import TraceFormatError

from .codec import Codec, Counted, LogsSpans, Media
from .otlp_json import decode_document, estimate_records, estimate_spans
from .otlp_logs import _items, events_from_document, logs_as_spans, unnamed_in_document
from .redact_otlp import redact_document
from .shaping import Shape, Shaping, TraceBudget
from .spans import DecodedBatch

__all__ = ["JSON_CODEC", "JsonCodec"]


def _parse(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(f"is not valid JSON (or not UTF-8): {exc}.") from None


class JsonCodec(Codec):
    """OTLP-JSON: ``{"resourceSpans": [...]}`` / ``{"resourceLogs": [...]}`` documents."""

    media = Media.JSON

    def count(self, body: bytes, stop: int) -> Counted:
        return Counted(estimate_spans(body))

    def decode(self, body: bytes, counted: Counted | None, shaping: Shaping) -> DecodedBatch:
        document = _parse(body)
        shape = self.shape(document, shaping)
        batch = decode_document(document, None if shape.changed else body)
        if not shape.rejected:
            return batch
        return replace(
            batch, rejected=batch.rejected + shape.rejected, error=batch.error or shape.error
        )

    @staticmethod
    def shape(document: Any, shaping: Shaping) -> Shape:
        """Apply the limits and redaction to a parsed OTLP-JSON document in place."""
        shape = Shape()
        if shaping.redactor.active:  # every string of the document, at any depth
            shape.changed |= redact_document(shaping.redactor, document)
        limit = shaping.attribute_limit
        for span in _spans(document, shape, shaping.budget):
            _cut_attributes(span, limit, shape)
            events = span.get("events")
            for event in events if isinstance(events, list) else ():
                if isinstance(event, dict):
                    _cut_attributes(event, limit, shape)
        return shape

    def count_records(self, body: bytes, stop: int) -> int:
        return estimate_records(body)

    def logs_as_spans(self, body: bytes) -> LogsSpans:
        doc = _parse(body)
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceLogs", []), list):
            raise TraceFormatError(
                "is not an OTLP-JSON logs request: it must be an object "
                "whose 'resourceLogs' is a list."
            )
        events = events_from_document(doc, trace_level=True)
        total = _count_records(doc)
        unnamed = unnamed_in_document(doc) if len(events) < total else 0
        return LogsSpans(
            logs_as_spans(events).SerializeToString() if events else b"",
            total - len(events),
            unnamed,
        )

    def traces_reply(self, batch: DecodedBatch) -> bytes:
        return _reply(batch, "rejectedSpans")

    def logs_reply(self, batch: DecodedBatch) -> bytes:
        return _reply(batch, "rejectedLogRecords")

    def error_reply(self, status: int, rpc_code: int, message: str) -> bytes:
        return orjson.dumps({"code": status, "message": message})


def _reply(batch: DecodedBatch, rejected: str) -> bytes:
    """The OTLP/JSON answer: partial success counts what was rejected (``rejected``: the
    signal's field), with the first reason."""
    body: dict[str, Any] = {}
    if batch.rejected:
        body["partialSuccess"] = {rejected: str(batch.rejected), "errorMessage": batch.error or ""}
    return orjson.dumps(body)


def _count_records(doc: Mapping[str, Any]) -> int:
    return sum(
        len(_items(scope, "logRecords"))
        for resource in _items(doc, "resourceLogs")
        for scope in _items(resource, "scopeLogs")
    )


def _cut_attributes(holder: MutableMapping[str, Any], limit: int, shape: Shape) -> None:
    attributes = holder.get("attributes")
    if not isinstance(attributes, list):
        return
    dropped = max(0, len(attributes) - limit)
    kept = attributes[:limit]
    if dropped or kept != attributes:
        holder["attributes"] = kept
        previous = holder.get("droppedAttributesCount")
        holder["droppedAttributesCount"] = dropped + (
            previous if isinstance(previous, int) and not isinstance(previous, bool) else 0
        )
        shape.changed = True


def _trace_id(span: object) -> str | None:
    trace_id = span.get("traceId") if isinstance(span, dict) else None
    return trace_id.lower() if isinstance(trace_id, str) else None


def _spans(document: Any, shape: Shape, budget: TraceBudget) -> list[dict[str, Any]]:
    """The span objects of a document, with spans over the per-trace limit removed."""
    scopes: list[dict[str, Any]] = []
    resources = document.get("resourceSpans") if isinstance(document, dict) else None
    for resource in resources if isinstance(resources, list) else ():
        for key in ("scopeSpans", "instrumentationLibrarySpans"):
            found = resource.get(key) if isinstance(resource, dict) else None
            scopes.extend(
                scope
                for scope in (found if isinstance(found, list) else ())
                if isinstance(scope, dict) and isinstance(scope.get("spans"), list)
            )
    counts = Counter(
        t for scope in scopes for span in scope["spans"] if (t := _trace_id(span)) is not None
    )
    remaining = budget.admit(counts.items(), shape)
    spans: list[dict[str, Any]] = []
    for scope in scopes:
        kept = []
        for span in scope["spans"]:
            trace_id = _trace_id(span)
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


JSON_CODEC = JsonCodec()
