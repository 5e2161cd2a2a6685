"""The logger provider that exports content events beside spanguard's spans (see
:mod:`._events`): built by :func:`install_content_events`, called by :func:`spanguard.configure`.

The exporter follows the span exporter: OTLP spans → an OTLP log exporter of the same protocol
(an HTTP endpoint's ``/v1/traces`` becomes ``/v1/logs``; without an endpoint, the standard
``OTEL_EXPORTER_OTLP_LOGS_*`` / ``OTEL_EXPORTER_OTLP_*`` variables), console → the console. For
any other span exporter, events go to the app's own SDK logger provider when it set one, and
are not recorded otherwise (a warning says so once).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from ._events import ContentEvents, capture_mode, set_mode
from ._state import STATE
from .semconv import ContentCapture

__all__ = ["flush_content_events", "install_content_events", "retire_content_events"]

logger = logging.getLogger("spanguard")
_PROTOCOL_ENV = ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def _grpc(kind: str) -> bool:
    if kind != "otlp":
        return kind == "otlp-grpc"
    for name in _PROTOCOL_ENV:
        value = os.environ.get(name, "").strip().lower()
        if value:
            return value == "grpc"
    return os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc").strip().lower() == "grpc"


def _exporter(kind: Any, endpoint: str | None) -> Any:
    if kind == "console":
        from opentelemetry.sdk._logs.export import ConsoleLogExporter

        return ConsoleLogExporter()
    if kind not in ("otlp", "otlp-grpc", "otlp-http"):
        return None
    if _grpc(kind):
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=endpoint) if endpoint else OTLPLogExporter()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    if endpoint:
        base = endpoint.rstrip("/").removesuffix("/v1/traces")
        return HttpLogExporter(endpoint=base + "/v1/logs")
    return HttpLogExporter()


def _provider(kind: Any, endpoint: str | None, resource: Resource) -> Any:
    from opentelemetry._logs import get_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    exporter = _exporter(kind, endpoint)
    if exporter is not None:
        provider = LoggerProvider(resource=resource)
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        return provider
    existing = get_logger_provider()
    return existing if isinstance(existing, LoggerProvider) else None


def flush_content_events(timeout_millis: int = 30_000) -> bool:
    """Export the content events emitted so far; ``True`` when they made it in time."""
    current = STATE.content_events
    return True if current is None else current.force_flush(timeout_millis)


def retire_content_events() -> None:
    """Flush and stop the content events (``spanguard.shutdown()``); content goes back on spans."""
    with STATE.lock:
        current, STATE.content_events = STATE.content_events, None
    if current is not None:
        current.shutdown()
    set_mode(ContentCapture.SPAN_ONLY)


def install_content_events(provider: TracerProvider, kind: Any, endpoint: str | None) -> None:
    """Follow the content-capture variable: in an event mode, emit content as log records."""
    retire_content_events()
    mode = capture_mode()
    if mode is not ContentCapture.SPAN_ONLY:
        logger_provider = _provider(kind, endpoint, provider.resource)
        if logger_provider is None:
            logger.warning(
                "spanguard: content events need an OTLP or console exporter, or "
                "the app's own logger provider; content stays on the spans."
            )
            mode = ContentCapture.SPAN_ONLY
        else:
            events = ContentEvents(logger_provider)
            provider.add_span_processor(events)
            STATE.content_events = events
    set_mode(mode)
