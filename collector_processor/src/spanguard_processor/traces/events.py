"""What GenAI log-based events mean for the span they belong to (pure: spans in, spans out).

Log records joined to their span (:mod:`spanguard_processor.ingest.otlp_logs`) arrive as span
events; :func:`with_log_events` folds the ones the GenAI conventions define into the span, as
if the span had carried them, so one conversion reads content wherever it was recorded:

* ``gen_ai.client.inference.operation.details``: its ``gen_ai.input.messages``,
  ``gen_ai.output.messages`` and ``gen_ai.system_instructions`` (and any other attribute the
  span lacks) — the model call's messages, and so the request's question and answer when no
  span holds them (the answer falls back to the last model call's output, as with span
  content);
* ``spanguard.content`` (the SDK's content events for spans other than model calls): the
  same, its attributes are the span's content keys (``input.value``, ``output.value``, ...);
* ``gen_ai.client.operation.exception``: the call failed (status ERROR, ``error.type``);
* the older per-message events — ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (input, in order) and ``gen_ai.choice``
  (output) — become ``gen_ai.input.messages`` / ``gen_ai.output.messages`` in the chat shape.

What a span already holds wins; folded events leave the span's event list (they are read).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from spanguard import semconv

from ..ingest.otlp_logs import LOG_BODY, LOG_SPAN, TRACE_LEVEL
from ..ingest.spans import AttrValue, SpanEvent, SpanRecord
from ._messages import plain
from .identity import find_root

__all__ = ["READ_EVENTS", "with_log_events"]

_ROLES = {
    semconv.EVENT_SYSTEM_MESSAGE: "system",
    semconv.EVENT_USER_MESSAGE: "user",
    semconv.EVENT_ASSISTANT_MESSAGE: "assistant",
    semconv.EVENT_TOOL_MESSAGE: "tool",
}
#: events whose attributes are the span's content (the SDK's EVENT_ONLY mode writes the second)
_CONTENT_EVENTS = frozenset({semconv.EVENT_INFERENCE_DETAILS, semconv.EVENT_CONTENT})
READ_EVENTS = frozenset(
    {*_CONTENT_EVENTS, semconv.EVENT_OPERATION_EXCEPTION, semconv.EVENT_CHOICE, *_ROLES}
)
_STATUS_ERROR = 2


def with_log_events(spans: Sequence[SpanRecord]) -> Sequence[SpanRecord]:
    """``spans`` with the GenAI events on them folded in (the same list when there are none).

    Log records stored as :data:`LOG_SPAN` spans (a logs receiver's way into a span store)
    first move to the span they name, their parent (those naming the trace only, under
    :data:`TRACE_LEVEL`, to the trace's root); one whose parent is not in the trace stays.
    """
    spans = _lift_log_spans(spans)
    if not any(_readable(event) for span in spans for event in span.events):
        return spans
    return [_fold(span) for span in spans]


def _lift_log_spans(spans: Sequence[SpanRecord]) -> Sequence[SpanRecord]:
    if not any(span.name == LOG_SPAN for span in spans):
        return spans
    ids = {span.span_id for span in spans if span.name != LOG_SPAN}
    found = find_root([span for span in spans if span.name != LOG_SPAN])
    root = found.span_id if found is not None else ""
    moved: dict[str, list[SpanEvent]] = {}
    kept = []
    for span in spans:
        parent = root if span.parent_span_id == TRACE_LEVEL else span.parent_span_id
        if span.name == LOG_SPAN and parent in ids:
            moved.setdefault(parent, []).extend(span.events)
        else:
            kept.append(span)
    return [
        replace(span, events=(*span.events, *moved[span.span_id]))
        if span.span_id in moved
        else span
        for span in kept
    ]


def _empty(value: AttrValue) -> bool:
    return value is None or value in ("", "[]", ())


def _readable(event: SpanEvent) -> bool:
    """A GenAI event this module reads; a per-message event without content is not (it stays
    on the span, where the unread-key note may name it)."""
    if event.name not in READ_EVENTS:
        return False
    if event.name in _ROLES or event.name == semconv.EVENT_CHOICE:
        return bool(_body(event)) or "content" in event.attributes
    return True


def _fold(span: SpanRecord) -> SpanRecord:
    events = [event for event in span.events if _readable(event)]
    if not events:
        return span
    attrs = dict(span.attributes)
    status = span.status_code
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in sorted(events, key=lambda e: e.time_ns):
        if event.name in _CONTENT_EVENTS:
            for key, value in event.attributes.items():
                if key != LOG_BODY and _empty(attrs.get(key)):
                    attrs[key] = value
        elif event.name == semconv.EVENT_OPERATION_EXCEPTION:
            status = _STATUS_ERROR
            error = (
                event.attributes.get(semconv.ERROR_TYPE)
                or event.attributes.get(semconv.EXCEPTION_TYPE)
                or "exception"
            )
            attrs.setdefault(semconv.ERROR_TYPE, error)
        elif event.name == semconv.EVENT_CHOICE:
            outputs.append(_choice(event))
        else:
            inputs.append(_message(event, _ROLES[event.name]))
    for key, messages in (
        (semconv.GEN_AI_INPUT_MESSAGES, inputs),
        (semconv.GEN_AI_OUTPUT_MESSAGES, outputs),
    ):
        if messages and _empty(attrs.get(key)):
            attrs[key] = json.dumps(messages, ensure_ascii=False)
    return replace(
        span,
        attributes=attrs,
        status_code=status,
        events=tuple(e for e in span.events if not _readable(e)),
    )


def _body(event: SpanEvent) -> Mapping[str, Any]:
    body = event.attributes.get(LOG_BODY)
    if isinstance(body, Mapping):
        return body
    return {"content": body} if isinstance(body, str) else {}


def _message(event: SpanEvent, role: str) -> dict[str, Any]:
    body = _body(event)
    message: dict[str, Any] = {"role": str(body.get("role") or role)}
    content = body.get("content", event.attributes.get("content"))
    if content is not None:
        message["content"] = content if isinstance(content, str) else plain(content)
    if body.get("tool_calls"):
        message["tool_calls"] = plain(body["tool_calls"])
    if body.get("id") and role == "tool":
        message["tool_call_id"] = body["id"]
    return message


def _choice(event: SpanEvent) -> dict[str, Any]:
    body = _body(event)
    inner = body.get("message")
    message = (
        _message(SpanEvent(event.name, event.time_ns, {LOG_BODY: inner}), "assistant")
        if isinstance(inner, Mapping)
        else {"role": "assistant"}
    )
    if body.get("finish_reason"):
        message["finish_reason"] = body["finish_reason"]
    return message
