"""Deterministic checks: what a check kind is, and every built-in kind, each spelled once here.

A :class:`CheckType` holds everything the project knows about one kind (``min_chars``,
``tools_include``, ``max_latency_ms`` …): its family, the field of a run it reads, the case-diff
row it explains, how it runs on one run's :class:`Evidence` and, for timing kinds, how its limit
is learned from the clean runs of a question (process kinds are learned, with their share in
the question's traffic, by :mod:`.mine.properties`). :func:`check_type` finds one by name;
:func:`check_types` lists a family in the order cases write them.

Text checks are pure functions of the output string (:mod:`.text_checks`).

Trace checks (``trace_checks`` in a case) look at what happened around the output: the
process trace (tools, escalation, plan, friction, retrieved documents, tool retries), the class
of the answer (:mod:`.outcome`: approve, decline, refer …) and latency and cost.
A trace check whose evidence is absent from a record is *unverified*, never passed or failed.
Timing limits carry the tolerance of their question's own distribution —
:data:`TIMING_MARGIN` × the :data:`TIMING_QUANTILE` quantile of its clean runs, never below the
slowest of them — and are left out when fewer than :data:`MIN_TIMING_RUNS` clean runs recorded
the figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from ..traces.model import ProcessTrace
from .case import Adjustment, Check, CheckResult, Evidence
from .outcome import classify_answer
from .text_checks import (
    as_list,
    contains_check,
    json_check,
    max_chars_check,
    min_chars_check,
    not_contains_check,
    not_fallback_check,
    regex_check,
    whole,
)
from .vocabulary import AdjustAction, SignalName

__all__ = [
    "MIN_TIMING_RUNS",
    "PROCESS_CHECK_TYPES",
    "TEXT_CHECK_TYPES",
    "TIMING_MARGIN",
    "TIMING_QUANTILE",
    "TOP_K",
    "CheckFamily",
    "CheckKind",
    "CheckType",
    "check_type",
    "check_types",
    "percentile",
    "run_text_check",
    "run_text_checks",
    "run_trace_check",
    "timing_limit",
    "tool_retries",
    "without_retries",
]


class CheckFamily(StrEnum):
    """What a check looks at: the output text, the process trace, or latency and cost."""

    TEXT = "text"
    PROCESS = "process"
    TIMING = "timing"


class CheckKind(StrEnum):
    """Every built-in check kind (the ``type`` of a check object)."""

    NOT_FALLBACK = "not_fallback"
    MIN_CHARS = "min_chars"
    MAX_CHARS = "max_chars"
    CONTAINS = "contains"
    NOT_CONTAINS = "not_contains"
    REGEX = "regex"
    JSON = "json"
    TOOLS_INCLUDE = "tools_include"
    TOOL_SEQUENCE = "tool_sequence"
    ESCALATED = "escalated"
    MAX_PLAN_STEPS = "max_plan_steps"
    MAX_FRICTION_POINTS = "max_friction_points"
    DOC_IN_TOP_K = "doc_in_top_k"
    MAX_TOOL_RETRIES = "max_tool_retries"
    ANSWER_CLASS = "answer_class"
    MAX_LATENCY_MS = "max_latency_ms"
    MAX_COST_USD = "max_cost_usd"


#: What a learner returns: the check, an adjustment saying why there is none, or nothing.
Learned: TypeAlias = Check | Adjustment | None


@dataclass(frozen=True)
class CheckType:
    """One check kind. ``field`` is what it reads from a run (``output``, ``tool_calls``,
    ``latency_ms`` …); ``label`` the case-diff row a failure of it points at; ``rounding`` the
    decimals of a learned limit; ``signal`` the log signal that asks for a learned limit."""

    name: CheckKind
    family: CheckFamily
    field: str
    label: str
    run: Callable[[CheckType, Check, Evidence], CheckResult]
    learn: Callable[[CheckType, Sequence[Evidence]], Learned] | None = None
    rounding: int | None = None
    signal: SignalName | None = None


# --- process checks ---------------------------------------------------------------------------

#: A document counts as "retrieved near the top" at this rank or better.
TOP_K = 5


def _tools(process: ProcessTrace) -> list[str]:
    return [call.name for call in process.tool_calls]


def without_retries(tools: Sequence[str]) -> list[str]:
    """The tool calls with each immediate repeat of the same tool (a retry) left out."""
    return [name for i, name in enumerate(tools) if i == 0 or tools[i - 1] != name]


def tool_retries(process: ProcessTrace) -> int:
    """Calls that repeat the tool called just before them (a retry)."""
    tools = _tools(process)
    return len(tools) - len(without_retries(tools))


def _is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(item == step for step in it) for item in needle)


def _tools_include(ct: CheckType, check: Check, p: ProcessTrace) -> CheckResult:
    tools = _tools(p)
    missing = [name for name in as_list(check.value) if name not in tools]
    return CheckResult(check.type, not missing, f"tools not called {missing}" if missing else "")


def _tool_sequence(ct: CheckType, check: Check, p: ProcessTrace) -> CheckResult:
    tools, expected = _tools(p), as_list(check.value)
    ok = _is_subsequence(expected, tools)
    return CheckResult(
        check.type, ok, "" if ok else f"tool calls {tools} lack the sequence {expected}"
    )


def _escalated(ct: CheckType, check: Check, p: ProcessTrace) -> CheckResult:
    ok = p.escalated == bool(check.value)
    return CheckResult(check.type, ok, "" if ok else f"escalated is {str(p.escalated).lower()}")


def _at_most(ct: CheckType, check: Check, p: ProcessTrace) -> CheckResult:
    count = len(getattr(p, ct.field))
    ok = count <= whole(check.value or 0)
    return CheckResult(
        check.type, ok, "" if ok else f"{count} {ct.field.replace('_', ' ')} > {check.value}"
    )


def _max_tool_retries(ct: CheckType, check: Check, p: ProcessTrace) -> CheckResult:
    count = tool_retries(p)
    ok = count <= whole(check.value or 0)
    return CheckResult(check.type, ok, "" if ok else f"{count} tool retries > {check.value}")


def _classify_answer(ct: CheckType, check: Check, e: Evidence) -> CheckResult:
    found = classify_answer(e.output)
    ok = found == str(check.value)
    return CheckResult(check.type, ok, "" if ok else f"answer class is {found!r}")


def _doc_in_top_k(ct: CheckType, check: Check, p: ProcessTrace) -> CheckResult:
    k, value = whole(check.get("k", TOP_K)), check.value
    ranks = [d.rank for d in p.retrieved_documents if d.id == value]
    ok = any(isinstance(r, int) and r <= k for r in ranks)
    return CheckResult(check.type, ok, "" if ok else f"document {value!r} not in the top {k}")


def _on_output(
    run: Callable[[Check, str], CheckResult],
) -> Callable[[CheckType, Check, Evidence], CheckResult]:
    def on_evidence(ct: CheckType, check: Check, e: Evidence) -> CheckResult:
        return run(check, e.output)

    return on_evidence


def _on_process(
    run: Callable[[CheckType, Check, ProcessTrace], CheckResult],
) -> Callable[[CheckType, Check, Evidence], CheckResult]:
    def on_evidence(ct: CheckType, check: Check, e: Evidence) -> CheckResult:
        if e.process is None:
            return CheckResult(check.type, None, "no process trace recorded")
        return run(ct, check, e.process)

    return on_evidence


# --- timing checks ----------------------------------------------------------------------------

TIMING_QUANTILE = 0.95
TIMING_MARGIN = 1.5
MIN_TIMING_RUNS = 8


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Linear interpolation at ``fraction·(n−1)`` over the sorted values."""
    clean = sorted(values)
    if not clean:
        return None
    if len(clean) == 1:
        return clean[0]
    position = fraction * (len(clean) - 1)
    lower = int(position)
    upper = min(lower + 1, len(clean) - 1)
    weight = position - lower
    return clean[lower] * (1 - weight) + clean[upper] * weight


def _figure(ct: CheckType, e: Evidence) -> float | None:
    value = getattr(e, ct.field)
    return value if isinstance(value, float) else None


def _at_most_figure(ct: CheckType, check: Check, e: Evidence) -> CheckResult:
    actual = _figure(ct, e)
    if actual is None:
        return CheckResult(check.type, None, "no figure recorded")
    limit = float(check.get("value", 0))  # type: ignore[arg-type]  # as written in the case
    ok = actual <= limit
    return CheckResult(check.type, ok, "" if ok else f"{actual:g} > {limit:g}")


def _learn_limit(ct: CheckType, evidence: Sequence[Evidence]) -> Learned:
    values = [v for e in evidence if (v := _figure(ct, e)) is not None]
    if len(values) < MIN_TIMING_RUNS:
        return Adjustment(
            ct.name,
            AdjustAction.OMITTED,
            f"only {len(values)} clean run(s) of this question recorded "
            f"{ct.field}; a limit needs at least {MIN_TIMING_RUNS} to know its "
            "spread",
        )
    quantile = percentile(values, TIMING_QUANTILE)
    assert quantile is not None and ct.rounding is not None
    # Never below the slowest clean run: the limit must pass on the traffic it came from.
    scale = 10**ct.rounding
    value = math.ceil(max(quantile * TIMING_MARGIN, max(values)) * scale) / scale
    return Check.of(ct.name, value=value)


# --- the registry -----------------------------------------------------------------------------

_TEXT, _PROCESS, _TIMING = CheckFamily.TEXT, CheckFamily.PROCESS, CheckFamily.TIMING
_BUILT_IN = (
    CheckType(CheckKind.NOT_FALLBACK, _TEXT, "output", "output", _on_output(not_fallback_check)),
    CheckType(CheckKind.MIN_CHARS, _TEXT, "output", "output", _on_output(min_chars_check)),
    CheckType(CheckKind.MAX_CHARS, _TEXT, "output", "output", _on_output(max_chars_check)),
    CheckType(CheckKind.CONTAINS, _TEXT, "output", "output", _on_output(contains_check)),
    CheckType(CheckKind.NOT_CONTAINS, _TEXT, "output", "output", _on_output(not_contains_check)),
    CheckType(CheckKind.REGEX, _TEXT, "output", "output", _on_output(regex_check)),
    CheckType(CheckKind.JSON, _TEXT, "output", "output", _on_output(json_check)),
    CheckType(
        CheckKind.TOOLS_INCLUDE,
        _PROCESS,
        "tool_calls",
        "tool calls",
        _on_process(_tools_include),
    ),
    CheckType(
        CheckKind.TOOL_SEQUENCE,
        _PROCESS,
        "tool_calls",
        "tool calls",
        _on_process(_tool_sequence),
    ),
    CheckType(
        CheckKind.ESCALATED,
        _PROCESS,
        "escalated",
        "escalated",
        _on_process(_escalated),
    ),
    CheckType(
        CheckKind.MAX_PLAN_STEPS,
        _PROCESS,
        "plan_steps",
        "plan steps",
        _on_process(_at_most),
    ),
    CheckType(
        CheckKind.MAX_FRICTION_POINTS,
        _PROCESS,
        "friction_points",
        "friction points",
        _on_process(_at_most),
    ),
    CheckType(
        CheckKind.DOC_IN_TOP_K,
        _PROCESS,
        "retrieved_documents",
        "retrieved documents",
        _on_process(_doc_in_top_k),
    ),
    CheckType(
        CheckKind.MAX_TOOL_RETRIES,
        _PROCESS,
        "tool_calls",
        "tool retries",
        _on_process(_max_tool_retries),
    ),
    CheckType(CheckKind.ANSWER_CLASS, _PROCESS, "output", "answer class", _classify_answer),
    CheckType(
        CheckKind.MAX_LATENCY_MS,
        _TIMING,
        "latency_ms",
        "latency (ms)",
        _at_most_figure,
        _learn_limit,
        rounding=2,
        signal=SignalName.SLOW_RESPONSE,
    ),
    CheckType(
        CheckKind.MAX_COST_USD,
        _TIMING,
        "cost_usd",
        "cost (USD)",
        _at_most_figure,
        _learn_limit,
        rounding=8,
        signal=SignalName.EXPENSIVE_CALL,
    ),
)
_REGISTRY: Mapping[str, CheckType] = {ct.name: ct for ct in _BUILT_IN}

TEXT_CHECK_TYPES = tuple(ct.name for ct in _BUILT_IN if ct.family is _TEXT)
PROCESS_CHECK_TYPES = tuple(ct.name for ct in _BUILT_IN if ct.family is _PROCESS)


def check_type(name: str) -> CheckType | None:
    """The kind called ``name`` (as written in a case), or None for an unknown kind."""
    return _REGISTRY.get(name.strip())


def check_types(*families: CheckFamily) -> tuple[CheckType, ...]:
    """The kinds of ``families`` (all when none is given), in the order cases write them."""
    return tuple(ct for ct in _BUILT_IN if not families or ct.family in families)


def _unsupported(check: Check) -> CheckResult:
    return CheckResult(check.type, False, f"unsupported check type {check.type!r}")


def run_text_check(check: Check, output: str) -> CheckResult:
    """One check of a case's ``checks`` against an output text."""
    ct = check_type(check.type)
    if ct is None or ct.family is not _TEXT:
        return _unsupported(check)
    return ct.run(ct, check, Evidence(output))


def run_text_checks(checks: Sequence[Check], output: str) -> list[CheckResult]:
    return [run_text_check(check, output) for check in checks]


def run_trace_check(check: Check, evidence: Evidence) -> CheckResult:
    """One check of a case's ``trace_checks`` against a run's process, latency and cost."""
    ct = check_type(check.type)
    if ct is None or ct.family is _TEXT:
        return _unsupported(check)
    return ct.run(ct, check, evidence)


def timing_limit(ct: CheckType, evidence: Sequence[Evidence]) -> Check | Adjustment:
    """A timing kind's limit learned from clean runs, or why it was left out."""
    assert ct.learn is not None
    learned = ct.learn(ct, evidence)
    assert learned is not None
    return learned
