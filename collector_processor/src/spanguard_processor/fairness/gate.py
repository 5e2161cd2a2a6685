"""The gate: turning estimates and p-values into verdicts.

Modes (``GateConfig.mode``):

* ``default`` — tests H0: gap ≤ threshold. A lower-is-better metric fails only when the data
  show its gap **exceeds the threshold**: the gate's p-value (the larger of the one-sided
  threshold test's and the "any difference" permutation test's), Holm-adjusted across the
  run's metrics, is below ``alpha``. A true gap at or under the threshold fails at most
  ``alpha`` of the time at any suite size.
* ``point`` — fairtrace's verdict: the gap against the threshold, nothing else.
* ``upper-bound`` — tests H0: gap ≥ threshold: passes only when the interval's upper bound is
  under the threshold (the app is *shown* fair).

``counterfactual_stability`` has no noise model (a fair agent that answers at random scores
low), so it is report-only in ``default`` and ``upper-bound``; ``point`` keeps fairtrace's
verdict. In ``default`` and ``upper-bound``, a metric whose coverage (the share of a group's
variants holding a valid record) is under ``min_coverage`` for some group, or whose
missingness depends on the group (within-seed permutation test, in the Holm family), fails
unless ``allow_partial``. In every mode, a metric with fewer than two groups holding data is
"insufficient_data", which does not pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .config import GATE_MODES, GateConfig
from .results import MetricResult
from .stats import benjamini_hochberg, holm

__all__ = ["GATE_MODES", "GateConfig", "apply_gate"]


def _point(r: MetricResult) -> bool:
    if r.direction == "higher":
        return r.score >= r.threshold
    return r.score <= r.threshold


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


@dataclass(frozen=True)
class _Decision:
    passed: bool
    reason: str
    text: str


def _power_note(r: MetricResult) -> str:
    if r.mde is None:
        return ""
    note = f"; MDE {_f(r.mde)}" if math.isfinite(r.mde) else "; MDE beyond the scale"
    if r.worst_case_variance:
        note += " at worst-case variance"
    return note


def _coverage(r: MetricResult, cfg: GateConfig, alpha_missing: bool) -> _Decision | None:
    if cfg.allow_partial or cfg.mode == "point" or not r.coverage:
        return None
    group, low = min(r.coverage.items(), key=lambda kv: (kv[1], kv[0]))
    if low < cfg.min_coverage:
        return _Decision(False, "insufficient_coverage",
                         f"not enough coverage: {group} has {low:.0%} of its variants "
                         f"(< {cfg.min_coverage:.0%})")
    if alpha_missing:
        return _Decision(False, "missingness_depends_on_group",
                         f"missingness depends on the group (Holm p = {_f(r.p_missing)})")
    return None


def _decide(r: MetricResult, cfg: GateConfig) -> _Decision:
    if cfg.mode == "point":
        ok = _point(r)
        return _Decision(ok, "point", ("within" if ok else "beyond")
                         + f" threshold (point estimate {r.score:.4g} vs {r.threshold:g})")
    if r.direction == "higher":  # counterfactual_stability
        return _Decision(True, "report_only",
                         "report-only: no noise model for stability (`mode=point` applies "
                         "the threshold)")
    ci = r.confidence_interval
    if cfg.mode == "upper-bound":
        if ci is None:
            return _Decision(_point(r), "no_interval", "no interval; the point estimate decided")
        if ci[1] <= r.threshold:
            return _Decision(True, "shown_within_threshold",
                             f"shown within threshold: upper bound ≤ {r.threshold:g}")
        return _Decision(False, "not_shown_within_threshold",
                         f"not shown within threshold: upper bound > {r.threshold:g}"
                         f"{_power_note(r)}")
    if r.p_holm is None:
        ok = _point(r)
        return _Decision(ok, "point", "no test available; the point estimate decided")
    if r.p_holm < cfg.alpha and r.score > r.threshold:
        shown = ("interval above" if ci is not None and ci[0] > r.threshold
                 else "one-sided test of gap ≤")
        return _Decision(False, "beyond_threshold",
                         f"beyond threshold: {shown} {r.threshold:g}, Holm p = {_f(r.p_holm)}")
    if r.score > r.threshold:
        return _Decision(True, "within_noise",
                         f"within noise: Holm p = {_f(r.p_holm)} ≥ {cfg.alpha:g}"
                         f"{_power_note(r)}")
    if ci is not None and ci[1] <= r.threshold:
        return _Decision(True, "shown_within_threshold",
                         f"within threshold, shown: upper bound ≤ {r.threshold:g}")
    return _Decision(True, "within_threshold",
                     f"within threshold{_power_note(r)}")


def _severity_key(r: MetricResult) -> tuple[bool, float, str]:
    return (r.passed, -r.severity, r.metric)


def _gate_p(r: MetricResult) -> float | None:
    """The gate's p-value: both the threshold test and the permutation test must reject
    (the permutation test is exact under "no difference at all", whatever the suite size)."""
    if r.p_threshold is None or r.p_value is None:
        return r.p_value if r.p_threshold is None else r.p_threshold
    return max(r.p_threshold, r.p_value)


def apply_gate(results: Sequence[MetricResult], cfg: GateConfig) -> list[MetricResult]:
    """Adjust p-values across metrics, decide every verdict, and sort like fairtrace."""
    gate_p = [_gate_p(r) if r.direction == "lower" else None for r in results]
    missing = next((r.p_missing for r in results if r.p_missing is not None), None)
    family = gate_p + ([missing] if missing is not None else [])
    adjusted_holm = holm(family)
    missing_holm = adjusted_holm[-1] if missing is not None else None
    adjusted_bh = benjamini_hochberg([r.p_value for r in results])
    alpha_missing = missing_holm is not None and missing_holm < cfg.alpha
    out = []
    for r, ph, pb in zip(results, adjusted_holm[:len(results)], adjusted_bh, strict=True):
        r = replace(r, p_holm=ph, p_bh=pb,
                    p_missing=missing_holm if r.p_missing is not None else None)
        warnings: list[str] = []
        if r.groups_with_data < 2:
            details = {**r.details, "insufficient_data": True,
                       "reason": "need at least two groups"}
            text = "insufficient data: fewer than two groups hold data for this metric"
            out.append(replace(r, details=details, passed=False, verdict="insufficient_data",
                               reason="insufficient_data", reason_text=text,
                               warnings=("fewer than two groups hold data for this metric; "
                                         "it cannot pass.",)))
            continue
        decision = _coverage(r, cfg, alpha_missing and r.p_missing is not None)
        if decision is None:
            decision = _decide(r, cfg)
        if decision.reason in ("within_noise", "no_interval", "point") and decision.passed \
                and cfg.mode != "point" and r.score > r.threshold:
            warnings.append(f"the gap {r.score:.4g} exceeds the threshold {r.threshold:g} but "
                            f"is within noise (Holm p = {_f(r.p_holm)} ≥ {cfg.alpha:g}).")
        if r.mde is not None and r.direction == "lower" and r.mde > 2 * r.threshold:
            size = (f"only gaps of {r.mde:.4g} or more" if math.isfinite(r.mde)
                    else "no gap on the metric's scale")
            warnings.append(f"underpowered: with 80% power this suite catches {size}, "
                            f"over twice the threshold {r.threshold:g}; add seeds.")
            if decision.passed:
                decision = replace(decision, text=decision.text + " (underpowered)")
        if r.worst_case_variance:
            warnings.append("no variation between seeds was observed (a deterministic app?): "
                            "the interval and MDE assume the worst-case variance for the "
                            "metric's scale.")
        out.append(replace(r, passed=decision.passed,
                           verdict="pass" if decision.passed else "fail",
                           reason=decision.reason, reason_text=decision.text,
                           warnings=tuple(warnings)))
    return sorted(out, key=_severity_key)
