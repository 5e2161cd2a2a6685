"""The agent request: the root span of one answer, with its counterfactual identity.

``spanguard.request(...)`` is both a context manager (yielding a :class:`Request` handle) and a
decorator. A request opened while another is current joins it (no second root), so a test
harness may open the request with the counterfactual identity and the app's own decorated
entry point simply adds to it.
"""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind
from opentelemetry.util.types import AttributeValue

from . import semconv
from ._annotate import expect as _expect
from ._annotate import expectation_attributes, feedback_attributes
from ._annotate import feedback as _feedback
from ._annotate import mark_retried as _mark_retried
from ._content import set_content
from ._instrument import end_with_error
from ._runtime import active_tracer, internal_error, warn_dropped_field

__all__ = ["Request", "RequestScope", "current_request", "request"]

F = TypeVar("F", bound=Callable[..., Any])
_REQUEST_KEY = otel_context.create_key("spanguard.request")
_TEXT = "text/plain"
_JSON = "application/json"


class Request:
    """Handle of one agent request. Setters are safe to call at any time; after the request
    span has ended, feedback, retry marks and expectations go out as annotation spans."""

    __slots__ = ("request_id", "span")

    def __init__(self, request_id: str, span: Span) -> None:
        self.request_id = request_id
        self.span = span

    @property
    def trace_id(self) -> str:
        """The request's trace id as 32 hex digits (all zeros when nothing is recorded)."""
        return format(self.span.get_span_context().trace_id, "032x")

    def set_input(self, value: Any) -> None:
        """Record the request's input (only when content capture is on)."""
        _set_text(self.span, semconv.INPUT_VALUE, semconv.INPUT_MIME_TYPE, value)

    def set_output(self, value: Any) -> None:
        """Record the request's output (only when content capture is on)."""
        _set_text(self.span, semconv.OUTPUT_VALUE, semconv.OUTPUT_MIME_TYPE, value)

    def set_metadata(self, name: str, value: Any) -> None:
        """Attach one extra response-metadata value (``helpfulness_score``, ...)."""
        if not isinstance(name, str) or not name:
            warn_dropped_field("Request.set_metadata()", "name", "it must be a non-empty string")
            return
        if isinstance(value, str | bool | int | float):
            self.span.set_attribute(semconv.metadata_key(name), value)
        else:
            warn_dropped_field("Request.set_metadata()", semconv.metadata_key(name),
                               "it must be a string, number or bool")

    def set_cost(self, cost_usd: float) -> None:
        """Set the request's total cost in US dollars (else the processor sums LLM calls)."""
        if isinstance(cost_usd, int | float) and not isinstance(cost_usd, bool):
            self.span.set_attribute(semconv.COST_USD, float(cost_usd))
        else:
            warn_dropped_field("Request.set_cost()", semconv.COST_USD, "it must be a number")

    def feedback(self, value: Any) -> None:
        """Attach feedback to this request (now on its span, or later by annotation)."""
        if self.span.is_recording():
            self.span.set_attributes(feedback_attributes(value, "Request.feedback()"))
        else:
            _feedback(self.request_id, value)

    def mark_retried(self, retried: bool = True) -> None:
        """Mark this request as retried by its user."""
        if self.span.is_recording() and isinstance(retried, bool):
            self.span.set_attribute(semconv.RETRIED, retried)
        else:
            _mark_retried(self.request_id, retried)

    def expect(self, **checks: Any) -> None:
        """Attach expectations (see :func:`spanguard.expect`) to this request."""
        if self.span.is_recording():
            self.span.set_attributes(expectation_attributes(checks, "Request.expect()"))
        else:
            _expect(self.request_id, **checks)


def _set_text(span: Span, key: str, mime_key: str, value: Any) -> None:
    if not span.is_recording() or value is None:
        return
    set_content(span, key, value)
    if span.is_recording():
        span.set_attribute(mime_key, _TEXT if isinstance(value, str) else _JSON)


def current_request() -> Request | None:
    """The request open in the current context, if any."""
    value = otel_context.get_value(_REQUEST_KEY)
    return value if isinstance(value, Request) else None


def _identity(seed_id: Any, variant_id: Any, assignments: Any, repeat: Any
              ) -> dict[str, AttributeValue]:
    where = "spanguard.request()"
    attributes: dict[str, AttributeValue] = {}
    for key, value in ((semconv.SEED_ID, seed_id), (semconv.VARIANT_ID, variant_id)):
        if value is None:
            continue
        if isinstance(value, str):
            attributes[key] = value
        else:
            warn_dropped_field(where, key, f"it must be a string, not {type(value).__name__}")
    if assignments is not None:
        if not isinstance(assignments, Mapping):
            warn_dropped_field(where, "assignments", "it must be a mapping of strings")
        else:
            for attr, value in assignments.items():
                if isinstance(attr, str) and isinstance(value, str):
                    attributes[semconv.assignment_key(attr)] = value
                else:
                    warn_dropped_field(where, semconv.assignment_key(str(attr)),
                                       "assignment names and values must be strings")
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat >= 0:
        attributes[semconv.REPEAT] = repeat
    else:
        warn_dropped_field(where, semconv.REPEAT, "it must be a non-negative integer")
        attributes[semconv.REPEAT] = 0
    return attributes


class RequestScope:
    """What ``spanguard.request(...)`` returns: a context manager and a decorator."""

    def __init__(self, name: str, *, request_id: str | None, seed_id: str | None,
                 variant_id: str | None, assignments: Mapping[str, str] | None, repeat: int,
                 input: Any, kind: SpanKind) -> None:
        self._name = name if isinstance(name, str) and name else "agent"
        self._request_id = request_id
        self._identity = (seed_id, variant_id, assignments, repeat)
        self._input = input
        self._kind = kind
        self._state: list[tuple[Request, object | None, bool]] = []

    def _fresh(self) -> RequestScope:
        seed_id, variant_id, assignments, repeat = self._identity
        return RequestScope(self._name, request_id=self._request_id, seed_id=seed_id,
                            variant_id=variant_id, assignments=assignments, repeat=repeat,
                            input=self._input, kind=self._kind)

    def _open(self) -> Request:
        outer = current_request()
        seed_id, variant_id, assignments, repeat = self._identity
        if outer is not None:  # join the request already open
            if outer.span.is_recording():
                given = {k: v for k, v in (("seed", seed_id), ("variant", variant_id),
                                           ("assign", assignments)) if v is not None}
                if given or repeat:
                    outer.span.set_attributes(_identity(seed_id, variant_id, assignments,
                                                        repeat))
            self._state.append((outer, None, False))
            return outer
        request_id = self._request_id
        if request_id is None or not isinstance(request_id, str) or not request_id:
            request_id = uuid.uuid4().hex
        span: Span = INVALID_SPAN
        tracer = active_tracer()
        if tracer is not None:
            try:
                attributes: dict[str, AttributeValue] = {
                    semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
                    semconv.GEN_AI_AGENT_NAME: self._name,
                    semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_AGENT,
                    semconv.REQUEST_ID: request_id,
                    **_identity(seed_id, variant_id, assignments, repeat),
                }
                span = tracer.start_span(
                    semconv.span_name(semconv.OP_INVOKE_AGENT, self._name), kind=self._kind,
                    attributes=attributes)
            except Exception as exc:
                internal_error("spanguard.request()", exc)
                span = INVALID_SPAN
        handle = Request(request_id, span)
        ctx: Context = otel_context.set_value(_REQUEST_KEY, handle,
                                              trace.set_span_in_context(span))
        token = otel_context.attach(ctx)
        self._state.append((handle, token, True))
        if self._input is not None:
            handle.set_input(self._input)
        return handle

    def _close(self, exc: BaseException | None) -> None:
        handle, token, owner = self._state.pop()
        if not owner:
            return
        otel_context.detach(cast(Any, token))
        if exc is not None:
            end_with_error(handle.span, exc)
        else:
            handle.span.end()

    def __enter__(self) -> Request:
        return self._open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._close(exc)

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` is one request (input: its first string
        argument; output: its return value; both only with content capture on)."""
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self._fresh() as handle:
                    _auto_input(handle, args)
                    result = await fn(*args, **kwargs)
                    handle.set_output(result)
                    return result
            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._fresh() as handle:
                _auto_input(handle, args)
                result = fn(*args, **kwargs)
                handle.set_output(result)
                return result
        return cast(F, wrapper)


def _auto_input(handle: Request, args: tuple[Any, ...]) -> None:
    for arg in args:
        if isinstance(arg, str):
            handle.set_input(arg)
            return


@overload
def request(name: F, /) -> F: ...
@overload
def request(name: str = "agent", *, request_id: str | None = None, seed_id: str | None = None,
            variant_id: str | None = None, assignments: Mapping[str, str] | None = None,
            repeat: int = 0, input: Any = None, kind: SpanKind = SpanKind.INTERNAL
            ) -> RequestScope: ...
def request(name: Any = "agent", *, request_id: str | None = None, seed_id: str | None = None,
            variant_id: str | None = None, assignments: Mapping[str, str] | None = None,
            repeat: int = 0, input: Any = None, kind: SpanKind = SpanKind.INTERNAL) -> Any:
    """Open one agent request (the root span ``invoke_agent {name}``).

    ``with spanguard.request("support", seed_id="s1", variant_id="s1-a",
    assignments={"gender": "female"}) as req: ...`` or ``@spanguard.request("support")``.
    """
    if callable(name):
        return RequestScope(getattr(name, "__name__", "agent"), request_id=None, seed_id=None,
                            variant_id=None, assignments=None, repeat=0, input=None,
                            kind=SpanKind.INTERNAL)(name)
    return RequestScope(name, request_id=request_id, seed_id=seed_id, variant_id=variant_id,
                        assignments=assignments, repeat=repeat, input=input, kind=kind)
