"""Capture spanguard's spans in memory: for tests, and for running an app in-process.

``capture_spans()`` (or :class:`SpanCapture`) sends spanguard's spans to a private provider with
an in-memory exporter until it stops; the app's own tracer provider is left alone. Capture is
process-wide and thread-safe: requests may run concurrently in threads or tasks, and each
request's spans share one trace id (see :meth:`SpanCapture.traces`).

``span_to_dict`` turns a span into plain JSON-ready data. ``DeterministicIdGenerator`` and
``TickClock`` make ids and timestamps repeatable; :func:`use_clock` gives spanguard any clock (a
simulated one). The pytest fixture ``spanguard_spans`` (from the ``pytest11`` entry point)
yields a started :class:`SpanCapture`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from . import semconv
from ._runtime import content_settings, pop_override, push_override, set_content_settings
from ._state import DEFAULT_MAX_CONTENT_CHARS, STATE, Clock, ContentSettings, Redactor
from ._threads import acquire_thread_propagation, release_thread_propagation

__all__ = [
    "DeterministicIdGenerator",
    "SpanCapture",
    "TickClock",
    "capture_spans",
    "span_to_dict",
    "use_clock",
]


class DeterministicIdGenerator(IdGenerator):
    """Trace ids 1, 2, 3, … and span ids 1, 2, 3, … (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trace = 0
        self._span = 0

    def generate_trace_id(self) -> int:
        with self._lock:
            self._trace += 1
            return self._trace

    def generate_span_id(self) -> int:
        with self._lock:
            self._span += 1
            return self._span


class TickClock:
    """A clock that advances ``step_ns`` on every reading (thread-safe)."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000, step_ns: int = 1_000_000) -> None:
        self._lock = threading.Lock()
        self._now = start_ns
        self._step = step_ns

    def __call__(self) -> int:
        with self._lock:
            self._now += self._step
            return self._now


def _swap_clock(clock: Clock) -> Clock:
    with STATE.lock:
        previous, STATE.clock = STATE.clock, clock
    return previous


@contextmanager
def use_clock(clock: Clock) -> Iterator[Clock]:
    """Stamp spanguard's spans, events and annotations with ``clock()`` (nanoseconds since the
    epoch) inside the block; process-wide, so for tests only. Spans that other
    instrumentations make keep OpenTelemetry's own clock."""
    previous = _swap_clock(clock)
    try:
        yield clock
    finally:
        _swap_clock(previous)


def _value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """A span as plain data: hex ids, kind and status names, attributes and events."""
    context = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": format(context.trace_id, "032x") if context else None,
        "span_id": format(context.span_id, "016x") if context else None,
        "parent_span_id": format(parent.span_id, "016x") if parent else None,
        "kind": span.kind.name,
        "start_time_unix_nano": span.start_time,
        "end_time_unix_nano": span.end_time,
        "attributes": {k: _value(v) for k, v in (span.attributes or {}).items()},
        "events": [
            {
                "name": e.name,
                "time_unix_nano": e.timestamp,
                "attributes": {k: _value(v) for k, v in (e.attributes or {}).items()},
            }
            for e in span.events
        ],
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "resource": {k: _value(v) for k, v in span.resource.attributes.items()},
    }


class SpanCapture:
    """Collects spanguard's spans in memory between :meth:`start` and :meth:`stop`.

    ``capture_content`` (``None``: keep the current setting), ``redact`` and
    ``max_content_chars`` apply while capturing and are restored afterwards.
    ``deterministic=True`` uses :class:`DeterministicIdGenerator` and a :class:`TickClock`
    (spanguard's clock is process-wide while capturing, so use it in tests only).
    """

    def __init__(
        self,
        *,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
        deterministic: bool = False,
    ) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            id_generator=DeterministicIdGenerator() if deterministic else None,
            shutdown_on_exit=False,
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self._content = (capture_content, redact, max_content_chars)
        self._deterministic = deterministic
        self._saved_content: ContentSettings | None = None
        self._saved_clock: Clock | None = None
        self._started = False

    def start(self) -> SpanCapture:
        """Begin capturing (idempotent)."""
        if self._started:
            return self
        capture, redact, max_chars = self._content
        self._saved_content = content_settings()
        if capture is not None or redact is not None or max_chars != DEFAULT_MAX_CONTENT_CHARS:
            set_content_settings(
                ContentSettings(
                    capture=self._saved_content.capture if capture is None else capture,
                    redact=redact,
                    max_chars=max_chars,
                )
            )
        if self._deterministic:
            self._saved_clock = _swap_clock(TickClock())
        acquire_thread_propagation()
        push_override(self.provider)
        self._started = True
        return self

    def stop(self) -> None:
        """Stop capturing; the spans stay readable."""
        if not self._started:
            return
        pop_override(self.provider)
        release_thread_propagation()
        if self._saved_clock is not None:
            _swap_clock(self._saved_clock)
            self._saved_clock = None
        set_content_settings(self._saved_content)
        self._started = False

    def __enter__(self) -> SpanCapture:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def readable_spans(self) -> tuple[ReadableSpan, ...]:
        """The finished spans as the OTel SDK's ``ReadableSpan`` objects, in end order."""
        return self.exporter.get_finished_spans()

    def spans(self) -> list[dict[str, Any]]:
        """Finished spans as dicts, ordered by start time, then span id."""
        spans = [span_to_dict(s) for s in self.readable_spans()]
        spans.sort(key=lambda s: (s["start_time_unix_nano"] or 0, s["span_id"] or ""))
        return spans

    def traces(self) -> dict[str, list[dict[str, Any]]]:
        """Finished spans grouped by trace id (traces in order of first span)."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for span in self.spans():
            grouped.setdefault(span["trace_id"], []).append(span)
        return grouped

    def request_spans(self, request_id: str) -> list[dict[str, Any]]:
        """Every span of the request ``request_id``: its trace plus its annotation spans."""
        spans = self.spans()
        trace_ids = {
            s["trace_id"]
            for s in spans
            if s["attributes"].get(semconv.REQUEST_ID) == request_id
            and s["name"] != semconv.SPAN_ANNOTATION
        }
        return [
            s
            for s in spans
            if s["trace_id"] in trace_ids
            or (
                s["name"] == semconv.SPAN_ANNOTATION
                and s["attributes"].get(semconv.REQUEST_ID) == request_id
            )
        ]

    def clear(self) -> None:
        """Forget the spans captured so far."""
        self.exporter.clear()


@contextmanager
def capture_spans(
    *,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
    deterministic: bool = False,
) -> Iterator[SpanCapture]:
    """``with capture_spans() as capture: app(); capture.spans()``."""
    capture = SpanCapture(
        capture_content=capture_content,
        redact=redact,
        max_content_chars=max_content_chars,
        deterministic=deterministic,
    )
    with capture:
        yield capture
