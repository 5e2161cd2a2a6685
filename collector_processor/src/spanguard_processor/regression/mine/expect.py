"""``expect`` blocks (a trace's own, or a human annotation) and the checks they become."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..case import Check
from ..checks import TEXT_CHECK_TYPES, CheckKind

__all__ = ["ANNOTATABLE_KEYS", "REQUIRED", "checks_from_expect", "validate_expect"]

#: The ``expect`` key that lists the JSON keys a ``json`` check requires.
REQUIRED = "required"
#: Keys an annotation may set: a text check kind each, and ``required``. trace2eval 0.5.1
#: rejects ``required``; we accept it so an annotation can ask for JSON keys.
ANNOTATABLE_KEYS = frozenset({*(kind.value for kind in TEXT_CHECK_TYPES), REQUIRED})
_K = CheckKind


def _whole(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        try:
            int(value)
        except ValueError:
            return False
        return True
    return False


def validate_expect(expect: Mapping[str, object]) -> tuple[str, str] | None:
    """(key, message) for the first value trace2eval would crash on, or None when usable."""
    for key, value in expect.items():
        if value is False or value is None:
            continue
        if key in {_K.MIN_CHARS, _K.MAX_CHARS} and not _whole(value):
            return key, f"expected a whole number of characters, got {value!r}."
        if key == _K.REGEX and not isinstance(value, str):
            return key, f"expected a regular expression string, got {value!r}."
        if key in {_K.CONTAINS, _K.NOT_CONTAINS, REQUIRED}:
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(item, str | int | float) for item in items):
                return key, f"expected a string or a list of strings, got {value!r}."
    return None


def checks_from_expect(expect: Mapping[str, object]) -> list[Check]:
    """Translate an ``expect`` block into checks (trace2eval's order and shapes)."""
    checks: list[Check] = []
    for key, value in expect.items():
        if key in {_K.JSON, REQUIRED} or value is False or value is None:
            continue
        if key == _K.NOT_FALLBACK:
            checks.append(Check.of(key))
        elif key in {_K.MIN_CHARS, _K.MAX_CHARS, _K.REGEX}:
            checks.append(Check.of(key, value=value))
        elif key in {_K.CONTAINS, _K.NOT_CONTAINS}:
            checks.append(Check.of(key, value=value if isinstance(value, list) else [value]))
    if expect.get(_K.JSON):
        required = expect.get(REQUIRED)
        if required:
            checks.append(
                Check.of(_K.JSON, required=required if isinstance(required, list) else [required])
            )
        else:
            checks.append(Check.of(_K.JSON))
    return checks
