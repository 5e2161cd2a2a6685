"""The SDK's process-wide state: one object, :data:`STATE`, behind one lock.

Everything spanguard keeps between calls lives here: what :func:`spanguard.configure` built
(a frozen :class:`Configuration`, replaced whole by ``configure()`` and ``shutdown()``, the only
writers) and the runtime state the other modules share — which provider the decorators send
spans to, the content settings, the warnings already logged, the ``ThreadPoolExecutor.submit``
patch, content held for log events, the SIGTERM handler and the clock spanguard reads time from.

Every change happens under ``STATE.lock`` (re-entrant, so ``configure()`` can call the helpers
that take it too). The hot path reads single fields without it: each is replaced whole by the
lock's holders. The lock is held for bookkeeping only, never while spans or log records are
exported, so an app thread that logs a warning never waits on an exporter.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import Tracer
from opentelemetry.trace import TracerProvider as ApiTracerProvider

from ._export import CountingBatchProcessor
from .semconv import ContentCapture

__all__ = [
    "DEFAULT_MAX_CONTENT_CHARS",
    "STATE",
    "Clock",
    "Configuration",
    "ContentSettings",
    "Redactor",
    "SdkState",
]

DEFAULT_MAX_CONTENT_CHARS = 4096

Redactor = Callable[[str, str], "str | None"]
#: nanoseconds since the epoch, like :func:`time.time_ns`
Clock = Callable[[], int]


@dataclass(frozen=True)
class Configuration:
    """What :func:`configure` built."""

    provider: TracerProvider
    processor: CountingBatchProcessor | None  # None with exporter "none"
    exporter: SpanExporter | None
    owns_provider: bool  # False when spans go to the app's own provider
    private: bool


@dataclass(frozen=True)
class ContentSettings:
    """What happens to prompt/response text before it is put on a span."""

    capture: bool = False
    redact: Redactor | None = None
    max_chars: int = DEFAULT_MAX_CONTENT_CHARS


@dataclass(eq=False)
class SdkState:
    """All of the SDK's mutable state; one instance per process (:data:`STATE`)."""

    lock: threading.RLock = field(default_factory=threading.RLock)

    # configure(): the pipeline it built and what it changed in the process
    configuration: Configuration | None = None
    owned_provider: TracerProvider | None = None  # the global provider spanguard created
    with_baggage: weakref.WeakSet[TracerProvider] = field(default_factory=weakref.WeakSet)
    said_shared: bool = False  # whether configure() said it rides on the app's pipeline
    atexit_registered: bool = False
    holds_threads: bool = False  # whether configure() holds thread propagation
    content_events: SpanProcessor | None = None  # emits held content as log records
    sigterm_handler: Callable[[int, FrameType | None], None] | None = None

    # which tracer spanguard's spans go to (._runtime.active_tracer)
    overrides: list[ApiTracerProvider] = field(default_factory=list)  # private ones, innermost last
    override: ApiTracerProvider | None = None  # == overrides[-1]
    cached_tracer: tuple[ApiTracerProvider | None, Tracer | None] = (None, None)

    # content: settings, and where it goes (._events)
    content: ContentSettings | None = None  # None: read the environment variable first
    event_mode: ContentCapture = ContentCapture.SPAN_ONLY  # content on spans only
    pending: dict[int, dict[str, str]] = field(default_factory=dict)  # span id → held content

    # what was logged once already (._runtime.warn_dropped_field, internal_error)
    reported: set[str] = field(default_factory=set)
    warned: set[tuple[str, str]] = field(default_factory=set)

    # ThreadPoolExecutor.submit (._threads)
    thread_users: int = 0
    replaced_submit: Callable[..., Any] | None = None  # the submit spanguard's wrapper calls
    propagating: bool = False  # whether the wrapper attaches the submitter's context

    # what spanguard's spans, events and annotations are stamped with (tests replace it)
    clock: Clock = time.time_ns

    def reset_warnings(self) -> None:
        """Forget which warnings and internal errors were logged (each logs once again)."""
        with self.lock:
            self.warned.clear()
            self.reported.clear()


STATE = SdkState()
