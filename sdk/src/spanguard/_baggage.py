"""Counterfactual identity carried in OpenTelemetry baggage, copied onto spans.

An app (or an upstream service) may set the request's identity as ``spanguard.*`` baggage —
``spanguard.seed_id``, ``spanguard.variant_id``, ``spanguard.repeat`` and
``spanguard.assignment.<attr>`` — instead of passing it to ``spanguard.request``. Baggage is
not exported with spans, so :class:`BaggageIdentity`, which :func:`spanguard.configure` adds to
the provider it exports through, copies those entries onto every span as it starts (never
over a value the span already has). Spans made by other instrumentations (a genai-openai model
call, a framework's agent span) then carry the identity, whichever span is the request's root.
"""

from __future__ import annotations

from opentelemetry import baggage
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from . import semconv

__all__ = ["BaggageIdentity", "identity_key"]

_KEYS = (semconv.SEED_ID, semconv.VARIANT_ID, semconv.REPEAT)


def identity_key(key: str) -> bool:
    """Whether a baggage key is one of spanguard's identity keys."""
    return key in _KEYS or (
        key.startswith(semconv.ASSIGNMENT_PREFIX) and len(key) > len(semconv.ASSIGNMENT_PREFIX)
    )


class BaggageIdentity(SpanProcessor):
    """Copies ``spanguard.*`` identity baggage onto each span at its start."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        entries = baggage.get_all(parent_context)
        if not entries:
            return
        present = span.attributes or {}
        for key, value in entries.items():
            if identity_key(key) and key not in present and isinstance(value, str):
                if key == semconv.REPEAT:
                    if value.isdigit():
                        span.set_attribute(key, int(value))
                else:
                    span.set_attribute(key, value)

    def on_end(self, span: ReadableSpan) -> None:
        return None

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
