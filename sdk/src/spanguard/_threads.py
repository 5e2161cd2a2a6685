"""OpenTelemetry context into ``ThreadPoolExecutor`` tasks: opt-in per user, reversible.

A task submitted to a thread pool runs in a worker thread that does not inherit the submitter's
context, so its spans would lose their parent request. While propagation is on,
``ThreadPoolExecutor.submit`` attaches the submitter's *OpenTelemetry* context around each task
(and nothing else: the app's own context variables behave as without spanguard) — what
``opentelemetry-instrumentation-threading`` does for thread pools. When that instrumentor has
already wrapped ``submit``, spanguard leaves it alone.

Each user (``configure()``, a ``testing.SpanCapture``) acquires propagation and releases it;
when the last one releases, the original ``submit`` is put back.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from opentelemetry import context as otel_context

from ._state import STATE

__all__ = ["acquire_thread_propagation", "propagating", "release_thread_propagation"]


def _in_context(ctx: otel_context.Context, fn: Callable[..., Any]) -> Callable[..., Any]:
    def task(*args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(ctx)
        try:
            return fn(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return task


def _submit(
    self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> Future[Any]:
    if STATE.propagating:
        fn = _in_context(otel_context.get_current(), fn)
    replaced = STATE.replaced_submit
    assert replaced is not None
    return replaced(self, fn, *args, **kwargs)


def _instrumented_elsewhere(submit: Any) -> bool:
    # opentelemetry-instrumentation-threading (a wrapt wrapper) or another wrapper is in place
    return submit is not _submit and hasattr(submit, "__wrapped__")


def acquire_thread_propagation() -> None:
    """One more user wants context in thread pools; patches ``submit`` for the first one."""
    with STATE.lock:
        STATE.thread_users += 1
        if STATE.replaced_submit is not None:  # ours is in place (maybe under another wrapper)
            STATE.propagating = True
            return
        current = ThreadPoolExecutor.__dict__["submit"]
        if not _instrumented_elsewhere(current):
            STATE.replaced_submit = current
            STATE.propagating = True
            ThreadPoolExecutor.submit = _submit  # type: ignore[method-assign,assignment]


def release_thread_propagation() -> None:
    """One user is done; the last one puts the original ``submit`` back."""
    with STATE.lock:
        if STATE.thread_users == 0:
            return
        STATE.thread_users -= 1
        if STATE.thread_users:
            return
        STATE.propagating = False
        replaced = STATE.replaced_submit
        if replaced is not None and ThreadPoolExecutor.__dict__["submit"] is _submit:
            ThreadPoolExecutor.submit = replaced  # type: ignore[method-assign]
            STATE.replaced_submit = None
        # else another wrapper sits on top of ours: ours stays, passing tasks through as-is


def propagating() -> bool:
    """Whether spanguard currently carries context into ``ThreadPoolExecutor`` tasks."""
    return STATE.propagating
