"""What ``spanguard run`` puts on each request span, so that the spans alone hold everything
the run evaluates: the prompt and the app's answer (as the request's input and output), the
metadata the app returned, and a process trace returned in fairtrace's shape (replayed as the
spans and events the SDK would have emitted). Its ``--traces-out`` file is then the run's
record, read by every other path exactly as the run read it (issue 36).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.util.types import AttributeValue

import spanguard
from spanguard import Request, semconv

from ..traces.model import ProcessTrace

__all__ = ["Seen", "record_answer", "record_question", "replay_process", "without_text"]

_TEXT = "text/plain"


class Seen(SpanProcessor):
    """Counts the spans that ended in each trace: whether a call recorded a process itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, int] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        with self._lock:
            self._counts[context.trace_id] = self._counts.get(context.trace_id, 0) + 1

    def recorded(self, handle: Request) -> bool:
        """Whether the open request has a span or an event of the app's own."""
        if getattr(handle.span, "events", ()):
            return True
        with self._lock:
            return self._counts.get(handle.span.get_span_context().trace_id, 0) > 0

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def record_question(handle: Request, prompt: str) -> None:
    """The variant's prompt as the request's input (whatever the content-capture setting: the
    harness, not the app, knows it; ``--redact`` leaves it out of the written file)."""
    if handle.span.is_recording():
        handle.span.set_attributes({semconv.INPUT_VALUE: prompt, semconv.INPUT_MIME_TYPE: _TEXT})


def _attribute(value: Any) -> AttributeValue | None:
    """A metadata value as a span attribute: scalars and lists of one scalar type as they
    are, anything else as sorted JSON text; None (and non-finite numbers) are left out."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple) and value:
        kinds = {type(v) for v in value}
        if len(kinds) == 1 and kinds <= {str, bool, int, float}:
            return tuple(value)
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)


def record_answer(handle: Request, text: str, metadata: Mapping[str, Any]) -> None:
    """The app's answer as the request's output, and its metadata as
    ``spanguard.metadata.<name>`` attributes (how ``Request.set_metadata`` records them)."""
    span = handle.span
    if not span.is_recording():
        return
    span.set_attributes({semconv.OUTPUT_VALUE: text, semconv.OUTPUT_MIME_TYPE: _TEXT})
    for name, value in metadata.items():
        attribute = _attribute(value)
        if attribute is not None and isinstance(name, str) and name:
            span.set_attribute(semconv.metadata_key(name), attribute)


def _noop() -> None:
    return None


@lru_cache(maxsize=1024)
def _tool(name: str) -> Callable[[], None]:
    return spanguard.tool(name=name)(_noop)


def replay_process(process: ProcessTrace) -> None:
    """Emit a process trace the app returned (fairtrace's ``metadata["trace"]``) under the
    current request, as the SDK records one: a span per tool call and for the documents,
    events for plan steps, escalation and friction."""
    for call in process.tool_calls:
        _tool(call.name)()
    documents = [
        {
            "id": d.id or f"{d.group or 'document'}#{position}",
            "group": d.group,
            "rank": d.rank,
            "score": d.score,
        }
        for position, d in enumerate(process.retrieved_documents, start=1)
    ]
    if documents:
        spanguard.record_documents(documents, name="documents")
    for step in process.plan_steps:
        spanguard.plan_step(step)
    if process.escalated:
        spanguard.escalate(reason=process.escalation_reason)
    for point in process.friction_points:
        spanguard.friction(point)


_HARNESS_TEXT = frozenset(
    {semconv.INPUT_VALUE, semconv.INPUT_MIME_TYPE, semconv.OUTPUT_VALUE, semconv.OUTPUT_MIME_TYPE}
)


def without_text(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """``spans`` with the prompt and answer the harness recorded left out of request spans
    (``run --traces-out FILE --redact``); the process and the identity stay."""
    out = []
    for span in spans:
        attributes = span.attributes or {}
        if semconv.REQUEST_ID in attributes and not _HARNESS_TEXT.isdisjoint(attributes):
            span = ReadableSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=span.resource,
                attributes={k: v for k, v in attributes.items() if k not in _HARNESS_TEXT},
                events=span.events,
                links=span.links,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=span.end_time,
                instrumentation_scope=span.instrumentation_scope,
            )
        out.append(span)
    return out
