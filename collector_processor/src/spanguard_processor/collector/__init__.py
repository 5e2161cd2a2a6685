"""Stage 4 — the running processor (``spanguard serve``).

``server.serve_forever`` is the entry point: the OTLP receivers (``grpc_server``,
``http_server``) hand each export to the ``ingestor``, which admits it (``limits``,
``connections``, ``security``), redacts it (``redaction``), commits it to the span store
(``spanguard_processor.store``) before acknowledging, and feeds the ``assembler`` that releases
whole traces. ``salvage`` checks and recovers damaged stores. Imports ``store``, ``traces``,
``ingest`` and ``common``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .server import serve_forever

__all__ = [
    "serve_forever",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "serve_forever": ".server",
    },
)
