"""The replay's cost and power before the first app call (``cases plan``; the replay harness
prints the same): how many app calls a replay of the cases K times makes, and the smallest
change each of ``check``'s metrics can detect at that size.

The smallest detectable change (80 % power, one-sided α) of a metric averaged over n cases with
K repeats a version is (t(n−1, 1−α) + z(0.8)) · √(2σ²/(K·n)), σ² the variance of one repeat
on the metric's scale (p(1 − p) for a rate, p its production share from C1 ``held``/``of``,
else the worst case ¼; 1 for a count; for latency and cost the log
spread from the cases' recorded baseline (C1 ``baseline``), else 0.3) and no spread between
cases assumed. A single case is checked against its own repeats: a 0/1 property that flips in
every repeat (K/K → 0/K) is caught at Fisher's p = 1/C(2K, K), which must clear α over the
Holm family (taken as :data:`FAMILY` tests).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import hypergeom, norm
from scipy.stats import t as student_t

from ..case import Case
from .measures import PROPERTY, Tolerances, property_kind
from .paired import POWER
from .rules import TIMING_CHECKS

__all__ = ["FAMILY", "MetricPlan", "ReplayPlan", "plan_lines", "plan_replay"]

#: The Holm family size assumed for a single case's test (metrics × cases that moved).
FAMILY = 20
#: The log spread of latency and cost assumed when no case records its baseline.
DEFAULT_LOG_SPREAD = 0.3


@dataclass(frozen=True)
class MetricPlan:
    metric: str
    smallest: float  # the smallest detectable change, on the metric's scale
    tolerance: float
    unit: str  # "pts" | "count" | "ratio"
    #: for a rate: the pooled repeats suffice for the exact bound to show it unchanged within
    #: the tolerance when no repeat misbehaves (a rate near 0 or 1)
    exact_pass: bool = False

    @property
    def below_tolerance(self) -> bool:
        """The design can show this metric within its tolerance (PASS) when it is unchanged."""
        return self.smallest < self.tolerance


@dataclass(frozen=True)
class ReplayPlan:
    cases: int
    repeats: int
    app_calls: int  # per version replayed
    metrics: tuple[MetricPlan, ...]
    case_flip_caught: int | None  # the fewest of K repeats that must flip in one case


def _mde(variance: float, cases: int, repeats: int, alpha: float) -> float:
    if cases < 2:
        return math.inf
    z = float(student_t.ppf(1.0 - alpha, cases - 1) + norm.ppf(POWER))
    return z * math.sqrt(2.0 * variance / (repeats * cases))


def _log_spread(cases: Sequence[Case], key: str) -> float:
    """The log spread of a timing from the cases' recorded baselines (median and p95)."""
    spreads = []
    for case in cases:
        base = case_baseline(case, key)
        if base is not None:
            median, p95 = base
            if median > 0 and p95 > median:
                spreads.append(math.log(p95 / median) / 1.645)
    return sorted(spreads)[len(spreads) // 2] if spreads else DEFAULT_LOG_SPREAD


def case_baseline(case: Case, key: str) -> tuple[float, float] | None:
    """A case's recorded (median, p95) of ``latency_ms``/``cost_usd`` (C1 ``baseline``), if any."""
    raw: object = getattr(case, "baseline", None)
    if not isinstance(raw, Mapping):
        return None
    entry = raw.get(key)
    if not isinstance(entry, Mapping):
        return None
    median, p95 = entry.get("median"), entry.get("p95")
    if isinstance(median, int | float) and isinstance(p95, int | float):
        return float(median), float(p95)
    return None


def _rate(name: str, mde: float, tolerance: float, pooled: int, alpha: float) -> MetricPlan:
    """A rate's plan; the exact bound of the pooled repeats needs ln(α/2)/ln(1 − τ) of them
    with none misbehaving (Clopper–Pearson at α/2 a side)."""
    needed = math.log(alpha / 2) / math.log(1.0 - tolerance) if 0 < tolerance < 1 else math.inf
    return MetricPlan(name, mde, tolerance, "pts", pooled >= needed)


def _property_rates(cases: Sequence[Case]) -> dict[str, tuple[int, float]]:
    """Per property kind (the metric ``check`` decides): the cases carrying it and the mean
    variance p(1 − p) of one repeat, p the lowest production share (C1 ``held``/``of``; ½
    when unrecorded) of the case's properties of that kind."""
    found: dict[str, list[float]] = {}
    for case in cases:
        shares: dict[str, float] = {}
        for prop in case.properties:
            p = prop.held / prop.of if prop.of > 0 else 0.5
            kind = property_kind(prop.check)
            if kind not in TIMING_CHECKS:  # shown by check, never gated: latency gates timing
                shares[kind] = min(p, shares.get(kind, 1.0))
        for kind, p in shares.items():
            found.setdefault(kind, []).append(max(p * (1 - p), 0.01))
    return {kind: (len(v), sum(v) / len(v)) for kind, v in found.items()}


def _flip_caught(repeats: int, alpha: float) -> int | None:
    """The fewest repeats (of K) that must flip in one case for its Fisher test to clear
    α/FAMILY, the case holding the property in all K baseline repeats."""
    for flipped in range(1, repeats + 1):
        p = float(hypergeom.sf(flipped - 1, 2 * repeats, flipped, repeats))
        if p <= alpha / FAMILY:
            return flipped
    return None


def plan_replay(
    cases: Sequence[Case], repeats: int, alpha: float = 0.05, tolerances: Tolerances | None = None
) -> ReplayPlan:
    """The replay's size and each metric's smallest detectable change."""
    tol = tolerances or Tolerances()
    n = len(cases)
    rate = _mde(0.25, n, repeats, alpha)
    rows = [_rate("pass_rate", rate, tol.pass_rate, n * repeats, alpha)]
    for kind, (carrying, variance) in _property_rates(cases).items():
        mde = _mde(variance, carrying, repeats, alpha)
        rows.append(_rate(f"{PROPERTY}{kind}", mde, tol.rate, carrying * repeats, alpha))
    rows += [
        _rate(name, rate, tol.rate, n * repeats, alpha)
        for name in ("escalation_rate", "refusal_rate", "retry_rate")
    ]
    count = _mde(1.0, n, repeats, alpha)
    rows += [MetricPlan(name, count, tol.count, "count") for name in ("tool_count", "plan_steps")]
    for name, key in (("latency", "latency_ms"), ("cost", "cost_usd")):
        spread = _log_spread(cases, key)
        ratio = math.exp(_mde(spread * spread * math.pi / 2, n, repeats, alpha))
        rows.append(MetricPlan(name, ratio, tol.ratio, "ratio"))
    return ReplayPlan(n, repeats, n * repeats, tuple(rows), _flip_caught(repeats, alpha))


def _shown(value: float, unit: str) -> str:
    if math.isinf(value):
        return "–"
    if unit == "pts":
        return f"{value * 100:.1f} pts"
    if unit == "ratio":
        return f"×{value:.2f}"
    return f"{value:.2f}"


def plan_lines(plan: ReplayPlan) -> list[str]:
    """The plan as text: the call count, then a table of metrics."""
    lines = [
        f"replay: {plan.cases} case(s) × {plan.repeats} repeat(s) = {plan.app_calls} app "
        "call(s) per version (baseline and candidate: twice that)",
    ]
    if plan.case_flip_caught is not None:
        lines.append(
            f"a single case is shown worse when a 0/1 property it always had flips in "
            f"{plan.case_flip_caught} of its {plan.repeats} repeats"
        )
    else:
        lines.append(f"a single case cannot be shown worse on its own with {plan.repeats} repeats")
    lines += [
        "",
        "| Metric | Smallest detectable change | Tolerance | Can PASS |",
        "| --- | --- | --- | --- |",
    ]
    for m in plan.metrics:
        ok = (
            "yes"
            if m.below_tolerance
            else "if it stays near 0 or 1 (exact bound)"
            if m.exact_pass
            else "no: more cases or repeats"
        )
        lines.append(
            f"| {m.metric} | {_shown(m.smallest, m.unit)} | {_shown(m.tolerance, m.unit)} | {ok} |"
        )
    return lines
