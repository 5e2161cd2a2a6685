"""The agent's process signals: tools, retrieval, plan steps, escalations, friction (the
decorators and events); the span scopes ``plan()`` and ``llm_call()`` are :mod:`._scopes`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from . import semconv
from ._content import redact_text, set_content
from ._documents import normalize_documents, set_documents
from ._instrument import SpanSpec, decorator
from ._runtime import (
    active_tracer,
    content_settings,
    internal_error,
    now_ns,
    warn_dropped_field,
)

__all__ = [
    "escalate",
    "event",
    "friction",
    "plan_step",
    "record_documents",
    "retrieval",
    "step_attributes",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])
Mapper = Callable[[Any], Any]
_RETRIEVAL_KEY = otel_context.create_key("spanguard.retrieval")
_JSON = "application/json"


# --- tool ---------------------------------------------------------------------------------
def _tool_start(fn: Callable[..., Any]) -> Callable[[Span, tuple[Any, ...], dict[str, Any]], None]:
    signature: list[inspect.Signature] = []

    def on_start(span: Span, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        span.set_attribute(
            semconv.GEN_AI_TOOL_CALL_ID, format(span.get_span_context().span_id, "016x")
        )
        if content_settings().capture:
            if not signature:
                signature.append(inspect.signature(fn))
            try:
                bound = signature[0].bind_partial(*args, **kwargs).arguments
            except TypeError:
                bound = {"args": list(args), "kwargs": kwargs}
            set_content(span, semconv.GEN_AI_TOOL_CALL_ARGUMENTS, dict(bound))
            if set_content(span, semconv.INPUT_VALUE, dict(bound)):  # OpenInference backends
                span.set_attribute(semconv.INPUT_MIME_TYPE, _JSON)

    return on_start


def _tool_result(span: Span, result: Any) -> None:
    if set_content(span, semconv.GEN_AI_TOOL_CALL_RESULT, result):
        set_content(span, semconv.OUTPUT_VALUE, result)
        span.set_attribute(
            semconv.OUTPUT_MIME_TYPE, "text/plain" if isinstance(result, str) else _JSON
        )


def _tool_spec(fn: Callable[..., Any], name: str | None, description: str | None) -> SpanSpec:
    tool_name = name if isinstance(name, str) and name else fn.__name__
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: tool_name,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_TOOL,
        semconv.TOOL_NAME: tool_name,
    }
    if isinstance(description, str):
        attributes[semconv.GEN_AI_TOOL_DESCRIPTION] = description
        attributes[semconv.TOOL_DESCRIPTION] = description
    return SpanSpec(
        semconv.span_name(semconv.OP_EXECUTE_TOOL, tool_name),
        attributes,
        on_start=_tool_start(fn),
        on_result=_tool_result,
        where=f"tool '{tool_name}'",
    )


_TOOL_USAGE = (
    "spanguard.tool decorates a function: use @spanguard.tool, "
    '@spanguard.tool("kb_search") or @spanguard.tool(name="kb_search")'
)


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(name: str | None = None, /, *, description: str | None = None) -> Callable[[F], F]: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...
def tool(fn: Any = None, /, *, name: str | None = None, description: str | None = None) -> Any:
    """Record each call of the decorated function as an ``execute_tool {name}`` span.

    ``@tool``, ``@tool("kb_search")`` or ``@tool(name="kb_search", description=...)``; works on
    functions, coroutines, generators and async generators. Arguments and result are content
    (recorded with capture on only). A non-callable target raises ``TypeError``.
    """
    return decorator(fn, name, lambda f, n: _tool_spec(f, n, description), _TOOL_USAGE)


# --- retrieval ----------------------------------------------------------------------------
def _retrieval_context(ctx: Context, span: Span) -> Context:
    return otel_context.set_value(_RETRIEVAL_KEY, span, ctx)


def _retrieval_result(mapper: Mapper | None, where: str) -> Callable[[Span, Any], None]:
    def on_result(span: Span, result: Any) -> None:
        recorded = getattr(span, "attributes", None) or {}
        if semconv.GEN_AI_RETRIEVAL_DOCUMENTS in recorded:
            return  # record_documents() already ran inside the function
        if result is None:  # nothing returned (or a generator): nothing to map
            return
        try:
            items = mapper(result) if mapper is not None else result
        except Exception as exc:  # the app's mapper failed: keep the app running
            warn_dropped_field(where, "documents", f"the mapper raised {type(exc).__name__}")
            return
        set_documents(span, normalize_documents(items, where))

    return on_result


def _retrieval_spec(fn: Callable[..., Any], source: str | None, mapper: Mapper | None) -> SpanSpec:
    source_name = source if isinstance(source, str) and source else fn.__name__
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_RETRIEVAL,
        semconv.GEN_AI_DATA_SOURCE_ID: source_name,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_RETRIEVER,
    }
    where = f"retrieval '{source_name}'"
    return SpanSpec(
        semconv.span_name(semconv.OP_RETRIEVAL, source_name),
        attributes,
        kind=SpanKind.CLIENT,  # the conventions' kind for a retrieval
        on_result=_retrieval_result(mapper, where),
        on_context=_retrieval_context,
        where=where,
    )


_RETRIEVAL_USAGE = (
    "spanguard.retrieval decorates a function: use @spanguard.retrieval, "
    '@spanguard.retrieval("kb") or @spanguard.retrieval(name="kb", mapper=...)'
)


@overload
def retrieval(fn: F, /) -> F: ...
@overload
def retrieval(name: str | None = None, /, *, mapper: Mapper | None = None) -> Callable[[F], F]: ...
@overload
def retrieval(
    *, name: str | None = None, mapper: Mapper | None = None, source: str | None = None
) -> Callable[[F], F]: ...
def retrieval(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    mapper: Mapper | None = None,
    source: str | None = None,
) -> Any:
    """Record each call as a ``retrieval {name}`` span with the documents it returned.

    ``@retrieval``, ``@retrieval("kb")`` or ``@retrieval(name="kb", mapper=...)``; the name is
    the data source (``gen_ai.data_source.id``; ``source=`` is an alias of ``name=``).
    ``mapper`` turns the return value into documents (mappings or objects with ``id``,
    ``group``, ``rank``, ``score``); without it the return value must already be those.
    Generators should call :func:`record_documents` instead.
    """
    if source is not None:
        if name is not None and name != source:
            raise TypeError(f"{_RETRIEVAL_USAGE} (source= is an alias of name=; give one).")
        name = source
    if mapper is not None and not callable(mapper):
        raise TypeError(
            f"{_RETRIEVAL_USAGE} (mapper= must be a callable, not {type(mapper).__name__})."
        )
    return decorator(fn, name, lambda f, n: _retrieval_spec(f, n, mapper), _RETRIEVAL_USAGE)


def record_documents(documents: Any, *, name: str | None = None, source: str | None = None) -> None:
    """Record retrieved documents: on the current ``@retrieval`` span, or else as a new
    zero-length ``retrieval {name}`` span under the current span (``name`` is the data source,
    as for ``@retrieval``; ``source=`` is an alias)."""
    where = "record_documents()"
    source = name if name is not None else source
    try:
        current = trace.get_current_span()
        if otel_context.get_value(_RETRIEVAL_KEY) is current and current.is_recording():
            set_documents(current, normalize_documents(documents, where))
            return
        tracer = active_tracer()
        if tracer is None:
            return
        name = source if isinstance(source, str) and source else "documents"
        span = tracer.start_span(
            semconv.span_name(semconv.OP_RETRIEVAL, name),
            kind=SpanKind.CLIENT,
            attributes={
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_RETRIEVAL,
                semconv.GEN_AI_DATA_SOURCE_ID: name,
                semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_RETRIEVER,
            },
            start_time=now_ns(),
        )
        set_documents(span, normalize_documents(documents, where))
        span.end(now_ns())
    except Exception as exc:
        internal_error(where, exc)


# --- events -------------------------------------------------------------------------------
def event(name: str, attributes: dict[str, AttributeValue]) -> None:
    span = trace.get_current_span()
    if span.is_recording():
        try:
            span.add_event(name, attributes, now_ns())
        except Exception as exc:
            internal_error(name, exc)


def escalate(reason: str | None = None) -> None:
    """Record that the agent handed the user over to a human (reason optional)."""
    attributes: dict[str, AttributeValue] = {}
    if isinstance(reason, str):
        redacted = redact_text(semconv.ESCALATION_REASON, reason)
        if redacted is not None:  # the redactor may drop the reason, never the escalation
            attributes[semconv.ESCALATION_REASON] = redacted
    elif reason is not None:
        warn_dropped_field(
            "escalate()",
            semconv.ESCALATION_REASON,
            f"a reason must be a string, not {type(reason).__name__}",
        )
    event(semconv.EVENT_ESCALATION, attributes)


def friction(point: str) -> None:
    """Record a friction point put in the user's way (``"extra identity check"``)."""
    if not isinstance(point, str) or not point:
        warn_dropped_field(
            "friction()",
            semconv.FRICTION_POINT,
            "a friction point must be a non-empty string; no event recorded",
        )
        return
    redacted = redact_text(semconv.FRICTION_POINT, point)
    event(semconv.EVENT_FRICTION, {} if redacted is None else {semconv.FRICTION_POINT: redacted})


def step_attributes(step: Any) -> dict[str, AttributeValue] | None:
    if not isinstance(step, str) or not step:
        warn_dropped_field(
            "plan_step()",
            semconv.PLAN_STEP,
            "a plan step must be a non-empty string; no event recorded",
        )
        return None
    redacted = redact_text(semconv.PLAN_STEP, step)
    return {} if redacted is None else {semconv.PLAN_STEP: redacted}


def plan_step(step: str) -> None:
    """Record one plan step on the current span (the ``plan`` span inside ``with plan()``):
    the one documented way to record plan steps."""
    attributes = step_attributes(step)
    if attributes is not None:
        event(semconv.EVENT_PLAN_STEP, attributes)
