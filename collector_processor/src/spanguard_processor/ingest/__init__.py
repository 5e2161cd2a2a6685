"""Stage 2 — bytes → span records: OTLP protobuf and OTLP-JSON payloads and span files.

``spans`` holds the span record types; ``batches.decode_batch`` is the entry point (one encoded
payload → a lazily decoded batch), with the format decoders in ``otlp_proto`` and ``otlp_json``.
On the receive path, ``codec.Codec`` is the entry point: one per OTLP media type
(``codec_protobuf``, ``codec_json``), counting, shaping with the limits given as data
(``shaping``, ``redact_otlp``) and decoding a request. This stage imports only ``common``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .batches import decode_batch
    from .codec import Codec
    from .spans import SpanRecord

__all__ = [
    "Codec",
    "SpanRecord",
    "decode_batch",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Codec": ".codec",
        "SpanRecord": ".spans",
        "decode_batch": ".batches",
    },
)
