"""Reading a stored batch back: the store keeps each batch encoded, with its format tag."""

from __future__ import annotations

from collections.abc import Callable

from . import otlp_json, otlp_proto
from .spans import FORMAT_JSON, FORMAT_PROTOBUF, SpanRecord

__all__ = ["decode_batch"]


def decode_batch(fmt: str, body: bytes) -> Callable[[int], SpanRecord]:
    """Parse a stored batch once; returns a function from span position to :class:`SpanRecord`."""
    if fmt == FORMAT_PROTOBUF:
        return otlp_proto.batch_records(body)
    if fmt == FORMAT_JSON:
        return otlp_json.batch_records(body)
    raise ValueError(f"unknown batch encoding {fmt!r}")
