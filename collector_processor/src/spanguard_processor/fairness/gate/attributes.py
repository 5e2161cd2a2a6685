"""A metric's verdict from its protected attributes' verdicts (several attributes).

Each attribute's result is decided like a metric (its p-value in the run's Holm family, its
own upper bound); the metric then FAILs when some attribute FAILs, PASSes when every attribute
PASSes, and is INCONCLUSIVE otherwise. The metric shows the figures of the attribute that
decides it: the failing one with the smallest Holm p, else the open (or, all passing, the
widest) one with the largest upper bound; its reason names that attribute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from .results import MetricResult, Verdict

__all__ = ["deciding", "from_attributes"]


def _upper(r: MetricResult) -> float:
    return math.inf if r.confidence_interval is None else r.confidence_interval[1]


def deciding(attributes: Sequence[MetricResult]) -> MetricResult:
    """The attribute whose result decides the metric's verdict."""
    failed = [a for a in attributes if a.verdict == Verdict.FAIL]
    if failed:
        return min(failed, key=lambda a: (a.p_holm if a.p_holm is not None else 1.0, a.attribute))
    open_ = [a for a in attributes if a.verdict != Verdict.PASS] or list(attributes)
    return max(open_, key=lambda a: (_upper(a), a.attribute))


def from_attributes(metric: MetricResult, attributes: Sequence[MetricResult]) -> MetricResult:
    """``metric`` decided from its (already decided) ``attributes``."""
    top = deciding(attributes)
    details = dict(metric.details)
    if "upper_bound" in top.details:
        details["upper_bound"] = top.details["upper_bound"]
    return replace(
        metric,
        attributes=tuple(attributes),
        verdict=top.verdict,
        passed=all(a.verdict == Verdict.PASS for a in attributes),
        reason=top.reason,
        reason_text=f"{top.attribute}: {top.reason_text}",
        confidence_interval=top.confidence_interval,
        p_value=top.p_value,
        p_method=top.p_method,
        p_threshold=top.p_threshold,
        p_holm=top.p_holm,
        p_bh=top.p_bh,
        mde=top.mde,
        seeds=top.seeds,
        seeds_needed=top.seeds_needed,
        worst_case_variance=top.worst_case_variance,
        details=details,
        warnings=tuple(f"{a.attribute}: {w}" for a in attributes for w in a.warnings),
    )
