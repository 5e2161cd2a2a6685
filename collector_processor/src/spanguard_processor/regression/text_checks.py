"""The text checks: pure functions of a case's check and an output string.

trace2eval 0.5.1's semantics and failure details, except one rule: ``json`` passes only for a
JSON object or array, the same test the ``expected_shape_violated`` signal uses (trace2eval's
check accepts ``"42"``). The kinds are registered in :mod:`.checks`.
"""

from __future__ import annotations

import re

from ..common._json import parse_json
from .case import Check, CheckResult
from .textnorm import detect_fallback

__all__ = [
    "as_list",
    "contains_check",
    "json_check",
    "looks_like_json",
    "max_chars_check",
    "min_chars_check",
    "not_contains_check",
    "not_fallback_check",
    "regex_check",
    "whole",
]


def looks_like_json(text: str) -> bool:
    """A JSON object or array (after stripping whitespace)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        parse_json(stripped)
    except ValueError:
        return False
    return True


def as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return [str(value)]


def whole(value: object) -> int:
    return int(value)  # type: ignore[call-overload]  # as trace2eval: int("12"), int(12.0)


def not_fallback_check(check: Check, output: str) -> CheckResult:
    hit = detect_fallback(output)
    return CheckResult(check.type, hit is None, f"matched fallback phrase {hit!r}" if hit else "")


def min_chars_check(check: Check, output: str) -> CheckResult:
    limit, actual = whole(check.get("value", 0)), len(output.strip())
    if actual < limit:
        return CheckResult(check.type, False, f"{actual} chars < {limit}")
    return CheckResult(check.type, True, f"{actual} chars")


def max_chars_check(check: Check, output: str) -> CheckResult:
    limit, actual = whole(check.get("value", 0)), len(output.strip())
    if actual > limit:
        return CheckResult(check.type, False, f"{actual} chars > {limit}")
    return CheckResult(check.type, True, f"{actual} chars")


def contains_check(check: Check, output: str) -> CheckResult:
    missing = [n for n in as_list(check.value) if n not in output]
    return CheckResult(check.type, not missing, f"missing {missing}" if missing else "")


def not_contains_check(check: Check, output: str) -> CheckResult:
    present = [n for n in as_list(check.value) if n in output]
    return CheckResult(check.type, not present, f"found forbidden {present}" if present else "")


def regex_check(check: Check, output: str) -> CheckResult:
    pattern = str(check.get("value", ""))
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return CheckResult(check.type, False, f"invalid pattern: {exc}")
    if not compiled.search(output):
        return CheckResult(check.type, False, f"no match for {pattern!r}")
    return CheckResult(check.type, True)


def json_check(check: Check, output: str) -> CheckResult:
    kind = check.type
    required = as_list(check.get("required"))
    try:
        payload = parse_json(output)
    except ValueError as exc:
        return CheckResult(kind, False, f"invalid JSON: {exc}")
    if not isinstance(payload, dict | list):
        return CheckResult(kind, False, "expected a JSON object or array")
    if required:
        if not isinstance(payload, dict):
            return CheckResult(kind, False, "expected a JSON object")
        missing = [key for key in required if key not in payload]
        if missing:
            return CheckResult(kind, False, f"missing keys {missing}")
    return CheckResult(kind, True)
