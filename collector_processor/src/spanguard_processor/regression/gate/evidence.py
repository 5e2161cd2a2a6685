"""What a FAIL shows: one case's baseline-vs-current distribution of a metric, as one line
("case-007 escalated 0/12 → 9/12", "case-003 missing credit_bureau in 12/12")."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ..run.repeats import ERROR, Repeat
from .measures import LATENCY, Measure

__all__ = ["distribution_diff"]


def _share(values: Sequence[float]) -> str:
    return f"{round(sum(values))}/{len(values)}"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _failed(repeats: Sequence[Repeat]) -> str:
    counts = Counter(c for r in repeats for c in r.failed_checks)
    errors = sum(r.outcome == ERROR for r in repeats)
    parts = [f"{check} ×{n}" for check, n in counts.most_common(3)]
    if errors:
        parts.append(f"app error ×{errors}")
    return f" (failed: {', '.join(parts)})" if parts else ""


def _rate_line(
    measure: Measure, case_id: str, base: Sequence[float], cur: Sequence[float], own: str | None
) -> str:
    name = measure.name
    if name.startswith("tool use: "):
        tool = name.removeprefix("tool use: ")
        if sum(cur) == 0:
            return (
                f"{case_id} missing {tool} in {len(cur)}/{len(cur)} "
                f"(baseline called it in {_share(base)})"
            )
        return f"{case_id} calls {tool} {_share(base)} → {_share(cur)}"
    verb = {
        "pass_rate": "passed",
        "escalation_rate": "escalated",
        "refusal_rate": "refused",
        "retry_rate": "retried a tool",
    }.get(name)
    if verb is None:  # a C1 property, named by the case's own values when known
        what = own or name.removeprefix("property: ")
        return f"{case_id} {what} held {_share(base)} → {_share(cur)}"
    return f"{case_id} {verb} {_share(base)} → {_share(cur)}"


def distribution_diff(
    measure: Measure,
    case_id: str,
    base: Sequence[float],
    cur: Sequence[float],
    current_repeats: Sequence[Repeat] = (),
    run_ratio: float | None = None,
    own: str | None = None,
) -> str:
    """One case's change in ``measure``, baseline → current, with the repeats it rests on
    (``own``: a property metric's properties of this case, ``tools_include=credit_bureau``)."""
    if measure.kind == "rate":
        line = _rate_line(measure, case_id, base, cur, own)
        return line + (_failed(current_repeats) if measure.name == "pass_rate" else "")
    if measure.kind == "count":
        return (
            f"{case_id} {measure.name} mean {sum(base) / len(base):.2f} → "
            f"{sum(cur) / len(cur):.2f} (over {len(base)} → {len(cur)} repeats)"
        )
    b, c = _median(base), _median(cur)
    ratio = c / b if b > 0 else math.inf
    unit = (
        (lambda v: f"{v:.0f} ms") if measure.name.startswith(LATENCY) else (lambda v: f"${v:.6f}")
    )
    note = f"; run median ×{run_ratio:.2f}" if run_ratio is not None else ""
    return f"{case_id} {measure.name} median {unit(b)} → {unit(c)} (×{ratio:.2f}{note})"
