"""``spanguard.configure()``: the one place that builds export wiring.

It never replaces a tracer provider the app already set: it adds its batch processor to it —
unless that provider already exports to the same OTLP destination (the app's own pipeline, or
``opentelemetry-instrument``'s), in which case spanguard's spans ride on it and no second
pipeline is added (it would send every span twice); it says so once. When no SDK provider
exists it creates one and sets it as the global provider, or keeps it private (only
spanguard's spans go to it) when asked. Exporters follow the standard ``OTEL_*`` variables
unless ``exporter=`` says otherwise.
"""

from __future__ import annotations

import atexit
import os
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from ._baggage import BaggageIdentity
from ._exit import install_sigterm_flush, uninstall_sigterm_flush
from ._export import CountingBatchProcessor, ExportStats, OtlpJsonFileExporter
from ._log_export import flush_content_events, install_content_events, retire_content_events
from ._runtime import env_capture, logger, pop_override, push_override, set_content_settings
from ._state import STATE, Configuration, ContentSettings, Redactor
from ._threads import acquire_thread_propagation, release_thread_propagation
from .exceptions import ConfigError

__all__ = ["configure", "export_stats", "force_flush", "shutdown"]

# A burst of 30,000 spans produced as fast as one process can must not overflow the queue
# while the exporter (≈11-12k spans/s) drains it; see docs/benchmarks-sdk.md. The standard
# OTEL_BSP_* variables override these defaults, and configure()'s arguments override both.
DEFAULT_MAX_QUEUE_SIZE = 65_536
DEFAULT_MAX_EXPORT_BATCH_SIZE = 1_024
DEFAULT_SCHEDULE_DELAY_MILLIS = 500
_BSP_ENV = {
    "max_queue_size": ("OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_MAX_QUEUE_SIZE),
    "max_export_batch_size": ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_MAX_EXPORT_BATCH_SIZE),
    "schedule_delay_millis": ("OTEL_BSP_SCHEDULE_DELAY", DEFAULT_SCHEDULE_DELAY_MILLIS),
}
EXPORTERS = ("otlp", "otlp-grpc", "otlp-http", "otlp-json-file", "console", "memory", "none")
_ENV_EXPORTER = "OTEL_TRACES_EXPORTER"
_ENV_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def _protocol() -> str:
    for name in _ENV_PROTOCOLS:
        value = os.environ.get(name, "").strip().lower()
        if value:
            if value not in ("grpc", "http/protobuf"):
                raise ConfigError(
                    name,
                    f"the OTLP protocol '{value}' is not supported; use 'grpc' or 'http/protobuf'.",
                )
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
            raise ConfigError(
                _ENV_EXPORTER,
                f"the exporter '{name}' is not supported; use 'otlp', 'console' or 'none'.",
            )
        return name
    if not isinstance(exporter, str) or exporter not in EXPORTERS:
        raise ConfigError(
            "exporter",
            f"expected one of {', '.join(EXPORTERS)} or a SpanExporter instance, got {exporter!r}.",
        )
    return exporter


def _make_exporter(
    kind: str | SpanExporter, endpoint: str | None, file_path: str | os.PathLike[str] | None
) -> SpanExporter | None:
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


def _batch_setting(name: str, value: int | None) -> int:
    """The argument if given, else its OTEL_BSP_* variable if set, else spanguard's default."""
    if value is not None:
        return _check_int(name, value, 1)
    variable, default = _BSP_ENV[name]
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(variable, f"expected an integer of at least 1, got {text!r}.")
    return number


def _validate(
    service_name: Any,
    capture_content: Any,
    redact: Any,
    sampler: Any,
    endpoint: Any,
    file_path: Any,
) -> None:
    if service_name is not None and (not isinstance(service_name, str) or not service_name):
        raise ConfigError("service_name", f"expected a non-empty string, got {service_name!r}.")
    if capture_content is not None and not isinstance(capture_content, bool):
        raise ConfigError(
            "capture_content", f"expected True, False or None, got {capture_content!r}."
        )
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
    max_queue_size: int | None = None,
    max_export_batch_size: int | None = None,
    schedule_delay_millis: int | None = None,
    propagate_to_threads: bool = False,
    flush_on_sigterm: bool = True,
) -> Configuration:
    """Set up export of spanguard's spans; see docs/sdk.md for every parameter.

    Raises :class:`~spanguard.ConfigError` naming the parameter (or environment variable)
    that is wrong. Calling it again replaces spanguard's previous processor (flushed first).
    """
    _validate(service_name, capture_content, redact, sampler, endpoint, file_path)
    _check_int("max_content_chars", max_content_chars, 16)
    max_queue_size = _batch_setting("max_queue_size", max_queue_size)
    max_export_batch_size = _batch_setting("max_export_batch_size", max_export_batch_size)
    schedule_delay_millis = _batch_setting("schedule_delay_millis", schedule_delay_millis)
    if max_export_batch_size > max_queue_size:
        raise ConfigError(
            "max_export_batch_size",
            f"{max_export_batch_size} is larger than max_queue_size ({max_queue_size}).",
        )
    kind = _exporter_kind(exporter)
    span_exporter = _make_exporter(kind, endpoint, file_path)
    previous: Configuration | None = None
    try:
        with STATE.lock:
            previous, STATE.configuration = STATE.configuration, None
            if previous is not None:
                _detach(previous)
            provider, owns = _provider(service_name, sampler, private)
            configuration = _attach(
                provider,
                owns,
                private,
                kind,
                span_exporter,
                (max_queue_size, max_export_batch_size, schedule_delay_millis),
            )
            STATE.configuration = configuration
            _register_atexit(flush_on_sigterm)
            _propagate_to_threads(propagate_to_threads)
    finally:
        if previous is not None:  # exported outside the lock: no app thread waits on it
            _retire(previous)
    set_content_settings(_content(capture_content, redact, max_content_chars))
    install_content_events(provider, kind, endpoint)  # content as log events (EVENT_ONLY ...)
    return configuration


def _attach(
    provider: TracerProvider,
    owns: bool,
    private: bool,
    kind: str | SpanExporter,
    span_exporter: SpanExporter | None,
    batch: tuple[int, int, int],
) -> Configuration:
    """Under the lock: spanguard's processors on ``provider`` (the batch processor unless
    the app's pipeline already exports there, the baggage copier once per provider)."""
    processor = None
    if span_exporter is not None and not owns and not isinstance(kind, SpanExporter):
        span_exporter = _unless_exported(provider, span_exporter)
    if span_exporter is not None:
        max_queue_size, max_export_batch_size, schedule_delay_millis = batch
        processor = CountingBatchProcessor(
            span_exporter,
            max_queue_size=max_queue_size,
            max_export_batch_size=max_export_batch_size,
            schedule_delay_millis=schedule_delay_millis,
        )
        provider.add_span_processor(processor)
    if provider not in STATE.with_baggage:  # once per provider, however often configured
        STATE.with_baggage.add(provider)
        provider.add_span_processor(BaggageIdentity())
    if private:
        push_override(provider)
    return Configuration(provider, processor, span_exporter, owns, private)


def _destination(exporter: object) -> tuple[str, str] | None:
    """An OTLP exporter's transport and endpoint (scheme and trailing slash aside)."""
    endpoint = getattr(exporter, "_endpoint", None)
    module = type(exporter).__module__
    if not isinstance(endpoint, str) or not module.startswith("opentelemetry.exporter.otlp"):
        return None
    transport = "grpc" if ".grpc." in module else "http"
    return transport, endpoint.split("://", 1)[-1].rstrip("/").lower()


def _exporters(provider: TracerProvider) -> list[object]:
    """The exporters behind the provider's Simple and Batch span processors."""
    active = getattr(provider, "_active_span_processor", None)
    found = []
    for processor in getattr(active, "_span_processors", ()):
        inner = getattr(processor, "_batch_processor", None)
        exporter = getattr(processor, "span_exporter", None) or getattr(inner, "_exporter", None)
        if exporter is not None:
            found.append(exporter)
    return found


def _unless_exported(provider: TracerProvider, exporter: SpanExporter) -> SpanExporter | None:
    """``exporter``, or None when the app's provider already exports to its destination."""
    destination = _destination(exporter)
    if destination is None or all(_destination(e) != destination for e in _exporters(provider)):
        return exporter
    exporter.shutdown()
    if not STATE.said_shared:
        STATE.said_shared = True
        logger.info(
            "spanguard: the app's tracer provider already exports to %s; spanguard's "
            "spans go through that pipeline (no second exporter: each span would be "
            "sent twice).",
            destination[1],
        )
    return None


def _propagate_to_threads(wanted: bool) -> None:
    if wanted and not STATE.holds_threads:
        acquire_thread_propagation()
    elif not wanted and STATE.holds_threads:
        release_thread_propagation()
    STATE.holds_threads = wanted


def _content(
    capture_content: bool | None, redact: Redactor | None, max_content_chars: int
) -> ContentSettings:
    capture = env_capture() if capture_content is None else capture_content
    return ContentSettings(capture=capture, redact=redact, max_chars=max_content_chars)


def _provider(
    service_name: str | None, sampler: Sampler | None, private: bool
) -> tuple[TracerProvider, bool]:
    resource = Resource.create({"service.name": service_name} if service_name else {})
    if not private:
        existing = trace.get_tracer_provider()
        if isinstance(existing, TracerProvider):
            ignored = [
                name
                for name, value in (("sampler", sampler), ("service_name", service_name))
                if value is not None
            ]
            if ignored and existing is not STATE.owned_provider:
                logger.warning(
                    "spanguard: the app's tracer provider keeps its own %s; "
                    "configure() applies them only to a provider it creates.",
                    " and ".join(ignored),
                )
            return existing, existing is STATE.owned_provider
    provider = TracerProvider(resource=resource, sampler=sampler)
    if not private:
        trace.set_tracer_provider(provider)
        STATE.owned_provider = provider
    return provider, True


def _detach(configuration: Configuration) -> None:
    """Under the lock: the pipeline takes no more spans (its queue is exported by _retire)."""
    if configuration.processor is not None:
        configuration.processor.close()
    if configuration.private:
        pop_override(configuration.provider)


def _retire(configuration: Configuration) -> None:
    """After :func:`_detach`, outside the lock: export what is queued and stop."""
    if configuration.processor is not None:
        configuration.processor.force_flush()
        configuration.processor.shutdown()
    if configuration.private:
        configuration.provider.shutdown()


def _register_atexit(flush_on_sigterm: bool) -> None:
    if not STATE.atexit_registered:
        atexit.register(shutdown)
        STATE.atexit_registered = True
    if flush_on_sigterm:
        install_sigterm_flush(force_flush)  # atexit does not run on SIGTERM
    else:
        uninstall_sigterm_flush()


def force_flush(timeout_millis: int = 30_000) -> bool:
    """Export every span that has ended so far; ``True`` when all made it in time (through
    the app's pipeline when spanguard rides on it)."""
    configuration = STATE.configuration
    events = flush_content_events(timeout_millis)  # content as log records, if any
    if configuration is None:
        return events
    if configuration.processor is None:
        if configuration.exporter is None and not configuration.owns_provider:
            return configuration.provider.force_flush(timeout_millis) and events
        return events
    return configuration.processor.force_flush(timeout_millis) and events


def export_stats(flush: bool = True) -> ExportStats:
    """Counts of ended, exported, failed and dropped spans (flushing first by default)."""
    configuration = STATE.configuration
    if configuration is None or configuration.processor is None:
        return ExportStats(0, 0, 0, 0)
    if flush:
        configuration.processor.force_flush()
    return configuration.processor.stats()


def shutdown() -> None:
    """Flush and stop spanguard's export pipeline (also runs at interpreter exit)."""
    with STATE.lock:
        configuration, STATE.configuration = STATE.configuration, None
        if configuration is not None:
            _detach(configuration)
            _propagate_to_threads(False)
            uninstall_sigterm_flush()
    if configuration is None:
        return
    _retire(configuration)
    retire_content_events()
    set_content_settings(None)  # back to the environment variable's setting
    stats = configuration.processor.stats() if configuration.processor else None
    if stats is not None and stats.dropped:
        logger.warning(
            "spanguard: %d of %d spans were dropped before export; raise max_queue_size.",
            stats.dropped,
            stats.ended,
        )
