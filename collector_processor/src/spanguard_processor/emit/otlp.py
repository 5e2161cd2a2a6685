"""Send :class:`~.events.EvaluationEvent` s as OTLP log records (OpenTelemetry Logs SDK).

The destination is an :class:`Endpoint`: an OTLP/HTTP base (``http://collector:4318``, to which
``/v1/logs`` is added) or ``grpc://host:4317``; :func:`endpoint_from_env` reads the standard
``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` (and ``_PROTOCOL``);
headers come from ``OTEL_EXPORTER_OTLP_LOGS_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS``, read by
the exporters themselves. Sending never raises: it returns how many records went and, on a
failure, why (the caller prints a warning; an export failure never changes a gate's verdict).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from spanguard.exceptions import ConfigError

from .events import EVENT_NAME, EvaluationEvent

__all__ = ["EmitResult", "Endpoint", "emit_events", "endpoint_from_env", "parse_endpoint"]

_LOGS_PATH = "/v1/logs"
_SCOPE = "spanguard.evaluation"


@dataclass(frozen=True)
class Endpoint:
    """Where log records go: ``protocol`` ``http`` (``url`` is the full ``/v1/logs`` URL) or
    ``grpc`` (``url`` is ``http(s)://host:port``)."""

    protocol: str
    url: str

    def __str__(self) -> str:
        return self.url if self.protocol == "http" else "grpc://" + self.url.split("://", 1)[1]


@dataclass(frozen=True)
class EmitResult:
    """How many records were exported, and the reason when the export failed."""

    sent: int
    error: str | None = None


def parse_endpoint(url: str, *, where: str = "endpoint") -> Endpoint:
    """``http(s)://host:port[/base]`` (OTLP/HTTP; ``/v1/logs`` added unless present) or
    ``grpc://host:port`` / ``grpcs://host:port``; anything else raises :class:`ConfigError`."""
    parts = urlsplit(url.strip())
    if parts.scheme in ("grpc", "grpcs") and parts.hostname:
        scheme = "https" if parts.scheme == "grpcs" else "http"
        return Endpoint("grpc", f"{scheme}://{parts.netloc}")
    if parts.scheme in ("http", "https") and parts.hostname:
        path = parts.path.rstrip("/")
        if not path.endswith(_LOGS_PATH):
            path += _LOGS_PATH
        return Endpoint("http", f"{parts.scheme}://{parts.netloc}{path}")
    raise ConfigError(
        where,
        f"{url!r} is not an OTLP endpoint; give an OTLP/HTTP base such as "
        "http://localhost:4318 or grpc://localhost:4317.",
    )


def endpoint_from_env(environ: Mapping[str, str] | None = None) -> Endpoint:
    """The endpoint the standard OTLP variables name: ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` (the
    full logs URL for HTTP) or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base), over the protocol
    ``OTEL_EXPORTER_OTLP_LOGS_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` gives (default
    ``http/protobuf``). Neither endpoint set raises :class:`ConfigError`."""
    env = os.environ if environ is None else environ
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    grpc = protocol == "grpc"
    for name in ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = env.get(name, "").strip()
        if not value:
            continue
        parts = urlsplit(value)
        if not parts.hostname:
            raise ConfigError(name, f"{value!r} is not a URL such as http://localhost:4318.")
        if grpc:
            scheme = "https" if parts.scheme in ("https", "grpcs") else "http"
            return Endpoint("grpc", f"{scheme}://{parts.netloc}")
        if name == "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT":  # used as given, as the SDK does
            return Endpoint("http", value)
        return parse_endpoint(value, where=name)
    raise ConfigError(
        "endpoint",
        "when not given, it needs OTEL_EXPORTER_OTLP_LOGS_ENDPOINT "
        "or OTEL_EXPORTER_OTLP_ENDPOINT set; or give a URL such as "
        "http://localhost:4318.",
    )


def _exporter(endpoint: Endpoint) -> Any:
    if endpoint.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=endpoint.url, insecure=endpoint.url.startswith("http://"))
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HTTPLogExporter,
    )

    return HTTPLogExporter(endpoint=endpoint.url)


def _context(event: EvaluationEvent) -> Any:
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    if event.trace_id is None:
        return trace.set_span_in_context(trace.INVALID_SPAN)
    span = NonRecordingSpan(
        SpanContext(
            int(event.trace_id, 16),
            int(event.span_id or "0", 16),
            is_remote=True,
            trace_flags=TraceFlags(1),
        )
    )
    return trace.set_span_in_context(span)


def emit_events(
    events: Sequence[EvaluationEvent], endpoint: Endpoint, service_name: str = "spanguard"
) -> EmitResult:
    """Export ``events`` in one OTLP request; never raises."""
    if not events:
        return EmitResult(0)
    try:
        return _emit(events, endpoint, service_name)
    except Exception as exc:  # an export problem is reported, never raised
        return EmitResult(0, f"{type(exc).__name__}: {exc}")


def _emit(events: Sequence[EvaluationEvent], endpoint: Endpoint, service_name: str) -> EmitResult:
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.resources import Resource

    collected: list[Any] = []
    provider = LoggerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_log_record_processor(_collector(collected))
    logger = provider.get_logger(_SCOPE)
    for event in events:
        logger.emit(
            context=_context(event),
            severity_number=SeverityNumber.INFO,
            attributes=event.attributes(),
            event_name=EVENT_NAME,
        )
    exporter = _exporter(endpoint)
    try:
        result = exporter.export(tuple(collected))
    finally:
        exporter.shutdown()
        provider.shutdown()
    # by name: newer SDKs (1.45 here) return LogRecordExportResult, an enum that never
    # equals the older LogExportResult.SUCCESS (every delivered export was told as a failure)
    if getattr(result, "name", None) != "SUCCESS":
        return EmitResult(
            0,
            f"the OTLP log exporter could not deliver to {endpoint} "
            "(see the exporter's log line above)",
        )
    return EmitResult(len(collected))


def _collector(into: list[Any]) -> Any:
    """A log record processor that only keeps what is emitted, for one export we can check."""
    from opentelemetry.sdk._logs import LogRecordProcessor

    class Collect(LogRecordProcessor):
        def on_emit(self, log_record: Any) -> None:
            into.append(log_record)

        def shutdown(self) -> None:
            return None

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return Collect()
