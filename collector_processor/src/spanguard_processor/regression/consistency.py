"""Self-consistency of a mined case, and timing limits with the tolerance their data supports.

A check mined from traffic must pass on the clean traffic it came from: otherwise replaying the
very agent that produced the traffic fails the case, and the gate cries wolf. Before a case is
written, every mined check is run against the clean traces of its cluster; a ``min_chars`` that
a clean answer falls below is loosened to the shortest clean answer, any other failing check is
left out. Each change is recorded in the case (``adjusted_checks``) with its reason.

Latency and cost limits are noisy quantities: a limit carries the tolerance of that question's
own distribution — :data:`TIMING_MARGIN` × the :data:`TIMING_QUANTILE` quantile of its clean
runs, and never below the slowest of them — and is left out when fewer than
:data:`MIN_TIMING_RUNS` clean runs recorded the figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .checks import run_text_check, run_trace_check
from .signals import percentile
from .vocabulary import AdjustAction

__all__ = [
    "MIN_TIMING_RUNS",
    "TIMING_MARGIN",
    "TIMING_QUANTILE",
    "make_consistent",
    "timing_limit",
]

TIMING_QUANTILE = 0.95
TIMING_MARGIN = 1.5
MIN_TIMING_RUNS = 8

_TIMING_FIELD = {"max_latency_ms": "latency_ms", "max_cost_usd": "cost_usd"}
_DIGITS = {"max_latency_ms": 2, "max_cost_usd": 8}


def timing_limit(
    kind: str, records: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the check, or None) and (the adjustment explaining its absence, or None)."""
    values = [
        float(v)
        for r in records
        if isinstance(v := r.get(_TIMING_FIELD[kind]), int | float) and not isinstance(v, bool)
    ]
    if len(values) < MIN_TIMING_RUNS:
        return None, {
            "type": kind,
            "action": AdjustAction.OMITTED,
            "reason": f"only {len(values)} clean run(s) of this question recorded "
            f"{_TIMING_FIELD[kind]}; a limit needs at least {MIN_TIMING_RUNS} to know its spread",
        }
    quantile = percentile(values, TIMING_QUANTILE)
    assert quantile is not None
    # Never below the slowest clean run: the limit must pass on the traffic it came from.
    scale = 10 ** _DIGITS[kind]
    value = math.ceil(max(quantile * TIMING_MARGIN, max(values)) * scale) / scale
    return {"type": kind, "value": value}, None


def _passes(check: dict[str, Any], record: dict[str, Any], text: bool) -> bool:
    if text:
        return bool(run_text_check(check, str(record.get("output") or "")).passed)
    return run_trace_check(check, record).passed is not False


def _consistent(
    checks: list[dict[str, Any]], records: Sequence[dict[str, Any]], text: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    kept: list[dict[str, Any]] = []
    adjusted: list[dict[str, Any]] = []
    for check in checks:
        failing = [r for r in records if not _passes(check, r, text)]
        if not failing:
            kept.append(check)
            continue
        kind = str(check.get("type", ""))
        why = f"{len(failing)} of the {len(records)} clean trace(s) it was mined from fail it"
        shortest = min(len(str(r.get("output") or "").strip()) for r in records)
        if kind == "min_chars" and shortest >= 1:
            kept.append({**check, "value": shortest})
            adjusted.append({"type": kind, "action": AdjustAction.LOOSENED,
                             "from": check.get("value"), "to": shortest,
                             "reason": f"{why}; lowered to the shortest clean answer"})
        else:
            adjusted.append({"type": kind, "action": AdjustAction.OMITTED, "reason": why})
    return kept, adjusted


def make_consistent(
    checks: list[dict[str, Any]],
    trace_checks: list[dict[str, Any]],
    records: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Checks and trace checks that every clean record passes, and what was changed."""
    if not records:
        return checks, trace_checks, []
    text, text_changes = _consistent(checks, records, text=True)
    trace, trace_changes = _consistent(trace_checks, records, text=False)
    return text, trace, text_changes + trace_changes
