"""Deterministic checks: on the output text (trace2eval's vocabulary) and on the trace.

Text checks are pure functions of the output string with trace2eval 0.5.1's semantics and
failure details, except one rule: ``json`` passes only for a JSON object or array, the same
test the ``expected_shape_violated`` signal uses (trace2eval's check accepts ``"42"``).

Trace checks (``trace_checks`` in a case) look at what happened around the output: the
process trace (tools, escalation, plan, friction, retrieved documents) and latency and cost.
A trace check whose evidence is absent from a record is *unverified*, never passed or failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..common._json import parse_json
from .textnorm import detect_fallback

__all__ = [
    "PROCESS_CHECK_TYPES",
    "TEXT_CHECK_TYPES",
    "CheckResult",
    "looks_like_json",
    "run_text_check",
    "run_text_checks",
    "run_trace_check",
]

TEXT_CHECK_TYPES = (
    "not_fallback",
    "min_chars",
    "max_chars",
    "contains",
    "not_contains",
    "regex",
    "json",
)
PROCESS_CHECK_TYPES = (
    "tools_include",
    "tool_sequence",
    "escalated",
    "max_plan_steps",
    "max_friction_points",
    "doc_in_top_k",
)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """``passed`` is None when the evidence the check needs is missing (unverified)."""

    type: str
    passed: bool | None
    detail: str = ""


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


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return [str(value)]


def _json_check(check: dict[str, Any], output: str) -> CheckResult:
    required = _as_list(check.get("required"))
    try:
        payload = parse_json(output)
    except ValueError as exc:
        return CheckResult("json", False, f"invalid JSON: {exc}")
    if not isinstance(payload, dict | list):
        return CheckResult("json", False, "expected a JSON object or array")
    if required:
        if not isinstance(payload, dict):
            return CheckResult("json", False, "expected a JSON object")
        missing = [key for key in required if key not in payload]
        if missing:
            return CheckResult("json", False, f"missing keys {missing}")
    return CheckResult("json", True)


def run_text_check(check: dict[str, Any], output: str) -> CheckResult:
    kind = str(check.get("type", "")).strip()
    if kind == "not_fallback":
        hit = detect_fallback(output)
        return CheckResult(kind, hit is None, f"matched fallback phrase {hit!r}" if hit else "")
    if kind in {"min_chars", "max_chars"}:
        limit = int(check.get("value", 0))
        actual = len(output.strip())
        if kind == "min_chars" and actual < limit:
            return CheckResult(kind, False, f"{actual} chars < {limit}")
        if kind == "max_chars" and actual > limit:
            return CheckResult(kind, False, f"{actual} chars > {limit}")
        return CheckResult(kind, True, f"{actual} chars")
    if kind == "contains":
        missing = [n for n in _as_list(check.get("value")) if n not in output]
        return CheckResult(kind, not missing, f"missing {missing}" if missing else "")
    if kind == "not_contains":
        present = [n for n in _as_list(check.get("value")) if n in output]
        return CheckResult(kind, not present, f"found forbidden {present}" if present else "")
    if kind == "regex":
        pattern = str(check.get("value", ""))
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            return CheckResult(kind, False, f"invalid pattern: {exc}")
        if not compiled.search(output):
            return CheckResult(kind, False, f"no match for {pattern!r}")
        return CheckResult(kind, True)
    if kind == "json":
        return _json_check(check, output)
    return CheckResult(kind, False, f"unsupported check type {kind!r}")


def run_text_checks(checks: list[dict[str, Any]], output: str) -> list[CheckResult]:
    return [run_text_check(check, output) for check in checks]


def _is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(item == step for step in it) for item in needle)


def _process_check(kind: str, check: dict[str, Any], process: dict[str, Any]) -> CheckResult:
    tools = [str(t.get("name")) for t in process.get("tool_calls", [])]
    value = check.get("value")
    if kind == "tools_include":
        missing = [name for name in _as_list(value) if name not in tools]
        return CheckResult(kind, not missing, f"tools not called {missing}" if missing else "")
    if kind == "tool_sequence":
        expected = _as_list(value)
        ok = _is_subsequence(expected, tools)
        return CheckResult(
            kind, ok, "" if ok else f"tool calls {tools} lack the sequence {expected}"
        )
    if kind == "escalated":
        actual = bool(process.get("escalated", False))
        ok = actual == bool(value)
        return CheckResult(kind, ok, "" if ok else f"escalated is {str(actual).lower()}")
    if kind in {"max_plan_steps", "max_friction_points"}:
        field = "plan_steps" if kind == "max_plan_steps" else "friction_points"
        count = len(process.get(field, []))
        ok = count <= int(value or 0)
        return CheckResult(kind, ok, "" if ok else f"{count} {field.replace('_', ' ')} > {value}")
    if kind == "doc_in_top_k":
        k = int(check.get("k", 5))
        ranks = [
            d.get("rank") for d in process.get("retrieved_documents", []) if d.get("id") == value
        ]
        ok = any(isinstance(r, int) and r <= k for r in ranks)
        return CheckResult(kind, ok, "" if ok else f"document {value!r} not in the top {k}")
    return CheckResult(kind, False, f"unsupported check type {kind!r}")


def run_trace_check(check: dict[str, Any], record: dict[str, Any]) -> CheckResult:
    """One trace check against an outputs record (``trace``, ``latency_ms``, ``cost_usd``)."""
    kind = str(check.get("type", "")).strip()
    if kind in {"max_latency_ms", "max_cost_usd"}:
        actual = record.get(kind[4:])
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return CheckResult(kind, None, "no figure recorded")
        limit = float(check.get("value", 0))
        ok = actual <= limit
        return CheckResult(kind, ok, "" if ok else f"{actual:g} > {limit:g}")
    process = record.get("trace")
    if kind in PROCESS_CHECK_TYPES and not isinstance(process, dict):
        return CheckResult(kind, None, "no process trace recorded")
    if kind not in PROCESS_CHECK_TYPES:
        return CheckResult(kind, False, f"unsupported check type {kind!r}")
    assert isinstance(process, dict)
    return _process_check(kind, check, process)
