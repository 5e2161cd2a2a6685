"""Stage 4 — the running processor (``spanguard serve``).

``server.serve_forever`` is the entry point. The OTLP receivers (``grpc_server``,
``http_server``; ``logs_receive`` for logs) keep only their transport — the token and TLS
(``security``), connection limits (``connections``) — and run one pipeline,
``receive.Receiver``: it admits a request before decoding (``admission``), decodes and shapes it
with the ``ingest.codec`` of its media type (the limits and the redaction of ``limits`` and
``redaction``, given as data), and hands the batch to the ``ingestor``, whose one writer thread
commits it to the span store (``spanguard_processor.store``) before the request is acknowledged
and feeds the ``assembler`` that releases whole traces. ``health`` answers ``/health``,
``os_threads`` names the threads at the OS level and gives an idle writer's memory back,
``salvage`` checks and recovers damaged stores. Imports ``store``, ``ingest`` and ``common``."""

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
