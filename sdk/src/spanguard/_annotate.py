"""Feedback, retry marks and expectations, attached to a request by its id.

Each call emits a short ``spanguard.annotate`` span in a trace of its own that carries the
request id; the processor merges it into the request's trace whenever it arrives. The same keys
may also be set on a still-open request span (see :class:`spanguard.Request`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from . import semconv
from ._content import redact_text
from ._runtime import active_tracer, internal_error, now_ns, warn_dropped_field

__all__ = ["expect", "expectation_attributes", "feedback", "feedback_attributes", "mark_retried"]

FeedbackValue = str | int | float | bool
_INT_CHECKS = ("min_chars", "max_chars")
_LIST_CHECKS = ("contains", "not_contains")


def feedback_attributes(value: Any, where: str) -> dict[str, AttributeValue]:
    """``{spanguard.feedback: value}``, or nothing (with a warning) for a wrong-typed value."""
    if isinstance(value, str):
        redacted = redact_text(semconv.FEEDBACK, value)
        return {} if redacted is None else {semconv.FEEDBACK: redacted}
    if isinstance(value, int | float | bool):
        return {semconv.FEEDBACK: value}
    warn_dropped_field(
        where,
        semconv.FEEDBACK,
        f"feedback must be a string, number or bool, not {type(value).__name__}",
    )
    return {}


def _check_value(check: str, value: Any) -> AttributeValue | None:
    """The attribute value of one check, or ``None`` when its type is wrong."""
    if check in _INT_CHECKS:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        return None
    if check == "regex":
        if not isinstance(value, str):
            return None
        try:
            re.compile(value)
        except re.error:
            return None
        return value
    if check in _LIST_CHECKS:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        return None
    if check == "json":
        return value if isinstance(value, bool) else None
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


_CHECK_HELP = {
    "min_chars": "a non-negative integer",
    "max_chars": "a non-negative integer",
    "regex": "a valid regular expression string",
    "contains": "a string or list of strings",
    "not_contains": "a string or list of strings",
    "json": "a bool",
}


def expectation_attributes(checks: Mapping[str, Any], where: str) -> dict[str, AttributeValue]:
    """``spanguard.expect.<check>`` attributes; wrong-typed checks dropped with a warning."""
    attributes: dict[str, AttributeValue] = {}
    for check, value in checks.items():
        encoded = _check_value(check, value)
        if encoded is None:
            need = _CHECK_HELP.get(check, "JSON-serialisable")
            warn_dropped_field(where, semconv.expect_key(check), f"it must be {need}")
            continue
        attributes[semconv.expect_key(check)] = encoded
    return attributes


def _annotate(request_id: Any, attributes: dict[str, AttributeValue], where: str) -> None:
    if not isinstance(request_id, str) or not request_id:
        warn_dropped_field(
            where,
            semconv.REQUEST_ID,
            "a request id must be a non-empty string; nothing was recorded",
        )
        return
    if not attributes:
        return
    tracer = active_tracer()
    if tracer is None:
        return
    try:
        # an empty Context: the annotation is the root of a trace of its own
        span = tracer.start_span(
            semconv.SPAN_ANNOTATION,
            context=Context(),
            attributes={semconv.REQUEST_ID: request_id, **attributes},
            start_time=now_ns(),
        )
        span.end(now_ns())
    except Exception as exc:
        internal_error(where, exc)


def feedback(request_id: str, value: FeedbackValue) -> None:
    """Attach user feedback (a string, number or bool) to the request ``request_id``."""
    _annotate(request_id, feedback_attributes(value, "feedback()"), "feedback()")


def mark_retried(request_id: str, retried: bool = True) -> None:
    """Mark the request ``request_id`` as retried by its user (a regression signal)."""
    if not isinstance(retried, bool):
        warn_dropped_field("mark_retried()", semconv.RETRIED, "it must be a bool")
        return
    _annotate(request_id, {semconv.RETRIED: retried}, "mark_retried()")


def expect(request_id: str, **checks: Any) -> None:
    """Attach expectations (``min_chars``, ``max_chars``, ``regex``, ``contains``,
    ``not_contains``, ``json``, or any other JSON value) to the request ``request_id``."""
    _annotate(request_id, expectation_attributes(checks, "expect()"), "expect()")
