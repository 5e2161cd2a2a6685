"""OTLP-JSON: documents in, :class:`EncodedSpan` out; stored span bodies back to records.

OTLP-JSON writes trace and span ids as hex strings, unlike protobuf's canonical JSON mapping
(base64), so ids are decoded here rather than through ``google.protobuf.json_format``, which
would silently mis-decode them. 64-bit integers may arrive as strings or numbers; both are
accepted. Structural problems raise :class:`TraceFormatError` naming the field path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from .spans import (
    FORMAT_JSON,
    AttrValue,
    DecodedBatch,
    EncodedSpan,
    SpanEvent,
    SpanRecord,
    valid_span_id,
    valid_trace_id,
)

__all__ = [
    "batch_records",
    "batch_spans",
    "decode_document",
    "estimate_records",
    "estimate_spans",
    "record_from_json_span",
]

#: JSON objects per span assumed when bounding a document by its objects (a span with a few
#: attributes has ~10: each attribute is two)
_OBJECTS_PER_SPAN = 64


def estimate_spans(body: bytes) -> int:
    """The spans of an OTLP-JSON body before parsing it: its ``"spanId"`` keys, or its objects
    over 64, whichever is more — so a body of millions of empty objects is refused before
    ``orjson`` builds them (parsing costs ~100 bytes per object)."""
    return max(body.count(b'"spanId"'), body.count(b"{") // _OBJECTS_PER_SPAN)


def estimate_records(body: bytes) -> int:
    """The log records of an OTLP-JSON logs body before parsing it, as :func:`estimate_spans`
    bounds spans: its ``"traceId"`` or ``"spanId"`` keys, or its objects over 64, whichever is
    more."""
    return max(
        body.count(b'"traceId"'), body.count(b'"spanId"'), body.count(b"{") // _OBJECTS_PER_SPAN
    )


_SCOPE_KEYS = ("scopeSpans", "instrumentationLibrarySpans")


def _list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceFormatError(
            f"expected a list, got {type(value).__name__}.", field=f"{path}.{key}" if path else key
        )
    return value


def _object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TraceFormatError(f"expected an object, got {type(value).__name__}.", field=path)
    return value


def _nanos(value: object, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise TraceFormatError("expected a non-negative integer (or a string of digits).", field=path)


def _hex_id(value: object) -> str:
    return value.lower() if isinstance(value, str) else ""


def decode_document(doc: object, body: bytes | None = None) -> DecodedBatch:
    """Every span of one OTLP-JSON ``{"resourceSpans": [...]}`` document.

    Spans whose ids are missing or malformed are counted as rejected, with the first reason.
    ``body`` is the document's JSON text as received (serialized again when not given).
    """
    root = _object(doc, "(document)")
    if "resourceSpans" not in root:
        raise TraceFormatError(
            'is missing; an OTLP-JSON trace document is {"resourceSpans": [...]}.',
            field="resourceSpans",
        )
    spans: list[EncodedSpan] = []
    rejected = 0
    error: str | None = None
    position = -1
    for r, resource in enumerate(_list(root, "resourceSpans", "")):
        rpath = f"resourceSpans[{r}]"
        resource = _object(resource, rpath)
        scope_key = next((k for k in _SCOPE_KEYS if k in resource), _SCOPE_KEYS[0])
        for s, scope in enumerate(_list(resource, scope_key, rpath)):
            spath = f"{rpath}.{scope_key}[{s}]"
            for i, raw in enumerate(_list(_object(scope, spath), "spans", spath)):
                position += 1
                result = _encode_span(raw, position)
                if isinstance(result, EncodedSpan):
                    spans.append(result)
                    continue
                field, message, is_rejection = result
                where = f"{spath}.spans[{i}]{field}"
                if not is_rejection:
                    raise TraceFormatError(message, field=where)
                rejected += 1
                error = error or f"field '{where}': {message}"
    if body is None:
        try:
            body = orjson.dumps(doc)
        except TypeError as exc:  # only for documents not parsed from JSON text (huge ints)
            raise TraceFormatError(f"cannot be stored: {exc}.") from None
    return DecodedBatch(tuple(spans), rejected, error, FORMAT_JSON, body)


def _all_spans(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for resource in doc.get("resourceSpans") or []:
        scope_key = next((k for k in _SCOPE_KEYS if k in resource), _SCOPE_KEYS[0])
        for scope in resource.get(scope_key) or []:
            found.extend(scope.get("spans") or [])
    return found


def _nanos_or_none(value: object) -> int | None:
    if value is None:
        return 0
    if type(value) is str and value.isdigit():
        return int(value)
    if type(value) is int and value >= 0:
        return value
    return None


def _encode_span(raw: object, position: int) -> EncodedSpan | tuple[str, str, bool]:
    """The span's index entry, or (field suffix, message, rejected-not-fatal) on a problem.

    The hot path of JSON ingest: paths are only formatted when something is wrong.
    """
    if not isinstance(raw, dict):
        return "", f"expected an object, got {type(raw).__name__}.", False
    trace_id, span_id = raw.get("traceId"), raw.get("spanId")
    parent = raw.get("parentSpanId") or ""
    trace_id = trace_id.lower() if isinstance(trace_id, str) else ""
    span_id = span_id.lower() if isinstance(span_id, str) else ""
    parent = parent.lower() if isinstance(parent, str) else "?"
    if not valid_trace_id(trace_id):
        return ".traceId", "must be 32 hex digits, not all zero.", True
    if not valid_span_id(span_id):
        return ".spanId", "must be 16 hex digits, not all zero.", True
    if parent and not valid_span_id(parent):
        return ".parentSpanId", "must be 16 hex digits, or empty for a root span.", True
    name = raw.get("name", "")
    if not isinstance(name, str):
        return ".name", "expected a string.", False
    start = _nanos_or_none(raw.get("startTimeUnixNano"))
    if start is None:
        return ".startTimeUnixNano", "expected a non-negative integer (or digits).", False
    if _nanos_or_none(raw.get("endTimeUnixNano")) is None:
        return ".endTimeUnixNano", "expected a non-negative integer (or digits).", False
    return EncodedSpan(trace_id, span_id, parent, start, name == _ANNOTATION, position)


_ANNOTATION = semconv.SPAN_ANNOTATION


def any_value(value: object) -> AttrValue:
    """An OTLP-JSON ``AnyValue`` object as a plain Python value."""
    if not isinstance(value, Mapping) or not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value or "doubleValue" in value:
        return _number(value)
    if "arrayValue" in value:
        items = _object_or_empty(value["arrayValue"]).get("values")
        return tuple(any_value(item) for item in items) if isinstance(items, list) else ()
    if "kvlistValue" in value:
        return _attributes(_object_or_empty(value["kvlistValue"]).get("values"))
    if "bytesValue" in value:
        try:
            return base64.b64decode(str(value["bytesValue"]), validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


def _object_or_empty(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: Mapping[str, Any]) -> AttrValue:
    # A stored span is decoded long after it was acknowledged: a malformed number becomes
    # None rather than an error that would stop every later export of the store.
    key, convert = ("intValue", int) if "intValue" in value else ("doubleValue", float)
    raw = value[key]
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        return convert(raw)
    except (ValueError, OverflowError):
        return None


def _lenient_nanos(value: object) -> int:
    try:
        return _nanos(value, "")
    except TraceFormatError:
        return 0


def _attributes(items: object) -> dict[str, AttrValue]:
    if not isinstance(items, list):
        return {}
    return {
        str(kv["key"]): any_value(kv.get("value"))
        for kv in items
        if isinstance(kv, Mapping) and "key" in kv
    }


def _kind(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    names = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
    if isinstance(value, str) and value.removeprefix("SPAN_KIND_") in names:
        return names.index(value.removeprefix("SPAN_KIND_"))
    return 0


def record_from_json_span(span: Mapping[str, Any]) -> SpanRecord:
    """One OTLP-JSON span object (already checked by :func:`decode_document`) as a record."""
    status = span.get("status") or {}
    code = status.get("code", 0) if isinstance(status, Mapping) else 0
    events = span.get("events")
    events = events if isinstance(events, list) else []
    return SpanRecord(
        trace_id=_hex_id(span.get("traceId")),
        span_id=_hex_id(span.get("spanId")),
        parent_span_id=_hex_id(span.get("parentSpanId")),
        name=str(span.get("name", "")),
        start_ns=_lenient_nanos(span.get("startTimeUnixNano")),
        end_ns=_lenient_nanos(span.get("endTimeUnixNano")),
        attributes=_attributes(span.get("attributes")),
        events=tuple(
            SpanEvent(
                str(event.get("name", "")),
                _lenient_nanos(event.get("timeUnixNano")),
                _attributes(event.get("attributes")),
            )
            for event in events
            if isinstance(event, Mapping)
        ),
        kind=_kind(span.get("kind")),
        status_code=_kind(code) if isinstance(code, int) else 2 if "ERROR" in str(code) else 0,
    )


def batch_records(body: bytes) -> Callable[[int], SpanRecord]:
    """Parse a stored OTLP-JSON document once; returns position -> :class:`SpanRecord`."""
    return batch_spans(body)[1]


def batch_spans(body: bytes) -> tuple[list[str], Callable[[int], SpanRecord]]:
    """Parse a stored OTLP-JSON document once: the trace id of each span (by position), and
    position -> :class:`SpanRecord`."""
    spans = _all_spans(orjson.loads(body))
    return (
        [_hex_id(span.get("traceId")) if isinstance(span, Mapping) else "" for span in spans],
        lambda position: record_from_json_span(spans[position]),
    )
