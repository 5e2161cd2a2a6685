"""The one JSON parser every command reads input with (re-exported by :mod:`.jsonio`), and the
one way a message names what a parsed value was."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import orjson

__all__ = ["MAX_JSON_BYTES", "kind_of", "parse_json"]

_CONSTANTS = ("NaN", "Infinity", "-Infinity")
MAX_JSON_BYTES = 1 << 30  # one JSON document (a line of a JSONL file, or a whole file)


def parse_json(
    data: str | bytes, *, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
) -> Any:
    """Parse one JSON document; raises ``json.JSONDecodeError`` for anything that is not one.

    ``object_pairs_hook`` (e.g. to refuse duplicate keys) runs over a document orjson has
    already accepted, so the standard parser it needs never meets a hostile one.
    """
    if len(data) > MAX_JSON_BYTES:
        raise json.JSONDecodeError(
            f"the document is larger than the limit of {MAX_JSON_BYTES} bytes", "", 0
        )
    try:
        value = orjson.loads(data)  # orjson.JSONDecodeError is a json.JSONDecodeError
    except orjson.JSONDecodeError as exc:
        text = exc.doc if isinstance(exc.doc, str) else str(exc.doc)
        token = next((t for t in _CONSTANTS if text.startswith(t, exc.pos)), None)
        if token is None:
            raise
        raise json.JSONDecodeError(f"{token} is not a number JSON allows", text, exc.pos) from None
    if object_pairs_hook is None:
        return value
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise json.JSONDecodeError("the document is nested too deeply", text, 0) from None


def kind_of(value: object) -> str:
    """What a parsed JSON or YAML value is, for a message: "got an empty list." """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
