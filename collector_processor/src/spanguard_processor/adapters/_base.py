"""What every adapter shares: its error, the ``trace_mapper`` hook, and span helpers.

An adapter turns a framework object into fairtrace's app signature ``app(prompt, assignments)``.
It records what the framework did as spans through the spanguard SDK (model calls with token
usage, tool calls, retrieved documents), so ``spanguard run`` assembles them into the variant's
agent trace exactly as it does for a hand-instrumented app. The ``trace_mapper`` hook lets the
caller add what only the app knows (plan steps, escalations, friction, documents): it receives
the framework's raw result and returns a fairtrace-shaped trace, which is recorded as spans too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace as otel_trace

import spanguard
from spanguard import semconv
from spanguard.exceptions import InputError
from spanguard.integration import active_tracer, now_ns

from ..fairness.records import STATED_KEY, parse_fairtrace_trace, stated_keys
from ..traces.model import ProcessTrace

__all__ = [
    "AdapterError",
    "App",
    "TraceMapper",
    "agent_span",
    "apply_trace_mapper",
    "as_agent",
    "record_process",
    "record_tool_call",
    "require_text",
    "run_as_tool",
]

# an app answers a prompt: a str or {"text", "metadata"} (or an awaitable of one)
App = Callable[[str, Mapping[str, str]], object]
# the hook gets the framework's raw result (a third-party object this package does not import,
# hence Any) and returns a fairtrace-shaped process trace (JSON) or None
TraceMapper = Callable[[Any], "Mapping[str, Any] | None"]


class AdapterError(InputError):
    """A framework object or a response that does not have the shape an adapter expects."""

    def __init__(self, adapter: str, message: str) -> None:
        self.adapter = adapter
        super().__init__(f"the {adapter} adapter: {message}")


@contextmanager
def agent_span(name: str, *, model: str | None = None) -> Iterator[None]:
    """An ``invoke_agent {name}`` span (kind INTERNAL) around what one agent did.

    Every adapted call records at least this span, so a call in which the framework did
    nothing observable (no tool, no escalation: a ``trace_mapper`` returning None) still
    yields an agent trace, and the gate counts it as "did nothing" instead of dropping it.
    """
    tracer = active_tracer()
    if tracer is None:
        yield
        return
    attributes: dict[str, str] = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
        semconv.GEN_AI_AGENT_NAME: name,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_AGENT,
    }
    if model:
        attributes[semconv.GEN_AI_REQUEST_MODEL] = model
    # stamped by spanguard's clock (the SDK's, which spanguard.testing.use_clock replaces);
    # use_span records an exception and the error status as start_as_current_span would
    span = tracer.start_span(
        semconv.span_name(semconv.OP_INVOKE_AGENT, name), attributes=attributes, start_time=now_ns()
    )
    try:
        with otel_trace.use_span(span, end_on_exit=False):
            yield
    finally:
        span.end(now_ns())


def as_agent(app: App, name: str) -> App:
    """``app`` with every call inside an :func:`agent_span` (plain or coroutine function)."""
    if inspect.iscoroutinefunction(app):

        @functools.wraps(app)
        async def call_async(prompt: str, assignments: Mapping[str, str]) -> Any:
            with agent_span(name):
                return await app(prompt, assignments)

        return call_async

    @functools.wraps(app)
    def call(prompt: str, assignments: Mapping[str, str]) -> Any:
        with agent_span(name):
            return app(prompt, assignments)

    return call


def run_as_tool(name: str, call_id: str | None, function: Callable[[], object]) -> object:
    """Call ``function()`` (plain or coroutine function) inside an ``execute_tool {name}``
    span carrying the model's tool call id; returns what it returns (a coroutine if async)."""
    if inspect.iscoroutinefunction(function):

        async def call_async() -> object:
            if call_id:
                otel_trace.get_current_span().set_attribute(semconv.GEN_AI_TOOL_CALL_ID, call_id)
            return await function()

        return spanguard.tool(name=name)(call_async)()

    def call() -> object:
        if call_id:
            otel_trace.get_current_span().set_attribute(semconv.GEN_AI_TOOL_CALL_ID, call_id)
        return function()

    return spanguard.tool(name=name)(call)()


def record_tool_call(name: str, call_id: str | None = None) -> None:
    """Record one ``execute_tool {name}`` span under the current span."""
    run_as_tool(name, call_id, _nothing)


def _nothing() -> None:
    return None


def record_process(process: ProcessTrace) -> None:
    """Record a fairtrace-shaped process trace through the SDK, in the contract's spans."""
    for tool in process.tool_calls:
        record_tool_call(tool.name)
    if process.retrieved_documents:
        spanguard.record_documents(
            [
                {
                    "id": doc.id or f"doc-{i}",
                    "group": doc.group,
                    "rank": doc.rank,
                    "score": doc.score,
                }
                for i, doc in enumerate(process.retrieved_documents, start=1)
            ],
            source="trace_mapper",
        )
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
        raise AdapterError(
            adapter, f"the trace_mapper returned an invalid trace: field '{exc.field}' {exc.detail}"
        ) from None
    record_process(process)
    stated = stated_keys(mapped)
    request = spanguard.current_request()
    if stated and request is not None:
        # an explicit "none" (escalated: false, tool_calls: []) has no span or event of its
        # own: the request carries what the mapper stated, so the gate counts it as signal
        request.set_metadata(STATED_KEY, ",".join(stated))


def require_text(adapter: str, text: object, what: str) -> str:
    """``text`` when it is a string; else an :class:`AdapterError` saying what came back."""
    if isinstance(text, str):
        return text
    raise AdapterError(
        adapter,
        f"the {what} has no text (got {type(text).__name__}); "
        "expected a response whose output holds a text message.",
    )


def join_text_parts(parts: Sequence[object]) -> str | None:
    """LangChain-style content blocks ``[{"type": "text", "text": ...}, "str", ...]`` → text."""
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif (
            isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            texts.append(part["text"])
    return "".join(texts) if texts else None
