"""Self-consistency of a mined case: its checks must pass on the clean traffic it came from.

A check mined from traffic must pass on the clean traffic it came from: otherwise replaying the
very agent that produced the traffic fails the case, and the gate cries wolf. Before a case is
written, every mined check is run against the clean traces of its cluster; a ``min_chars`` that
a clean answer falls below is loosened to the shortest clean answer, any other failing check is
left out. Each change is recorded in the case (``adjusted_checks``) with its reason.

Latency and cost limits are learned with the tolerance their data supports
(:func:`~.checks.timing_limit`, the timing kinds' ``learn``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..case import Adjustment, Check, Evidence
from ..checks import CheckKind, run_text_check, run_trace_check
from ..vocabulary import AdjustAction

__all__ = ["make_consistent"]


def _passes(check: Check, run: Evidence, text: bool) -> bool:
    if text:
        return bool(run_text_check(check, run.output).passed)
    return run_trace_check(check, run).passed is not False


def _consistent(
    checks: list[Check], runs: Sequence[Evidence], text: bool
) -> tuple[list[Check], list[Adjustment]]:
    kept: list[Check] = []
    adjusted: list[Adjustment] = []
    for check in checks:
        failing = [r for r in runs if not _passes(check, r, text)]
        if not failing:
            kept.append(check)
            continue
        why = f"{len(failing)} of the {len(runs)} clean trace(s) it was mined from fail it"
        shortest = min(len(r.output.strip()) for r in runs)
        if check.type == CheckKind.MIN_CHARS and shortest >= 1:
            kept.append(check.with_value(shortest))
            adjusted.append(
                Adjustment(
                    check.type,
                    AdjustAction.LOOSENED,
                    f"{why}; lowered to the shortest clean answer",
                    (check.value, shortest),
                )
            )
        else:
            adjusted.append(Adjustment(check.type, AdjustAction.OMITTED, why))
    return kept, adjusted


def make_consistent(
    checks: list[Check], trace_checks: list[Check], runs: Sequence[Evidence]
) -> tuple[list[Check], list[Check], list[Adjustment]]:
    """Checks and trace checks that every clean run passes, and what was changed."""
    if not runs:
        return checks, trace_checks, []
    text, text_changes = _consistent(checks, runs, text=True)
    trace, trace_changes = _consistent(trace_checks, runs, text=False)
    return text, trace, text_changes + trace_changes
