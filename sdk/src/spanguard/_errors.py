"""The app's exceptions on spans: type and code location always, the message and full stack
trace only with content capture on — through the redactor.

An exception's message is the app's text (it often quotes the input: ``no account for
ann@example.com``), so it is treated as content: with capture off the ``exception`` event
keeps ``exception.type`` and a stack trace of code locations only (``File "app.py", line 12, in
lookup`` per frame, no source lines, no message), and the span status is the type name. With
capture on, ``exception.message``, the full ``exception.stacktrace`` and the status description
pass through the configured redactor (under those keys) first; text it drops is left out.
"""

from __future__ import annotations

import traceback

from opentelemetry.trace import Span, Status, StatusCode

from ._content import redact_text
from ._runtime import content_settings, now_ns
from .semconv import ERROR_TYPE, EXCEPTION_MESSAGE, EXCEPTION_STACKTRACE, EXCEPTION_TYPE

__all__ = [
    "ERROR_TYPE",
    "EXCEPTION_MESSAGE",
    "EXCEPTION_STACKTRACE",
    "EXCEPTION_TYPE",
    "record_error",
]

_EXCEPTION_EVENT = "exception"


def _locations(exc: BaseException) -> str:
    """The frames of ``exc``'s traceback as code locations only (no source text, no message)."""
    lines = ["Traceback (most recent call last):"]
    for frame in traceback.extract_tb(exc.__traceback__):
        lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
    lines.append(_qualified(exc))
    return "\n".join(lines)


def _qualified(exc: BaseException) -> str:
    kind = type(exc)
    module = kind.__module__
    return (
        kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"
    )


def record_error(span: Span, exc: BaseException) -> None:
    """Record ``exc`` on ``span``: an ``exception`` event, ``error.type`` and an ERROR status."""
    name = type(exc).__qualname__
    attributes: dict[str, str] = {EXCEPTION_TYPE: _qualified(exc)}
    message: str | None = None
    if content_settings().capture:
        message = redact_text(EXCEPTION_MESSAGE, str(exc))
        stack = redact_text(EXCEPTION_STACKTRACE, "".join(traceback.format_exception(exc)))
        if message is not None:
            attributes[EXCEPTION_MESSAGE] = message
    else:
        stack = _locations(exc)
    if stack is not None:
        attributes[EXCEPTION_STACKTRACE] = stack
    if isinstance(exc, Exception):
        span.add_event(_EXCEPTION_EVENT, attributes, now_ns())
    span.set_attribute(ERROR_TYPE, name)
    span.set_status(Status(StatusCode.ERROR, f"{name}: {message}" if message else name))
