"""``expect`` blocks (a trace's own, or a human annotation) and the checks they become."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..case import Check

__all__ = ["ANNOTATABLE_KEYS", "checks_from_expect", "validate_expect"]

#: Keys an annotation may set. trace2eval 0.5.1 rejects ``required``; we accept it so an
#: annotation can ask for JSON keys.
ANNOTATABLE_KEYS = frozenset(
    {
        "not_fallback",
        "min_chars",
        "max_chars",
        "regex",
        "contains",
        "not_contains",
        "json",
        "required",
    }
)


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
        if key in {"min_chars", "max_chars"} and not _whole(value):
            return key, f"expected a whole number of characters, got {value!r}."
        if key == "regex" and not isinstance(value, str):
            return key, f"expected a regular expression string, got {value!r}."
        if key in {"contains", "not_contains", "required"}:
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(item, str | int | float) for item in items):
                return key, f"expected a string or a list of strings, got {value!r}."
    return None


def checks_from_expect(expect: Mapping[str, object]) -> list[Check]:
    """Translate an ``expect`` block into checks (trace2eval's order and shapes)."""
    checks: list[Check] = []
    for key, value in expect.items():
        if key in {"json", "required"} or value is False or value is None:
            continue
        if key == "not_fallback":
            checks.append(Check.of(key))
        elif key in {"min_chars", "max_chars", "regex"}:
            checks.append(Check.of(key, value=value))
        elif key in {"contains", "not_contains"}:
            checks.append(Check.of(key, value=value if isinstance(value, list) else [value]))
    if expect.get("json"):
        required = expect.get("required")
        if required:
            checks.append(Check.of("json", required=required if isinstance(required, list)
                                   else [required]))
        else:
            checks.append(Check.of("json"))
    return checks
