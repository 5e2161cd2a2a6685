"""A codec per OTLP media type: everything the receive path does differently for protobuf and
OTLP-JSON, behind one interface, so the receiver never asks which media it has.

The receiver picks a :class:`Codec` once, from the request's content type, and then only calls
it: :meth:`Codec.count` (the spans, read off the wire before decoding, for admission),
:meth:`Codec.decode` (parse, shape with the limits given as data — :class:`~.shaping.Shaping`
— and decode into a :class:`~.spans.DecodedBatch`), :meth:`Codec.count_records` (a logs
request's records, read off the wire before converting it), :meth:`Codec.logs_as_spans` (a logs
request in the span form, which is protobuf) and the answers in the client's media type.
The two codecs: :data:`~.codec_protobuf.PROTOBUF_CODEC` and :data:`~.codec_json.JSON_CODEC`.

A body that is not OTLP raises :class:`~spanguard.exceptions.TraceFormatError`; without a
field, its message reads after "the body" (or "the request").
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .shaping import Shaping
from .spans import DecodedBatch

__all__ = ["Codec", "Counted", "LogsSpans", "Media"]


class Media(enum.StrEnum):
    """The OTLP media types (the ``Content-Type`` of OTLP/HTTP)."""

    PROTOBUF = "application/x-protobuf"
    JSON = "application/json"


class Counted(NamedTuple):
    """A body's spans counted before decoding, and (protobuf) their bytes when counting framed
    them, so decoding need not frame them again."""

    spans: int
    frames: Sequence[bytes] | None = None


@dataclass(frozen=True, slots=True)
class LogsSpans:
    """A logs request in the span form: the serialized ``ExportTraceServiceRequest``, how
    many of its log records were left out (naming no span, or no event), and how many of
    those named no event."""

    body: bytes
    unjoined: int
    unnamed: int = 0  # of those, the records that say not what they are (no event name)


class Codec(ABC):
    """One OTLP media type on the receive path."""

    media: Media

    @property
    def content_type(self) -> bytes:
        """The media type as a header value."""
        return self.media.encode()

    @abstractmethod
    def count(self, body: bytes, stop: int) -> Counted:
        """The spans of ``body`` before decoding it (counting may stop past ``stop``)."""

    @abstractmethod
    def decode(self, body: bytes, counted: Counted | None, shaping: Shaping) -> DecodedBatch:
        """Parse ``body``, apply ``shaping`` (limits, per-trace budget, redaction) and decode
        it; a request the shaping changed is serialized again, so the original text is never
        stored. Rejected spans are counted in the batch, with the first reason."""

    @abstractmethod
    def count_records(self, body: bytes, stop: int) -> int:
        """The log records of a logs request before converting it (counting may stop past
        ``stop``), so a request that cannot fit is refused before the work."""

    @abstractmethod
    def logs_as_spans(self, body: bytes) -> LogsSpans:
        """A logs request as the trace request the receive path takes (trace-level records
        kept with the trace's root)."""

    @abstractmethod
    def traces_reply(self, batch: DecodedBatch) -> bytes:
        """The OTLP trace export answer, with partial success when spans were rejected."""

    @abstractmethod
    def logs_reply(self, batch: DecodedBatch) -> bytes:
        """The OTLP logs export answer, with partial success when records were left out."""

    @abstractmethod
    def error_reply(self, status: int, rpc_code: int, message: str) -> bytes:
        """An OTLP/HTTP error body (a ``google.rpc.Status`` in protobuf)."""
