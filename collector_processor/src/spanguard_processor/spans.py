"""The processor's own span records: what every decoder produces and conversion reads.

Two shapes, both frozen:

* :class:`EncodedSpan` — what ingest stores: the ids the assembler and the store need, plus the
  span itself still encoded (one protobuf ``Span`` or one OTLP-JSON span object). Decoding the
  attributes is deferred to conversion, so the receive path stays close to protobuf speed.
* :class:`SpanRecord` — a fully decoded span (attributes, events), produced from an
  :class:`EncodedSpan` (:func:`decode_span`) or from an in-process OTel SDK ``ReadableSpan``
  (:mod:`spanguard_processor.convert`). Conversion to agent traces is written once, over these.

Ids are lowercase hex strings (32 characters for a trace id, 16 for a span id); a root span has
an empty ``parent_span_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "FORMAT_JSON",
    "FORMAT_PROTOBUF",
    "AttrValue",
    "DecodedBatch",
    "EncodedSpan",
    "SpanEvent",
    "SpanRecord",
    "decode_span",
    "valid_span_id",
    "valid_trace_id",
]

AttrValue: TypeAlias = (
    str | bool | int | float | bytes | tuple["AttrValue", ...] | Mapping[str, "AttrValue"] | None
)

FORMAT_PROTOBUF = "p"
FORMAT_JSON = "j"

_HEX = frozenset("0123456789abcdef")


def _valid_hex(value: str, length: int) -> bool:
    return len(value) == length and set(value) <= _HEX and value != "0" * length


def valid_trace_id(value: str) -> bool:
    """True for 32 lowercase hex digits that are not all zero (the OTel rule)."""
    return _valid_hex(value, 32)


def valid_span_id(value: str) -> bool:
    """True for 16 lowercase hex digits that are not all zero (the OTel rule)."""
    return _valid_hex(value, 16)


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event: its name, time and attributes."""

    name: str
    time_ns: int
    attributes: Mapping[str, AttrValue]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One decoded span, whatever it was read from."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttrValue]
    events: tuple[SpanEvent, ...] = ()
    kind: int = 0
    status_code: int = 0

    @property
    def is_root(self) -> bool:
        """True when the span has no parent at all (not merely none in this trace)."""
        return not self.parent_span_id


@dataclass(frozen=True, slots=True)
class EncodedSpan:
    """One received span, ids decoded, body still encoded (``fmt`` says how)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    annotation: bool
    fmt: str
    payload: bytes

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """The spans of one request or file line, and how many were rejected (with the first reason)."""

    spans: tuple[EncodedSpan, ...]
    rejected: int = 0
    error: str | None = None


def decode_span(span: EncodedSpan) -> SpanRecord:
    """Decode a stored span's body into a :class:`SpanRecord`."""
    if span.fmt == FORMAT_PROTOBUF:
        from .ingest.otlp_proto import record_from_payload

        return record_from_payload(span.payload)
    if span.fmt == FORMAT_JSON:
        from .ingest.otlp_json import record_from_payload as json_record

        return json_record(span.payload)
    raise ValueError(f"unknown span encoding {span.fmt!r}")
