"""Reading a stored batch back: the store keeps each batch encoded, with its format tag."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from . import otlp_json, otlp_proto
from .spans import FORMAT_JSON, FORMAT_PROTOBUF, DecodedBatch, SpanRecord

__all__ = ["ParsedBatch", "decode_batch", "decode_stored", "parse_batch"]


class ParsedBatch:
    """A stored batch parsed once: its spans' trace ids, and each span decoded on demand."""

    def __init__(self, trace_ids: list[str], record: Callable[[int], SpanRecord]) -> None:
        self.record = record
        self._trace_ids = trace_ids
        self._positions: dict[str, list[int]] | None = None

    def positions(self, trace_id: str) -> list[int]:
        """The positions of the spans of ``trace_id`` in the batch (built once, on first use)."""
        if self._positions is None:
            self._positions = {}
            for position, trace in enumerate(self._trace_ids):
                self._positions.setdefault(trace, []).append(position)
        return self._positions.get(trace_id, [])


def parse_batch(fmt: str, body: bytes) -> ParsedBatch:
    """Parse a stored batch once (raises ``TraceFormatError`` or ``ValueError`` if it cannot)."""
    if fmt == FORMAT_PROTOBUF:
        return ParsedBatch(*otlp_proto.batch_spans(body))
    if fmt == FORMAT_JSON:
        return ParsedBatch(*otlp_json.batch_spans(body))
    raise ValueError(f"unknown batch encoding {fmt!r}")


def decode_batch(fmt: str, body: bytes) -> Callable[[int], SpanRecord]:
    """Parse a stored batch once; returns a function from span position to :class:`SpanRecord`."""
    return parse_batch(fmt, body).record


def decode_stored(fmt: str, body: bytes) -> DecodedBatch:
    """A stored batch decoded as it was when it was stored (its spans, grouped by trace);
    raises ``TraceFormatError`` or ``ValueError`` if it cannot be."""
    if fmt == FORMAT_PROTOBUF:
        return otlp_proto.decode_request(otlp_proto.parse_request(body), body)
    if fmt == FORMAT_JSON:
        return otlp_json.decode_document(orjson.loads(body), body)
    raise ValueError(f"unknown batch encoding {fmt!r}")
