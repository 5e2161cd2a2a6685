"""OTLP-JSON: documents in, :class:`EncodedSpan` out; stored span bodies back to records.

OTLP-JSON writes trace and span ids as hex strings, unlike protobuf's canonical JSON mapping
(base64), so ids are decoded here rather than through ``google.protobuf.json_format``, which
would silently mis-decode them. 64-bit integers may arrive as strings or numbers; both are
accepted. Structural problems raise :class:`TraceFormatError` naming the field path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import orjson

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from ..spans import (
    FORMAT_JSON,
    AttrValue,
    DecodedBatch,
    EncodedSpan,
    SpanEvent,
    SpanRecord,
    valid_span_id,
    valid_trace_id,
)

__all__ = ["decode_document", "record_from_json_span", "record_from_payload"]

_SCOPE_KEYS = ("scopeSpans", "instrumentationLibrarySpans")


def _list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceFormatError(f"expected a list, got {type(value).__name__}.",
                               field=f"{path}.{key}" if path else key)
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


def decode_document(doc: object) -> DecodedBatch:
    """Every span of one OTLP-JSON ``{"resourceSpans": [...]}`` document.

    Spans whose ids are missing or malformed are counted as rejected, with the first reason.
    """
    root = _object(doc, "(document)")
    if "resourceSpans" not in root:
        raise TraceFormatError(
            "is missing; an OTLP-JSON trace document is {\"resourceSpans\": [...]}.",
            field="resourceSpans",
        )
    spans: list[EncodedSpan] = []
    rejected = 0
    error: str | None = None
    for r, resource in enumerate(_list(root, "resourceSpans", "")):
        rpath = f"resourceSpans[{r}]"
        resource = _object(resource, rpath)
        scope_key = next((k for k in _SCOPE_KEYS if k in resource), _SCOPE_KEYS[0])
        for s, scope in enumerate(_list(resource, scope_key, rpath)):
            spath = f"{rpath}.{scope_key}[{s}]"
            for i, raw in enumerate(_list(_object(scope, spath), "spans", spath)):
                path = f"{spath}.spans[{i}]"
                span = _object(raw, path)
                problem = _id_problem(span)
                if problem is not None:
                    rejected += 1
                    error = error or f"field '{path}.{problem[0]}': {problem[1]}"
                    continue
                spans.append(_encoded(span, path))
    return DecodedBatch(tuple(spans), rejected, error)


def _id_problem(span: Mapping[str, Any]) -> tuple[str, str] | None:
    if not valid_trace_id(_hex_id(span.get("traceId"))):
        return "traceId", "must be 32 hex digits, not all zero."
    if not valid_span_id(_hex_id(span.get("spanId"))):
        return "spanId", "must be 16 hex digits, not all zero."
    parent = _hex_id(span.get("parentSpanId"))
    if parent and not valid_span_id(parent):
        return "parentSpanId", "must be 16 hex digits, or empty for a root span."
    return None


def _encoded(span: Mapping[str, Any], path: str) -> EncodedSpan:
    name = span.get("name", "")
    if not isinstance(name, str):
        raise TraceFormatError("expected a string.", field=f"{path}.name")
    start = _nanos(span.get("startTimeUnixNano"), f"{path}.startTimeUnixNano")
    _nanos(span.get("endTimeUnixNano"), f"{path}.endTimeUnixNano")
    try:
        payload = orjson.dumps(span)
    except TypeError as exc:  # only possible for documents not parsed from JSON text
        raise TraceFormatError(f"cannot be stored: {exc}.", field=path) from None
    return EncodedSpan(
        trace_id=_hex_id(span["traceId"]),
        span_id=_hex_id(span["spanId"]),
        parent_span_id=_hex_id(span.get("parentSpanId")),
        start_ns=start,
        annotation=name == semconv.SPAN_ANNOTATION,
        fmt=FORMAT_JSON,
        payload=payload,
    )


def any_value(value: object) -> AttrValue:
    """An OTLP-JSON ``AnyValue`` object as a plain Python value."""
    if not isinstance(value, Mapping) or not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        raw = value["doubleValue"]
        return float(raw) if isinstance(raw, int | float | str) else None
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or []
        return tuple(any_value(item) for item in items)
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        try:
            return base64.b64decode(str(value["bytesValue"]), validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


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
    events = span.get("events") or []
    return SpanRecord(
        trace_id=_hex_id(span.get("traceId")),
        span_id=_hex_id(span.get("spanId")),
        parent_span_id=_hex_id(span.get("parentSpanId")),
        name=str(span.get("name", "")),
        start_ns=_nanos(span.get("startTimeUnixNano"), "startTimeUnixNano"),
        end_ns=_nanos(span.get("endTimeUnixNano"), "endTimeUnixNano"),
        attributes=_attributes(span.get("attributes")),
        events=tuple(
            SpanEvent(
                str(event.get("name", "")),
                _nanos(event.get("timeUnixNano"), "timeUnixNano"),
                _attributes(event.get("attributes")),
            )
            for event in events
            if isinstance(event, Mapping)
        ),
        kind=_kind(span.get("kind")),
        status_code=_kind(code) if isinstance(code, int) else 2 if "ERROR" in str(code) else 0,
    )


def record_from_payload(payload: bytes) -> SpanRecord:
    """Decode one stored OTLP-JSON span body."""
    return record_from_json_span(orjson.loads(payload))
