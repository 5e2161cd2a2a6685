"""Every span a run's app emits, not only spanguard's: the app's other OpenTelemetry tracers too.

``SpanCapture`` sends the spanguard SDK's spans to a private provider. An app instrumented with
another convention (Langfuse, OpenInference, OpenLLMetry) starts its spans from the global
OpenTelemetry provider instead, and ``spanguard run`` must see those too, or a run would judge
fewer spans than its own ``--traces-out`` file holds. While :func:`app_spans` is active:

* when the app configured an SDK provider, a forwarding processor (attached once per provider)
  copies each span that ends to the capture;
* when none is configured, a process-wide router provider stands in as the global one for the
  duration of the run, forwarding the same way. Tracers resolved through it keep it afterwards
  (OpenTelemetry's proxy tracers bind once), so their later spans go nowhere unless a run is
  capturing: configure the app's provider before ``spanguard run`` loads it to keep them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

__all__ = ["Sink", "app_spans"]

Sink = Callable[[ReadableSpan], None]


class _Forward(SpanProcessor):
    """Hands every span that ends to the sinks of the captures now active."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: tuple[Sink, ...] = ()

    def add(self, sink: Sink) -> None:
        with self._lock:
            self._targets = (*self._targets, sink)

    def remove(self, sink: Sink) -> None:
        with self._lock:
            self._targets = tuple(t for t in self._targets if t is not sink)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        for target in self._targets:
            target(span)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_FORWARD = _Forward()
_attached: weakref.WeakSet[TracerProvider] = weakref.WeakSet()
_router: TracerProvider | None = None
_lock = threading.Lock()


def _router_provider() -> TracerProvider:
    global _router
    if _router is None:
        _router = TracerProvider(shutdown_on_exit=False)
        _router.add_span_processor(_FORWARD)
        _attached.add(_router)  # forwards already: never attach to it a second time
    return _router


@contextmanager
def app_spans(own: TracerProvider, sink: Sink) -> Iterator[None]:
    """While active, each span of the app's global OpenTelemetry provider that ends is handed
    to ``sink`` (``own`` is the capture's provider, which delivers its spans itself)."""
    installed = False
    with _lock:
        provider = trace.get_tracer_provider()
        if isinstance(provider, TracerProvider):
            if provider is not own and provider not in _attached:
                provider.add_span_processor(_FORWARD)
                _attached.add(provider)
        elif getattr(trace, "_TRACER_PROVIDER", False) is None:
            trace._TRACER_PROVIDER = _router_provider()
            installed = True
    _FORWARD.add(sink)
    try:
        yield
    finally:
        _FORWARD.remove(sink)
        with _lock:
            if installed and getattr(trace, "_TRACER_PROVIDER", None) is _router:
                trace._TRACER_PROVIDER = None
