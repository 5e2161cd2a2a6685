"""``spanguard.configure()``: the one place that builds export wiring.

It never replaces a tracer provider the app already set: it adds its batch processor to it. When
no SDK provider exists it creates one and sets it as the global provider, or keeps it private
(only spanguard's spans go to it) when asked. Exporters follow the standard ``OTEL_*``
variables unless ``exporter=`` says otherwise.
"""

from __future__ import annotations

import atexit
import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from ._export import CountingBatchProcessor, ExportStats, OtlpJsonFileExporter
from ._runtime import (
    ContentSettings,
    Redactor,
    env_capture,
    logger,
    pop_override,
    push_override,
    set_content_settings,
)
from .exceptions import ConfigError

__all__ = ["Configuration", "configure", "export_stats", "force_flush", "shutdown"]

# A burst of 30,000 spans produced as fast as one process can must not overflow the queue
# while the exporter (≈11-12k spans/s) drains it; see docs/benchmarks-sdk.md.
DEFAULT_MAX_QUEUE_SIZE = 65_536
DEFAULT_MAX_EXPORT_BATCH_SIZE = 1_024
DEFAULT_SCHEDULE_DELAY_MILLIS = 500
EXPORTERS = ("otlp", "otlp-grpc", "otlp-http", "otlp-json-file", "console", "memory", "none")
_ENV_EXPORTER = "OTEL_TRACES_EXPORTER"
_ENV_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


@dataclass(frozen=True)
class Configuration:
    """What :func:`configure` built."""

    provider: TracerProvider
    processor: CountingBatchProcessor | None  # None with exporter "none"
    exporter: SpanExporter | None
    owns_provider: bool  # False when spans go to the app's own provider
    private: bool


_lock = threading.Lock()
_current: Configuration | None = None
_atexit_registered = False
_original_submit = ThreadPoolExecutor.submit
_owned: TracerProvider | None = None  # the global provider spanguard created, if any


def _owned_global() -> TracerProvider | None:
    return _owned


def _submit_with_context(self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any,
                         **kwargs: Any) -> Any:
    # each task runs in a copy of the submitter's context, so spans keep their parent
    return _original_submit(self, contextvars.copy_context().run, fn, *args, **kwargs)


def propagate_context_to_threads() -> None:
    """Make ``ThreadPoolExecutor`` tasks (and ``loop.run_in_executor``) keep the caller's
    context. Idempotent; asyncio tasks and ``asyncio.to_thread`` already do this."""
    ThreadPoolExecutor.submit = _submit_with_context  # type: ignore[method-assign,assignment]


def _protocol() -> str:
    for name in _ENV_PROTOCOLS:
        value = os.environ.get(name, "").strip().lower()
        if value:
            if value not in ("grpc", "http/protobuf"):
                raise ConfigError(name, f"the OTLP protocol '{value}' is not supported; use "
                                  "'grpc' or 'http/protobuf'.")
            return value
    return "grpc"


def _otlp_exporter(kind: str, endpoint: str | None) -> SpanExporter:
    if kind == "otlp":
        kind = "otlp-grpc" if _protocol() == "grpc" else "otlp-http"
    if kind == "otlp-grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )
        return GrpcExporter(endpoint=endpoint) if endpoint else GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )
    if endpoint and not endpoint.rstrip("/").endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    return HttpExporter(endpoint=endpoint) if endpoint else HttpExporter()


def _exporter_kind(exporter: str | SpanExporter | None) -> str | SpanExporter:
    if isinstance(exporter, SpanExporter):
        return exporter
    if exporter is None:
        names = [n.strip().lower() for n in os.environ.get(_ENV_EXPORTER, "otlp").split(",")]
        name = names[0] if names and names[0] else "otlp"
        if name not in ("otlp", "console", "none"):
            raise ConfigError(_ENV_EXPORTER, f"the exporter '{name}' is not supported; use "
                              "'otlp', 'console' or 'none'.")
        return name
    if not isinstance(exporter, str) or exporter not in EXPORTERS:
        raise ConfigError("exporter", f"expected one of {', '.join(EXPORTERS)} or a "
                          f"SpanExporter instance, got {exporter!r}.")
    return exporter


def _make_exporter(kind: str | SpanExporter, endpoint: str | None,
                   file_path: str | os.PathLike[str] | None) -> SpanExporter | None:
    if isinstance(kind, SpanExporter):
        return kind
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter()
    if kind == "memory":
        return InMemorySpanExporter()
    if kind == "otlp-json-file":
        if file_path is None:
            raise ConfigError("file_path", "the 'otlp-json-file' exporter needs file_path=.")
        return OtlpJsonFileExporter(file_path)
    return _otlp_exporter(kind, endpoint)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(name, f"expected an integer of at least {minimum}, got {value!r}.")
    return value


def _validate(service_name: Any, capture_content: Any, redact: Any, sampler: Any,
              endpoint: Any, file_path: Any) -> None:
    if service_name is not None and (not isinstance(service_name, str) or not service_name):
        raise ConfigError("service_name", f"expected a non-empty string, got {service_name!r}.")
    if capture_content is not None and not isinstance(capture_content, bool):
        raise ConfigError("capture_content", f"expected True, False or None, got "
                          f"{capture_content!r}.")
    if redact is not None and not callable(redact):
        raise ConfigError("redact", "expected a callable (key, text) -> text or None.")
    if sampler is not None and not isinstance(sampler, Sampler):
        raise ConfigError("sampler", f"expected an opentelemetry Sampler, got {sampler!r}.")
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint):
        raise ConfigError("endpoint", f"expected a URL string, got {endpoint!r}.")
    if file_path is not None and not isinstance(file_path, str | os.PathLike):
        raise ConfigError("file_path", f"expected a path, got {file_path!r}.")


def configure(
    *,
    service_name: str | None = None,
    exporter: str | SpanExporter | None = None,
    endpoint: str | None = None,
    file_path: str | os.PathLike[str] | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    max_content_chars: int = 4096,
    sampler: Sampler | None = None,
    private: bool = False,
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
    max_export_batch_size: int = DEFAULT_MAX_EXPORT_BATCH_SIZE,
    schedule_delay_millis: int = DEFAULT_SCHEDULE_DELAY_MILLIS,
    propagate_to_threads: bool = True,
) -> Configuration:
    """Set up export of spanguard's spans; see docs/sdk.md for every parameter.

    Raises :class:`~spanguard.ConfigError` naming the parameter (or environment variable)
    that is wrong. Calling it again replaces spanguard's previous processor (flushed first).
    """
    global _current
    _validate(service_name, capture_content, redact, sampler, endpoint, file_path)
    _check_int("max_content_chars", max_content_chars, 16)
    _check_int("max_queue_size", max_queue_size, 1)
    _check_int("max_export_batch_size", max_export_batch_size, 1)
    _check_int("schedule_delay_millis", schedule_delay_millis, 1)
    if max_export_batch_size > max_queue_size:
        raise ConfigError("max_export_batch_size", f"{max_export_batch_size} is larger than "
                          f"max_queue_size ({max_queue_size}).")
    kind = _exporter_kind(exporter)
    span_exporter = _make_exporter(kind, endpoint, file_path)
    with _lock:
        previous, _current = _current, None
        if previous is not None:
            _retire(previous)
        provider, owns = _provider(service_name, sampler, private)
        processor = None
        if span_exporter is not None:
            processor = CountingBatchProcessor(
                span_exporter, max_queue_size=max_queue_size,
                max_export_batch_size=max_export_batch_size,
                schedule_delay_millis=schedule_delay_millis)
            provider.add_span_processor(processor)
        _current = Configuration(provider, processor, span_exporter, owns, private)
        if private:
            push_override(provider)
        _register_atexit()
    set_content_settings(_content(capture_content, redact, max_content_chars))
    if propagate_to_threads:
        propagate_context_to_threads()
    return _current


def _content(capture_content: bool | None, redact: Redactor | None,
             max_content_chars: int) -> ContentSettings:
    capture = env_capture() if capture_content is None else capture_content
    return ContentSettings(capture=capture, redact=redact, max_chars=max_content_chars)


def _provider(service_name: str | None, sampler: Sampler | None, private: bool
              ) -> tuple[TracerProvider, bool]:
    resource = Resource.create({"service.name": service_name} if service_name else {})
    if not private:
        existing = trace.get_tracer_provider()
        if isinstance(existing, TracerProvider):
            if sampler is not None and existing is not _owned_global():
                logger.warning("spanguard: the app's tracer provider keeps its own sampler; "
                               "configure(sampler=...) applies only to a provider spanguard "
                               "creates.")
            return existing, existing is _owned_global()
    provider = TracerProvider(resource=resource, sampler=sampler)
    if not private:
        trace.set_tracer_provider(provider)
        global _owned
        _owned = provider
    return provider, True


def _retire(configuration: Configuration) -> None:
    if configuration.processor is not None:
        configuration.processor.force_flush()
        configuration.processor.shutdown()
    if configuration.private:
        pop_override(configuration.provider)
        configuration.provider.shutdown()


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(shutdown)
        _atexit_registered = True


def force_flush(timeout_millis: int = 30_000) -> bool:
    """Export every span that has ended so far; ``True`` when all made it in time."""
    configuration = _current
    if configuration is None or configuration.processor is None:
        return True
    return configuration.processor.force_flush(timeout_millis)


def export_stats(flush: bool = True) -> ExportStats:
    """Counts of ended, exported, failed and dropped spans (flushing first by default)."""
    configuration = _current
    if configuration is None or configuration.processor is None:
        return ExportStats(0, 0, 0, 0)
    if flush:
        configuration.processor.force_flush()
    return configuration.processor.stats()


def shutdown() -> None:
    """Flush and stop spanguard's export pipeline (also runs at interpreter exit)."""
    global _current
    with _lock:
        configuration, _current = _current, None
    if configuration is None:
        return
    _retire(configuration)
    stats = configuration.processor.stats() if configuration.processor else None
    if stats is not None and stats.dropped:
        logger.warning("spanguard: %d of %d spans were dropped before export; raise "
                       "max_queue_size.", stats.dropped, stats.ended)
