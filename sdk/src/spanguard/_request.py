"""The agent request: the root span of one answer, with its counterfactual identity.

``spanguard.request(...)`` is both a context manager (yielding a :class:`Request` handle) and a
decorator. A request opened while another is current joins it (no second root), so a test
harness may open the request with the counterfactual identity and the app's own decorated
entry point simply adds to it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextvars import ContextVar
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
from ._content import redact_text, set_content
from ._instrument import SpanSpec, check_callable, end_with_error, instrument
from ._runtime import active_tracer, internal_error, now_ns, warn_dropped_field

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
        if isinstance(value, str):
            redacted = redact_text(semconv.metadata_key(name), value)
            if redacted is not None:
                self.span.set_attribute(semconv.metadata_key(name), redacted)
        elif isinstance(value, bool | int | float):
            self.span.set_attribute(semconv.metadata_key(name), value)
        else:
            warn_dropped_field(
                "Request.set_metadata()",
                semconv.metadata_key(name),
                "it must be a string, number or bool",
            )

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
    if set_content(span, key, value):
        span.set_attribute(mime_key, _TEXT if isinstance(value, str) else _JSON)


def current_request() -> Request | None:
    """The request open in the current context, if any."""
    value = otel_context.get_value(_REQUEST_KEY)
    return value if isinstance(value, Request) else None


def _identity(
    seed_id: Any, variant_id: Any, assignments: Any, repeat: Any
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
                    warn_dropped_field(
                        where,
                        semconv.assignment_key(str(attr)),
                        "assignment names and values must be strings",
                    )
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat >= 0:
        attributes[semconv.REPEAT] = repeat
    else:
        warn_dropped_field(where, semconv.REPEAT, "it must be a non-negative integer")
        attributes[semconv.REPEAT] = 0
    return attributes


_USAGE = (
    'spanguard.request opens a request: use "with spanguard.request("agent") as req:", '
    '@spanguard.request, @spanguard.request("agent") or @spanguard.request(name="agent")'
)

# The scopes entered in the current thread or task, innermost last: (scope, handle, token).
# Kept per context, not on the scope object, so one scope may be entered from many threads
# and tasks at once; a token of None marks an entry that joined an outer request.
_Entry = tuple["RequestScope", Request, object | None]
_ENTRIES: ContextVar[tuple[_Entry, ...]] = ContextVar("spanguard_request_entries", default=())


def _join(ctx: Context, identity: dict[str, AttributeValue], repeat: int) -> Request | None:
    """The request open in ``ctx``, with the inner request's explicit identity added to it."""
    outer = otel_context.get_value(_REQUEST_KEY, ctx)
    if not isinstance(outer, Request):
        return None
    if outer.span.is_recording():
        # only what the inner request states explicitly; a default repeat of 0 must not
        # overwrite the outer request's repeat
        joined = dict(identity)
        if repeat == 0:
            joined.pop(semconv.REPEAT, None)
        outer.span.set_attributes(joined)
    return outer


class RequestScope:
    """What ``spanguard.request(...)`` returns: a context manager and a decorator.

    One scope object may be entered from many threads and tasks at once (each entry's state
    lives in the context of the thread or task that entered it)."""

    def __init__(
        self,
        name: str,
        *,
        request_id: str | None,
        seed_id: str | None,
        variant_id: str | None,
        assignments: Mapping[str, str] | None,
        repeat: int,
        input: Any,
        kind: SpanKind,
    ) -> None:
        self._name = name if isinstance(name, str) and name else "agent"
        self._request_id = request_id if isinstance(request_id, str) and request_id else None
        self._identity = _identity(seed_id, variant_id, assignments, repeat)
        self._repeat = repeat
        self._input = input
        self._kind = kind

    def _new_id(self) -> str:
        return self._request_id or uuid.uuid4().hex

    def _root_attributes(self) -> dict[str, AttributeValue]:
        return {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.GEN_AI_PROVIDER_NAME: semconv.AGENT_PROVIDER,
            semconv.GEN_AI_AGENT_NAME: self._name,
            semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_AGENT,
            **self._identity,
        }

    def _open(self) -> Request:
        outer = _join(otel_context.get_current(), self._identity, self._repeat)
        if outer is not None:  # join the request already open
            _ENTRIES.set((*_ENTRIES.get(), (self, outer, None)))
            return outer
        request_id = self._new_id()
        span: Span = INVALID_SPAN
        tracer = active_tracer()
        if tracer is not None:
            try:
                span = tracer.start_span(
                    semconv.span_name(semconv.OP_INVOKE_AGENT, self._name),
                    kind=self._kind,
                    attributes={**self._root_attributes(), semconv.REQUEST_ID: request_id},
                    start_time=now_ns(),
                )
            except Exception as exc:
                internal_error("spanguard.request()", exc)
                span = INVALID_SPAN
        handle = Request(request_id, span)
        ctx: Context = otel_context.set_value(_REQUEST_KEY, handle, trace.set_span_in_context(span))
        token = otel_context.attach(ctx)
        _ENTRIES.set((*_ENTRIES.get(), (self, handle, token)))
        if self._input is not None:
            handle.set_input(self._input)
        return handle

    def _close(self, exc: BaseException | None) -> None:
        entries = _ENTRIES.get()
        for index in range(len(entries) - 1, -1, -1):
            if entries[index][0] is self:
                break
        else:  # exited in a context it was not entered in: nothing of ours to undo here
            internal_error(
                "spanguard.request() exit",
                RuntimeError(
                    "the request scope was exited in another thread or task than it was entered"
                ),
            )
            return
        _, handle, token = entries[index]
        _ENTRIES.set(entries[:index] + entries[index + 1 :])
        if token is None:
            return
        otel_context.detach(cast(Any, token))
        if exc is not None:
            end_with_error(handle.span, exc)
        else:
            handle.span.end(now_ns())

    def _spec(self) -> SpanSpec:
        """The decorator's span: a new root, or the current request joined."""
        identity, repeat = self._identity, self._repeat

        def join(ctx: Context) -> Span | None:
            outer = _join(ctx, identity, repeat)
            return outer.span if outer is not None else None

        def on_start(span: Span, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            _auto_input(Request("", span), args)

        def on_result(span: Span, result: Any) -> None:
            Request("", span).set_output(result)

        def on_context(ctx: Context, span: Span) -> Context:
            handle = Request(self._new_id(), span)
            if span.is_recording():
                span.set_attribute(semconv.REQUEST_ID, handle.request_id)
            return otel_context.set_value(_REQUEST_KEY, handle, ctx)

        return SpanSpec(
            semconv.span_name(semconv.OP_INVOKE_AGENT, self._name),
            self._root_attributes(),
            kind=self._kind,
            on_start=on_start,
            on_result=on_result,
            on_context=on_context,
            where=f"request '{self._name}'",
            join=join,
            without_tracer=True,
        )

    def __enter__(self) -> Request:
        return self._open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close(exc)

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` is one request, or joins the request already
        open (input: its first string argument; output: its return value; both only with
        content capture on). Functions, coroutines, generators and async generators alike:
        a generator's request covers the whole iteration (see :mod:`spanguard._instrument`)."""
        check_callable(fn, _USAGE)
        return instrument(fn, self._spec())


def _auto_input(handle: Request, args: tuple[Any, ...]) -> None:
    for arg in args:
        if isinstance(arg, str):
            handle.set_input(arg)
            return


@overload
def request(name: F, /) -> F: ...
@overload
def request(
    name: str = "agent",
    *,
    request_id: str | None = None,
    seed_id: str | None = None,
    variant_id: str | None = None,
    assignments: Mapping[str, str] | None = None,
    repeat: int = 0,
    input: Any = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> RequestScope: ...
def request(
    name: Any = "agent",
    *,
    request_id: str | None = None,
    seed_id: str | None = None,
    variant_id: str | None = None,
    assignments: Mapping[str, str] | None = None,
    repeat: int = 0,
    input: Any = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> Any:
    """Open one agent request (the root span ``invoke_agent {name}``).

    ``with spanguard.request("support", seed_id="s1", variant_id="s1-a",
    assignments={"gender": "female"}) as req: ...``, ``@spanguard.request``,
    ``@spanguard.request("support")`` or ``@spanguard.request(name="support")``.
    """
    if callable(name) and not isinstance(name, str):
        return RequestScope(
            getattr(name, "__name__", "agent"),
            request_id=None,
            seed_id=None,
            variant_id=None,
            assignments=None,
            repeat=0,
            input=None,
            kind=SpanKind.INTERNAL,
        )(name)
    if not isinstance(name, str):
        raise TypeError(f"{_USAGE} (the name must be a string, not {type(name).__name__}).")
    return RequestScope(
        name,
        request_id=request_id,
        seed_id=seed_id,
        variant_id=variant_id,
        assignments=assignments,
        repeat=repeat,
        input=input,
        kind=kind,
    )
