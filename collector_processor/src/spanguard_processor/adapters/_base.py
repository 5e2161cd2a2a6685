"""What every adapter shares: its error, the ``trace_mapper`` hook, and span helpers.

An adapter turns a framework object into fairtrace's app signature ``app(prompt, assignments)``.
It records what the framework did as spans through the spanguard SDK (model calls with token
usage, tool calls, retrieved documents), so ``spanguard run`` assembles them into the variant's
agent trace exactly as it does for a hand-instrumented app. The ``trace_mapper`` hook lets the
caller add what only the app knows (plan steps, escalations, friction, documents): it receives
the framework's raw result and returns a fairtrace-shaped trace, which is recorded as spans too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import trace as otel_trace

import spanguard
from spanguard import semconv
from spanguard.exceptions import InputError

from ..fairness.records import parse_fairtrace_trace
from ..model import ProcessTrace

__all__ = ["AdapterError", "App", "TraceMapper", "apply_trace_mapper", "record_process",
           "record_tool_call", "require_text"]

App = Callable[[str, Mapping[str, str]], Any]
TraceMapper = Callable[[Any], "Mapping[str, Any] | None"]


class AdapterError(InputError):
    """A framework object or a response that does not have the shape an adapter expects."""

    def __init__(self, adapter: str, message: str) -> None:
        self.adapter = adapter
        super().__init__(f"the {adapter} adapter: {message}")


def record_tool_call(name: str, call_id: str | None = None) -> None:
    """Record one ``execute_tool {name}`` span under the current span."""

    def call() -> None:
        if call_id:
            otel_trace.get_current_span().set_attribute(semconv.GEN_AI_TOOL_CALL_ID, call_id)

    spanguard.tool(name=name)(call)()


def record_process(process: ProcessTrace) -> None:
    """Record a fairtrace-shaped process trace through the SDK, in the contract's spans."""
    for tool in process.tool_calls:
        record_tool_call(tool.name)
    if process.retrieved_documents:
        spanguard.record_documents([
            {"id": doc.id or f"doc-{i}", "group": doc.group, "rank": doc.rank,
             "score": doc.score}
            for i, doc in enumerate(process.retrieved_documents, start=1)
        ], source="trace_mapper")
    for step in process.plan_steps:
        spanguard.plan_step(step)
    for point in process.friction_points:
        spanguard.friction(point)
    if process.escalated:
        spanguard.escalate(process.escalation_reason)


def apply_trace_mapper(adapter: str, mapper: TraceMapper | None, result: Any) -> None:
    """Call the hook on the framework's raw result and record what it returns."""
    if mapper is None:
        return
    mapped = mapper(result)
    if mapped is None:
        return
    try:
        process = parse_fairtrace_trace(mapped)
    except InputError as exc:
        raise AdapterError(adapter, f"the trace_mapper returned an invalid trace: field "
                                    f"'{exc.field}' {exc.detail}") from None
    record_process(process)


def require_text(adapter: str, text: object, what: str) -> str:
    """``text`` when it is a string; else an :class:`AdapterError` saying what came back."""
    if isinstance(text, str):
        return text
    raise AdapterError(adapter, f"the {what} has no text (got {type(text).__name__}); "
                                "expected a response whose output holds a text message.")


def join_text_parts(parts: Sequence[Any]) -> str | None:
    """LangChain-style content blocks ``[{"type": "text", "text": ...}, "str", ...]`` → text."""
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text" and isinstance(
                part.get("text"), str):
            texts.append(part["text"])
    return "".join(texts) if texts else None
