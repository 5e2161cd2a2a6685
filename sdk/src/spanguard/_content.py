"""Content (prompt, response, tool arguments, document text): capture switch, redaction, bounds.

Content is recorded only when capture is on. Every captured value is first turned into its
JSON-ready form (:func:`jsonable`: dataclasses, pydantic-style models, bytes, enums, dates and
sets become plain data; anything else its ``str``), and then the redaction hook sees every string
in it, dict keys included. What the hook returns is exactly what is exported, so nothing
unredacted reaches an exporter. Size bounds never cut a JSON value in the middle: structured
values are shrunk leaf by leaf and re-encoded, so what lands on the span always parses.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import math
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span

from . import semconv
from ._events import content_on_span, hold_content
from ._runtime import content_settings, internal_error, warn_dropped_field
from ._state import ContentSettings

__all__ = [
    "bounded_json",
    "bounded_text",
    "jsonable",
    "prepare_content",
    "redact_text",
    "set_content",
]

_ELLIPSIS = "…"


def bounded_text(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` cut to ``max_chars`` characters; the flag says whether it was cut."""
    if len(text) <= max_chars:
        return text, False
    return text[: max(0, max_chars - 1)] + _ELLIPSIS, True


def _dumps(value: Any) -> str:
    # no default=: the value is JSON-ready already (see jsonable), so what the redactor saw is
    # exactly what is encoded
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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


class _Circular(ValueError):
    """The value contains itself."""


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a broken __str__ must not break the app
        return f"<{type(value).__name__}>"


def _bytes_text(value: bytes | bytearray | memoryview) -> str:
    raw = bytes(value)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(raw).decode("ascii")


def _model_data(value: Any) -> Any:
    """A pydantic-style model's data (``model_dump``; ``dict`` for pydantic v1), or ``None``."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except TypeError:  # a model_dump without mode=
            return dump()
    legacy = getattr(value, "dict", None)
    if callable(legacy) and hasattr(value, "__fields__") and not isinstance(value, type):
        return legacy()
    return None


def jsonable(value: Any, _path: frozenset[int] = frozenset()) -> Any:
    """``value`` as JSON-ready data: ``None``, bools, ints, finite floats, strings, lists and
    string-keyed dicts only. Containers, dataclasses and models are walked; bytes are decoded
    (UTF-8, else ``base64:…``); enums give their value; dates their ISO form; sets a sorted
    list; anything else its ``str``. Raises ``ValueError`` when the value contains itself."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_text(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value, _path)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    marker = id(value)
    if marker in _path:
        raise _Circular("the value contains itself")
    inner = _path | {marker}
    if isinstance(value, Mapping):
        return {_key(k): jsonable(v, inner) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, inner) for v in value]
    if isinstance(value, set | frozenset):
        items = [jsonable(v, inner) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: jsonable(getattr(value, f.name, None), inner) for f in dataclasses.fields(value)
        }
    data = _model_data(value)
    if data is not None:
        return jsonable(data, inner)
    return _text(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return _bytes_text(key)
    plain = jsonable(key)
    return plain if isinstance(plain, str) else json.dumps(plain)


def _redact(value: Any, key: str, settings: ContentSettings) -> Any:
    """Every string of the JSON-ready ``value`` through the redactor, dict keys included (an
    entry whose key the redactor drops is left out)."""
    redact = settings.redact
    if redact is None:
        return value
    if isinstance(value, str):
        return redact(key, value)
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for name, item in value.items():
            redacted_name = redact(key, name)
            if redacted_name is not None:
                result[redacted_name] = _redact(item, key, settings)
        return result
    if isinstance(value, list):
        return [_redact(v, key, settings) for v in value]
    return value


def redact_text(key: str, text: str) -> str | None:
    """Free text the SDK records whether or not content capture is on (plan steps, escalation
    reasons, friction points, feedback, metadata, exception details) through the configured
    redactor; ``None`` when it drops the text, returns a non-string or fails (a failing
    redactor must never leak the unredacted text)."""
    redact = content_settings().redact
    if redact is None:
        return text
    try:
        redacted = redact(key, text)
    except Exception as exc:
        internal_error("the redaction hook", exc)
        return None
    return redacted if isinstance(redacted, str) else None


def prepare_content(key: str, value: Any) -> tuple[str, bool] | None:
    """The text to record under ``key`` and whether it was cut; ``None`` when capture is off
    or redaction removed it. Strings stay plain text; anything else becomes bounded JSON.
    """
    settings = content_settings()
    if not settings.capture or value is None:
        return None
    try:
        plain = jsonable(value)
    except (_Circular, RecursionError):  # e.g. a circular reference
        warn_dropped_field(
            "content capture", key, "the value cannot be encoded as JSON (it contains itself)"
        )
        return None
    try:
        redacted = _redact(plain, key, settings)
    except Exception as exc:  # a failing redactor must never leak the unredacted text
        internal_error("the redaction hook", exc)
        return None
    if redacted is None:
        return None
    if isinstance(value, str) and isinstance(redacted, str):
        return bounded_text(redacted, settings.max_chars)
    return bounded_json(redacted, settings.max_chars)


def set_content(span: Span, key: str, value: Any) -> bool:
    """Put content on ``span`` under ``key`` if capture is on (redacted and bounded);
    ``True`` when something was recorded."""
    prepared = prepare_content(key, value)
    if prepared is None:
        return False
    text, truncated = prepared
    if truncated:
        span.set_attribute(semconv.CONTENT_TRUNCATED, True)
    hold_content(span, key, text)  # for the span's content event, in an event mode
    if content_on_span():
        span.set_attribute(key, text)
    return True
