"""Content (prompt, response, tool arguments, document text): capture switch, redaction, bounds.

Content is recorded only when capture is on. The redaction hook sees every text value before it
is put on a span, so nothing unredacted reaches an exporter. Size bounds never cut a JSON value
in the middle: structured values are shrunk leaf by leaf and re-encoded, so what lands on the
span always parses.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Span

from . import semconv
from ._runtime import ContentSettings, content_settings, internal_error

__all__ = ["bounded_json", "bounded_text", "prepare_content", "set_content"]

_ELLIPSIS = "…"


def bounded_text(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` cut to ``max_chars`` characters; the flag says whether it was cut."""
    if len(text) <= max_chars:
        return text, False
    return text[: max(0, max_chars - 1)] + _ELLIPSIS, True


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _shrink(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= cap else value[:cap] + _ELLIPSIS
    if isinstance(value, dict):
        return {str(k): _shrink(v, cap) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_shrink(v, cap) for v in value[: max(1, cap)]]
        return [*items, _ELLIPSIS] if len(value) > max(1, cap) else items
    return value


def bounded_json(value: Any, max_chars: int) -> tuple[str, bool]:
    """``value`` as JSON text of at most ``max_chars`` characters that still parses.

    Long strings are cut and long lists shortened, halving the cap until the text fits; the
    last resort is the JSON string ``"…"``. The flag says whether anything was cut.
    """
    text = _dumps(value)
    if len(text) <= max_chars:
        return text, False
    cap = max_chars
    while cap > 1:
        cap //= 2
        text = _dumps(_shrink(value, cap))
        if len(text) <= max_chars:
            return text, True
    return _dumps(_ELLIPSIS), True


def _redact_leaves(value: Any, key: str, settings: ContentSettings) -> Any:
    redact = settings.redact
    if redact is None:
        return value
    if isinstance(value, str):
        return redact(key, value)
    if isinstance(value, dict):
        return {str(k): _redact_leaves(v, key, settings) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_leaves(v, key, settings) for v in value]
    return value


def prepare_content(key: str, value: Any) -> tuple[str, bool] | None:
    """The text to record under ``key`` and whether it was cut; ``None`` when capture is off
    or redaction removed it. Strings stay plain text; anything else becomes bounded JSON.
    """
    settings = content_settings()
    if not settings.capture or value is None:
        return None
    try:
        redacted = _redact_leaves(value, key, settings)
    except Exception as exc:  # a failing redactor must never leak the unredacted text
        internal_error("the redaction hook", exc)
        return None
    if redacted is None:
        return None
    if isinstance(redacted, str):
        return bounded_text(redacted, settings.max_chars)
    return bounded_json(redacted, settings.max_chars)


def set_content(span: Span, key: str, value: Any) -> None:
    """Put content on ``span`` under ``key`` if capture is on (redacted and bounded)."""
    prepared = prepare_content(key, value)
    if prepared is None:
        return
    text, truncated = prepared
    if truncated:
        span.set_attribute(semconv.CONTENT_TRUNCATED, True)
    span.set_attribute(key, text)
