"""Content as GenAI log-based events instead of (or as well as) span attributes.

``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` decides, as it does for the GenAI
instrumentations: ``SPAN_ONLY`` (and ``true``/``1``/...) puts content on spans; ``EVENT_ONLY``
puts it in log records only; ``SPAN_AND_EVENT`` in both. In an event mode, the content a span
would carry is held until the span ends and then emitted as one log record with the span's
context: ``gen_ai.client.inference.operation.details`` for a model call (with its
``gen_ai.input.messages`` / ``gen_ai.output.messages`` and the call's operation, provider and
model), ``spanguard.content`` for any other span (the request's ``input.value`` /
``output.value``, a tool's arguments and result, document text). Redaction and size bounds
apply before anything is held. :func:`spanguard.configure` installs :class:`ContentEvents` and a
logger provider exporting by OTLP beside the spans (docs/sdk.md).
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import NonRecordingSpan, Span

from . import semconv
from ._state import STATE
from .semconv import ContentCapture, content_capture

__all__ = [
    "ContentEvents",
    "capture_mode",
    "content_on_span",
    "hold_content",
    "set_mode",
]

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_CALL_KEYS = (
    semconv.GEN_AI_OPERATION_NAME,
    semconv.GEN_AI_PROVIDER_NAME,
    semconv.GEN_AI_REQUEST_MODEL,
    semconv.GEN_AI_RESPONSE_MODEL,
)

#: spans with content held at once; beyond it the oldest is dropped (its span went to a provider
#: without :class:`ContentEvents`, so it would never be emitted)
_MAX_PENDING = 10_000


def capture_mode() -> ContentCapture:
    """Where the environment variable puts captured content: ``SPAN_ONLY`` (also when it is
    off: whether content is captured is :class:`~._state.ContentSettings`'), ``EVENT_ONLY`` or
    ``SPAN_AND_EVENT``."""
    mode = content_capture()
    return ContentCapture.SPAN_ONLY if mode is ContentCapture.NO_CONTENT else mode


def set_mode(mode: ContentCapture) -> None:
    with STATE.lock:
        STATE.event_mode = mode
        if mode is ContentCapture.SPAN_ONLY:
            STATE.pending.clear()


def content_on_span() -> bool:
    return STATE.event_mode is not ContentCapture.EVENT_ONLY


def hold_content(span: Span, key: str, text: str) -> None:
    """Keep ``text`` for the span's content event (in an event mode; else nothing)."""
    if STATE.event_mode is ContentCapture.SPAN_ONLY or not span.is_recording():
        return
    context = span.get_span_context()
    with STATE.lock:
        pending = STATE.pending
        if context.span_id not in pending and len(pending) >= _MAX_PENDING:
            del pending[next(iter(pending))]  # a span that never reached the processor
        pending.setdefault(context.span_id, {})[key] = text


class ContentEvents(SpanProcessor):
    """Emits the content held for a span as one log record when the span ends."""

    def __init__(self, logger_provider: Any) -> None:
        self._provider = logger_provider
        self._logger = logger_provider.get_logger("spanguard")
        self.active = True

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        with STATE.lock:
            content = STATE.pending.pop(context.span_id, None)
        if not content or not self.active:
            return
        attributes: dict[str, Any] = dict(sorted(content.items()))
        span_attributes = span.attributes or {}
        operation = span_attributes.get(semconv.GEN_AI_OPERATION_NAME)
        name = (
            semconv.EVENT_INFERENCE_DETAILS
            if operation in _LLM_OPERATIONS
            else semconv.EVENT_CONTENT
        )
        for key in _CALL_KEYS:
            if key in span_attributes:
                attributes.setdefault(key, span_attributes[key])
        self._logger.emit(
            timestamp=span.end_time,
            event_name=name,
            attributes=attributes,
            context=trace.set_span_in_context(NonRecordingSpan(context)),
        )

    def shutdown(self) -> None:
        if self.active:
            self.active = False
            self._provider.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self._provider.force_flush(timeout_millis))
