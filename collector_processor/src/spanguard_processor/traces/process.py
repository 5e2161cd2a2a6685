"""What the request did and how it was judged: its process trace (tool calls, retrieved
documents, plan, escalation, friction) and its outcome (feedback, retry mark, expectations).

Part of the one conversion (:mod:`~spanguard_processor.traces.convert`). Events are read in
time order; the outcome merges the root's attributes, its events and then the annotation spans
aimed at the request, later values winning. Pure: span records in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spanguard import semconv

from ..common._json import parse_json
from ..ingest.spans import AttrValue, SpanEvent, SpanRecord
from ._documents import span_documents
from ._llm import Message, requested_tools
from .identity import plain, prefixed, str_or_none, tool_name
from .model import JSONScalar, ProcessTrace, ToolCall

__all__ = ["Outcome", "outcome_of", "process_trace"]

_EXPECT_LITERAL = frozenset({"min_chars", "max_chars", "regex", "contains", "not_contains", "json"})


def _events(spans: Sequence[SpanRecord]) -> list[tuple[int, str, SpanEvent]]:
    found = [(e.time_ns, s.span_id, e) for s in spans for e in s.events]
    found.sort(key=lambda item: (item[0], item[1]))
    return found


# --- feedback, retries, expectations (root, events, annotation spans) ----------------------


def _feedback_value(value: AttrValue) -> JSONScalar:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    return str_or_none(value)


def _expect_value(check: str, value: AttrValue) -> Any:
    if check not in _EXPECT_LITERAL and isinstance(value, str):
        try:
            return parse_json(value)
        except ValueError:
            return value
    return plain(value)


class Outcome:
    """Feedback, retry mark and expectations, merged in time order (later values win)."""

    def __init__(self) -> None:
        self.feedback: JSONScalar = None
        self.retried = False
        self.expect: dict[str, Any] = {}

    def absorb(self, attrs: Mapping[str, AttrValue]) -> None:
        if semconv.FEEDBACK in attrs:
            self.feedback = _feedback_value(attrs[semconv.FEEDBACK])
        if attrs.get(semconv.RETRIED) is True:
            self.retried = True
        for check, value in prefixed(attrs, semconv.EXPECT_PREFIX).items():
            self.expect[check] = _expect_value(check, value)


def outcome_of(
    root: SpanRecord, spans: Sequence[SpanRecord], annotations: Sequence[SpanRecord]
) -> Outcome:
    """The request's outcome: its root, its events, then its annotations by end time."""
    outcome = Outcome()
    outcome.absorb(root.attributes)
    for _, _, event in _events(spans):
        if event.name in (semconv.EVENT_FEEDBACK, semconv.EVENT_RETRY, semconv.EVENT_EXPECT):
            outcome.absorb(event.attributes)
    for span in sorted(annotations, key=lambda s: (s.end_ns, s.span_id)):
        outcome.absorb(span.attributes)
        for event in span.events:
            outcome.absorb(event.attributes)
    return outcome


# --- process signals -----------------------------------------------------------------------


def _tool_calls(
    ordered: Sequence[SpanRecord], outputs: Mapping[str, Sequence[Message]]
) -> tuple[ToolCall, ...]:
    """Executed tool spans, plus the calls models requested that no executed span answers.

    A requested call is answered by an executed tool span with the same call id, else by an
    unanswered one with the same name. Executed calls sit at their span's start, requested ones
    at the end of the LLM span that asked for them.
    """
    executed = [(s, name) for s in ordered if (name := tool_name(s)) is not None]
    requested = [
        (s, name, ident)
        for s in ordered
        if s.span_id in outputs
        for name, ident in requested_tools(outputs[s.span_id])
    ]
    answered: set[int] = set()
    ids = {}
    for index, (span, _) in enumerate(executed):
        call_id = span.attributes.get(semconv.GEN_AI_TOOL_CALL_ID)
        if isinstance(call_id, str) and call_id:
            ids[call_id] = index
    timeline: list[tuple[int, str, int, ToolCall]] = [
        (span.start_ns, span.span_id, 0, ToolCall(name)) for span, name in executed
    ]
    for position, (span, name, ident) in enumerate(requested):
        match = ids.get(ident) if ident else None
        if match is not None and match not in answered:
            answered.add(match)
            continue
        same = next(
            (
                i
                for i, (_, executed_name) in enumerate(executed)
                if executed_name == name and i not in answered
            ),
            None,
        )
        if same is not None:
            answered.add(same)
            continue
        timeline.append(
            (span.end_ns, span.span_id, 1 + position, ToolCall(name, ident, requested=True))
        )
    timeline.sort(key=lambda item: item[:3])
    return tuple(call for *_, call in timeline)


def process_trace(
    spans: Sequence[SpanRecord], outputs: Mapping[str, Sequence[Message]]
) -> ProcessTrace:
    """The request's process: tool calls, retrieved documents, plan steps, escalation and
    friction, in time order. ``outputs`` holds each LLM span's output messages by span id."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    tools = _tool_calls(ordered, outputs)
    documents = tuple(doc for s in ordered for doc in span_documents(s))
    plan: list[str] = []
    friction: list[str] = []
    escalated = False
    reason: str | None = None
    for _, _, event in _events(spans):
        attrs = event.attributes
        if event.name == semconv.EVENT_PLAN_STEP:
            step = str_or_none(attrs.get(semconv.PLAN_STEP))
            if step:
                plan.append(step)
        elif event.name == semconv.EVENT_FRICTION:
            point = str_or_none(attrs.get(semconv.FRICTION_POINT))
            if point:
                friction.append(point)
        elif event.name == semconv.EVENT_ESCALATION:
            escalated = True
            given = str_or_none(attrs.get(semconv.ESCALATION_REASON))
            if reason is None and given:
                reason = given
    return ProcessTrace(
        tool_calls=tools,
        retrieved_documents=documents,
        plan_steps=tuple(plan),
        escalated=escalated,
        escalation_reason=reason,
        friction_points=tuple(friction),
    )
