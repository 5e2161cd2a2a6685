"""Wrap a function, coroutine, generator or async generator in a span.

The kind of wrapper is chosen once, at decoration time. Every wrapper:

* resolves the tracer at call time and calls the function directly when there is none;
* attaches the span's context only around the app's own code and detaches it in the same
  frame, so no "Failed to detach context" error can happen, even when a generator is resumed
  from another thread or task, or closed by the garbage collector;
* records the app's exception on the span and re-raises it unchanged;
* sends its own failures to :func:`internal_error` (logged once, never reaching the app).

Generators get their span at the first ``next()``, parented on the context of the call that
created them; the span ends on exhaustion, ``close()``/``aclose()``, an error, or collection.

A spec with a ``join`` hook (the request decorator) may join a span that is already open instead
of starting one: the call then runs under the current context, its hooks see the joined span,
and the span is left for its owner to end.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from contextvars import Token
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

from ._errors import record_error
from ._runtime import active_tracer, internal_error, now_ns

__all__ = ["SpanSpec", "check_callable", "decorator", "end_with_error", "instrument", "start_span"]

F = TypeVar("F", bound=Callable[..., Any])

StartHook = Callable[[Span, tuple[Any, ...], dict[str, Any]], None]
ResultHook = Callable[[Span, Any], None]
ContextHook = Callable[[Context, Span], Context]
JoinHook = Callable[[Context], "Span | None"]


@dataclass(frozen=True)
class SpanSpec:
    """Everything about a span that is known at decoration time."""

    name: str
    attributes: Mapping[str, AttributeValue]
    kind: SpanKind = SpanKind.INTERNAL
    on_start: StartHook | None = None
    on_result: ResultHook | None = None
    # adds spanguard values (e.g. "this is a retrieval span") to the span's context
    on_context: ContextHook | None = None
    where: str = field(default="a decorated call")
    # returns a span already open in the given context to join instead of starting one
    join: JoinHook | None = None
    # run the hooks (with a non-recording span) even when no tracer is set
    without_tracer: bool = False


def start_span(
    tracer: Tracer | None,
    spec: SpanSpec,
    parent: Context | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[Span, Context, bool]:
    """Start ``spec``'s span under ``parent`` (the current context when ``None``), or join the
    span its ``join`` hook finds; the flag says whether the caller owns (and must end) it."""
    if spec.join is not None:
        joined = spec.join(otel_context.get_current() if parent is None else parent)
        if joined is not None:
            _run_start_hook(spec, joined, args, kwargs)
            return joined, otel_context.get_current() if parent is None else parent, False
    span: Span = INVALID_SPAN
    if tracer is not None:
        span = tracer.start_span(
            spec.name,
            context=parent,
            kind=spec.kind,
            attributes=spec.attributes,
            start_time=now_ns(),
        )
    _run_start_hook(spec, span, args, kwargs)
    ctx = trace.set_span_in_context(span, parent)
    if spec.on_context is not None:
        ctx = spec.on_context(ctx, span)
    return span, ctx, True


def _run_start_hook(
    spec: SpanSpec, span: Span, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    if spec.on_start is not None:
        try:
            spec.on_start(span, args, kwargs)
        except Exception as internal:  # keep the span: only the extra attributes are lost
            internal_error(spec.where, internal)


def _fail(span: Span, owned: bool, exc: BaseException) -> None:
    if owned:  # a joined span records the error when its owner's scope ends
        end_with_error(span, exc)


def end_with_error(span: Span, exc: BaseException) -> None:
    """Record the app's exception on ``span`` and end it (never raises an internal error)."""
    try:
        record_error(span, exc)  # the message only with content capture on, redacted
        span.end(now_ns())
    except Exception as internal:
        internal_error("recording an exception", internal)


def _end_ok(span: Span, spec: SpanSpec, result: Any, owned: bool = True) -> None:
    try:
        if spec.on_result is not None:
            spec.on_result(span, result)
    except Exception as internal:
        internal_error(spec.where, internal)
    if not owned:
        return
    try:
        span.end(now_ns())
    except Exception as internal:
        internal_error("ending a span", internal)


_Call = tuple[Span, Token[Context], bool]  # the span, the context's token, whether it is ours


def _enter(
    tracer: Tracer | None, spec: SpanSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> _Call | None:
    """Start the call's span and make it current; ``None``: spanguard failed (logged once,
    never raised to the app), so call ``fn`` plainly."""
    try:
        span, ctx, owned = start_span(tracer, spec, None, args, kwargs)
        return span, otel_context.attach(ctx), owned
    except Exception as internal:
        internal_error(spec.where, internal)
        return None


def _leave(call: _Call, spec: SpanSpec, result: Any, exc: BaseException | None) -> None:
    """End the call's span with its result, or with the exception it raised."""
    span, token, owned = call
    otel_context.detach(token)
    if exc is not None:
        _fail(span, owned, exc)
    else:
        _end_ok(span, spec, result, owned)


def _sync(fn: Callable[..., Any], spec: SpanSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracer = active_tracer()
        if tracer is None and not spec.without_tracer:  # unconfigured: the fast path
            return fn(*args, **kwargs)
        call = _enter(tracer, spec, args, kwargs)
        if call is None:
            return fn(*args, **kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            _leave(call, spec, None, exc)
            raise
        _leave(call, spec, result, None)
        return result

    return wrapper


def _coroutine(fn: Callable[..., Any], spec: SpanSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracer = active_tracer()
        if tracer is None and not spec.without_tracer:  # unconfigured: the fast path
            return await fn(*args, **kwargs)
        call = _enter(tracer, spec, args, kwargs)
        if call is None:
            return await fn(*args, **kwargs)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:
            _leave(call, spec, None, exc)
            raise
        _leave(call, spec, result, None)
        return result

    return wrapper


_Traced = Callable[
    [Tracer | None, SpanSpec, Callable[..., Any], tuple[Any, ...], dict[str, Any], Context], Any
]


def _run_in(ctx: Context, step: Callable[[Any], Any], arg: Any) -> Any:
    token = otel_context.attach(ctx)
    try:
        return step(arg)
    finally:
        otel_context.detach(token)


def _traced_generator(
    tracer: Tracer | None,
    spec: SpanSpec,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    parent: Context,
) -> Generator[Any, Any, Any]:
    try:
        span, ctx, owned = start_span(tracer, spec, parent, args, kwargs)
    except Exception as internal:
        internal_error(spec.where, internal)
        return (yield from fn(*args, **kwargs))
    gen: Generator[Any, Any, Any] | None = None
    try:
        gen = _run_in(ctx, lambda _: fn(*args, **kwargs), None)
        step: Callable[[Any], Any] = gen.send
        arg: Any = None
        while True:
            try:
                item = _run_in(ctx, step, arg)
            except StopIteration as stop:
                result = stop.value
                break
            try:
                arg = yield item
                step = gen.send
            except GeneratorExit:
                raise
            except BaseException as thrown:  # gen.throw() from the consumer
                step, arg = gen.throw, thrown
    except GeneratorExit:
        try:
            if gen is not None:
                _run_in(ctx, lambda _: gen.close(), None)
        except BaseException as exc:
            _fail(span, owned, exc)
            raise
        _end_ok(span, spec, None, owned)
        raise
    except BaseException as exc:
        _fail(span, owned, exc)
        raise
    _end_ok(span, spec, result, owned)
    return result


async def _traced_async_generator(
    tracer: Tracer | None,
    spec: SpanSpec,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    parent: Context,
) -> AsyncGenerator[Any, Any]:
    try:
        span, ctx, owned = start_span(tracer, spec, parent, args, kwargs)
    except Exception as internal:
        internal_error(spec.where, internal)
        async for item in fn(*args, **kwargs):
            yield item
        return
    agen: AsyncGenerator[Any, Any] | None = None
    try:
        agen = _run_in(ctx, lambda _: fn(*args, **kwargs), None)
        assert agen is not None
        step: Callable[[Any], Any] = agen.asend
        arg: Any = None
        while True:
            token = otel_context.attach(ctx)
            try:
                item = await step(arg)
            except StopAsyncIteration:
                break
            finally:
                otel_context.detach(token)
            try:
                arg = yield item
                step = agen.asend
            except GeneratorExit:
                raise
            except BaseException as thrown:  # agen.athrow() from the consumer
                step, arg = agen.athrow, thrown
    except GeneratorExit:
        try:
            if agen is not None:
                token = otel_context.attach(ctx)
                try:
                    await agen.aclose()
                finally:
                    otel_context.detach(token)
        except BaseException as exc:
            _fail(span, owned, exc)
            raise
        _end_ok(span, spec, None, owned)
        raise
    except BaseException as exc:
        _fail(span, owned, exc)
        raise
    _end_ok(span, spec, None, owned)


def _iteration(fn: Callable[..., Any], spec: SpanSpec, traced: _Traced) -> Callable[..., Any]:
    """A generator function's (or an async one's) wrapper: the span covers the iteration
    (``traced``), not the call that makes the generator."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracer = active_tracer()
        if tracer is None and not spec.without_tracer:
            return fn(*args, **kwargs)
        return traced(tracer, spec, fn, args, kwargs, otel_context.get_current())

    return wrapper


def instrument(fn: F, spec: SpanSpec) -> F:
    """``fn`` wrapped so that each call (or iteration) is covered by ``spec``'s span."""
    if inspect.isasyncgenfunction(fn):
        return cast(F, _iteration(fn, spec, _traced_async_generator))
    if inspect.isgeneratorfunction(fn):
        return cast(F, _iteration(fn, spec, _traced_generator))
    if inspect.iscoroutinefunction(fn):
        return cast(F, _coroutine(fn, spec))
    return cast(F, _sync(fn, spec))


def check_callable(fn: Any, usage: str) -> None:
    """A ``TypeError`` with a usage hint when a decorator is applied to a non-callable."""
    if not callable(fn):
        raise TypeError(f"{usage} (it was given {type(fn).__name__} {fn!r:.60}).")


def decorator(
    first: Any, name: Any, build: Callable[[Callable[..., Any], str | None], SpanSpec], usage: str
) -> Any:
    """The one shape of every spanguard decorator: ``@api``, ``@api("name")`` or
    ``@api(name="name")``. ``build(fn, name)`` gives the span spec; ``usage`` is the hint of
    the ``TypeError`` raised for a non-callable target or a non-string name."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{usage} (name= must be a string, not {type(name).__name__}).")
    if first is None or isinstance(first, str):  # @api(), @api("name"), @api(name="name")
        if first is not None and name is not None and first != name:
            raise TypeError(f"{usage} (the name was given twice: {first!r} and name={name!r}).")
        chosen = first or name or None

        def decorate(fn: F) -> F:
            check_callable(fn, usage)
            return instrument(fn, build(fn, chosen))

        return decorate
    check_callable(first, usage)  # @api on something that is neither a name nor a function
    return instrument(first, build(first, name or None))
