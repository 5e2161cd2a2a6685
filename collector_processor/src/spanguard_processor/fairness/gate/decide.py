"""The gate: turning bounds and p-values into one of four verdicts per metric.

Outcomes (docs/fairness.md, "what PASS means"), in the order they are decided:

* **NO_SIGNAL** — no record carries what the metric reads (``signal_records == 0``, counted by
  :mod:`..metrics.signals`; or no variant holds a value at all). Decided before any statistics, in
  every mode; it gates unless the suite marks the metric ``optional: true``.
* **FAIL** — the data show gap > threshold: the one-sided test of H0: gap ≤ τ (the larger of
  the threshold test's and the "any difference" permutation test's p-values), Holm-adjusted
  across the run's metrics, is below ``alpha``.
* **PASS** — the data show gap < threshold: the metric's one-sided 1 − α upper bound (the
  smaller of the studentized simultaneous bound and the exact discordance bound, see
  :mod:`..stats.bounds`) is below τ. PASS claims *every* gating metric is within its threshold, an
  intersection–union test: each metric's own bound at α, no correction across metrics.
* **INCONCLUSIVE** — neither; ``seeds_needed`` says how many seeds would let a fair app PASS.
  Never PASS with fewer than two seeds holding two groups, nor for a count metric whose seeds
  all agree when the suite states no ``max_difference`` (reason ``no_stated_range``: the
  bound would rest on a range read off the sample). When the point estimate and the shown
  (unadjusted) interval both lie beyond τ but the Holm-adjusted test does not reject, the
  reason is ``leans_fail``, and ``--allow-inconclusive`` does not let it through.

Modes (``GateConfig.mode``): ``default`` as above; ``upper-bound`` the same bounds, but
INCONCLUSIVE counts as FAIL (``--allow-inconclusive`` cannot soften it); ``point`` is
fairtrace's verdict (the point estimate against the threshold: PASS or FAIL). A metric whose
coverage is under ``min_coverage`` for some group is INCONCLUSIVE, and one whose missingness
depends on the group (a within-seed permutation test, in the Holm family) FAILs, unless
``allow_partial``. ``counterfactual_stability`` (higher is better) has no noise model, so it
is REPORT_ONLY outside ``point`` mode: shown, never gating, never called PASS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..stats.seeds import benjamini_hochberg, holm
from ..vocabulary import Direction
from .attributes import from_attributes
from .config import GATE_MODES, GateConfig, GateMode
from .results import LEANS_FAIL, MetricResult, Verdict

__all__ = ["GATE_MODES", "LEANS_FAIL", "GateConfig", "apply_gate"]

_ORDER = {
    Verdict.FAIL: 0,
    Verdict.NO_SIGNAL: 1,
    Verdict.INCONCLUSIVE: 2,
    Verdict.PENDING: 3,
    Verdict.PASS: 4,
    Verdict.REPORT_ONLY: 5,
}


def _point(r: MetricResult) -> bool:
    if r.direction == Direction.HIGHER:
        return r.score >= r.threshold
    return r.score <= r.threshold


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


@dataclass(frozen=True)
class _Decision:
    verdict: Verdict
    reason: str
    text: str


def _upper_info(r: MetricResult) -> dict[str, Any]:
    """What bounded the metric's upper end (``details["upper_bound"]``), or ``{}``."""
    info = r.details.get("upper_bound") if isinstance(r.details, dict) else None
    return info if isinstance(info, dict) else {}


def _bound_note(r: MetricResult) -> str:
    """What bounded the upper end: the exact discordance bound or the studentized one."""
    info = _upper_info(r)
    if not info or r.confidence_interval is None:
        return ""
    if info.get("method") == "discordance":
        scale = (
            "" if info.get("range", 1.0) == 1.0 else f" × a stated range of {_f(info.get('range'))}"
        )
        return (
            f" (exact: {info.get('discordant')} of {info.get('seeds')} seeds' variants "
            f"disagree{scale})"
        )
    return ""


def _no_range(r: MetricResult) -> _Decision:
    return _Decision(
        Verdict.INCONCLUSIVE,
        "no_stated_range",
        "inconclusive: every seed shows the same within-seed difference on this count (or a "
        "contrast never varies), and a count "
        "has no range that bounds the templates the suite did not draw; state "
        f"`max_difference` (the largest per-seed difference between groups {r.metric} "
        "can take) under this metric in the suite",
    )


def _leans_fail(r: MetricResult, ci: tuple[float, float], cfg: GateConfig) -> _Decision:
    allowed = "; leans FAIL; not allowed" if cfg.allow_inconclusive else "; leans FAIL"
    return _Decision(
        Verdict.INCONCLUSIVE,
        LEANS_FAIL,
        f"inconclusive{allowed}: the point estimate {r.score:.3g} and the unadjusted "
        f"interval [{ci[0]:.3g}, {ci[1]:.3g}] lie above {r.threshold:g}, but the gate's "
        f"test does not reject (Holm p = {_f(r.p_holm)} ≥ {cfg.alpha:g}: the larger of the "
        f"threshold and permutation tests' p, adjusted across the run's metrics){_need(r)}",
    )


def _need(r: MetricResult) -> str:
    """The advice of an open metric: the seeds for a fair app to pass (sized from an upper
    confidence bound of the noise seen, never fewer than the suite has), the repeats per
    variant in all, and, for a gap leaning FAIL, the seeds that would decide FAIL."""
    if r.seeds_needed is None:
        return ""
    info = _upper_info(r)
    text = ""
    to_fail = info.get("seeds_to_fail")
    if to_fail and r.score > r.threshold:
        text += (
            f"; about {to_fail} seeds (now {r.seeds}) would decide FAIL if the gap is what it shows"
        )
    text += f"; about {r.seeds_needed} seeds (now {r.seeds}) would let a fair app pass"
    exact = info.get("deterministic_seeds")
    if exact:
        text += f" ({exact} if its variants of a template agree)"
    repeats = info.get("repeats_needed")
    if repeats:
        now = info.get("repeats", 1)
        text += (
            f", or {repeats} independent repeats per variant in all (now {now}) if the "
            "app's answers vary from call to call"
        )
    return text


def _coverage(r: MetricResult, cfg: GateConfig, alpha_missing: bool) -> _Decision | None:
    if cfg.allow_partial or cfg.mode == GateMode.POINT or not r.coverage:
        return None
    group, low = min(r.coverage.items(), key=lambda kv: (kv[1], kv[0]))
    if low < cfg.min_coverage:
        return _Decision(
            Verdict.INCONCLUSIVE,
            "insufficient_coverage",
            f"not enough coverage: {group} has {low:.0%} of its variants "
            f"(< {cfg.min_coverage:.0%})",
        )
    if alpha_missing:
        return _Decision(
            Verdict.FAIL,
            "missingness_depends_on_group",
            f"missingness depends on the group (Holm p = {_f(r.p_missing)})",
        )
    return None


def _no_signal(r: MetricResult) -> _Decision | None:
    if r.signal_records == 0 or (
        r.groups_with_data < 2
        and r.units == 0
        and r.signal_records is None
        and r.direction == Direction.LOWER
    ):
        what = r.signal or "what this metric reads"
        text = f"no signal: no record carries {what}"
        if r.diagnosis:
            text += f"; {r.diagnosis}"
        return _Decision(Verdict.NO_SIGNAL, "no_signal", text)
    return None


def _decide(r: MetricResult, cfg: GateConfig) -> _Decision:
    if r.groups_with_data < 2:
        return _Decision(
            Verdict.INCONCLUSIVE,
            "insufficient_data",
            "inconclusive: fewer than two groups hold data for this metric" + _need(r),
        )
    if cfg.mode == GateMode.POINT:
        ok = _point(r)
        return _Decision(
            Verdict.PASS if ok else Verdict.FAIL,
            "point",
            ("within" if ok else "beyond")
            + f" threshold (point estimate {r.score:.4g} vs {r.threshold:g})",
        )
    if r.direction == Direction.HIGHER:  # counterfactual_stability
        return _Decision(
            Verdict.REPORT_ONLY,
            "report_only",
            "report-only: no noise model for stability (`mode=point` applies the threshold)",
        )
    ci = r.confidence_interval
    if r.p_holm is not None and r.p_holm < cfg.alpha and r.score > r.threshold:
        shown = (
            "interval above"
            if ci is not None and ci[0] > r.threshold
            else "one-sided test of gap ≤"
        )
        return _Decision(
            Verdict.FAIL,
            "beyond_threshold",
            f"beyond threshold: {shown} {r.threshold:g}, Holm p = {_f(r.p_holm)}",
        )
    if ci is None:
        return _Decision(
            Verdict.INCONCLUSIVE,
            "no_interval",
            f"inconclusive: no interval for this formula (point estimate "
            f"{r.score:.4g} vs {r.threshold:g}); `mode=point` gives "
            "fairtrace's verdict",
        )
    if r.score > r.threshold and ci[0] > r.threshold:
        return _leans_fail(r, ci, cfg)
    if _upper_info(r).get("needs_range"):
        return _no_range(r)
    if ci[1] < r.threshold and r.seeds < 2:
        return _Decision(
            Verdict.INCONCLUSIVE,
            "too_few_seeds",
            f"inconclusive: fewer than 2 seeds hold two groups, nothing can PASS (upper "
            f"bound {ci[1]:.3g} < {r.threshold:g} from {r.seeds} seed)",
        )
    if ci[1] < r.threshold:
        return _Decision(
            Verdict.PASS,
            "shown_within_threshold",
            f"shown within threshold: upper bound {ci[1]:.3g} < {r.threshold:g}{_bound_note(r)}",
        )
    side = (
        "the gap is above the threshold but within noise"
        if r.score > r.threshold
        else "the data cannot show the gap within the threshold"
    )
    text = (
        f"inconclusive: {side} (upper bound {ci[1]:.3g} ≥ {r.threshold:g}, "
        f"Holm p = {_f(r.p_holm)}){_need(r)}"
    )
    return _Decision(Verdict.INCONCLUSIVE, "not_shown_within_threshold", text)


def _severity_key(r: MetricResult) -> tuple[int, float, str]:
    return (_ORDER.get(Verdict(r.verdict), 3), -r.severity, r.metric)


def _gate_p(r: MetricResult) -> float | None:
    """The gate's p-value: both the threshold test and the permutation test must reject
    (the permutation test is exact under "no difference at all", whatever the suite size)."""
    if r.p_threshold is None or r.p_value is None:
        return r.p_value if r.p_threshold is None else r.p_threshold
    return max(r.p_threshold, r.p_value)


def _warnings(r: MetricResult, d: _Decision, cfg: GateConfig) -> list[str]:
    out: list[str] = []
    if (
        d.verdict in (Verdict.FAIL, Verdict.NO_SIGNAL, Verdict.REPORT_ONLY)
        or cfg.mode == GateMode.POINT
        or r.direction != Direction.LOWER
    ):
        return out
    if r.mde is not None and r.mde > 2 * r.threshold:
        size = (
            f"only gaps of {r.mde:.3g} or more"
            if math.isfinite(r.mde)
            else "no gap on the metric's scale"
        )
        need = f" (about {r.seeds_needed} seeds)" if r.seeds_needed else ""
        out.append(
            f"underpowered: this suite tells apart from zero {size}, over twice "
            f"the threshold {r.threshold:g}; add seeds{need}."
        )
    if r.worst_case_variance and _upper_info(r).get("method") != "discordance":
        out.append(
            "some contrast showed no variation between seeds: the studentized bound "
            "assumes the worst-case variance for the metric's scale."
        )
    return out


def _final(r: MetricResult, d: _Decision, cfg: GateConfig) -> MetricResult:
    verdict = d.verdict
    if cfg.mode == GateMode.UPPER_BOUND and verdict == Verdict.INCONCLUSIVE:
        verdict = Verdict.FAIL
        d = replace(
            d,
            reason="not_shown_within_threshold",
            text="not shown within threshold (upper-bound mode: inconclusive fails): "
            + d.text.removeprefix("inconclusive: "),
        )
    keep_need = d.verdict == Verdict.INCONCLUSIVE
    return replace(
        r,
        passed=verdict == Verdict.PASS,
        verdict=verdict,
        reason=d.reason,
        reason_text=d.text,
        warnings=tuple(_warnings(r, d, cfg)),
        seeds_needed=r.seeds_needed if keep_need else None,
    )


def _members(r: MetricResult, cfg: GateConfig) -> tuple[MetricResult, ...]:
    """What the gate tests for ``r``: its attributes' results when it has several (fairtrace's
    ``point`` mode keeps the combined score), else ``r`` itself."""
    return r.attributes if r.attributes and cfg.mode != GateMode.POINT else (r,)


def apply_gate(results: Sequence[MetricResult], cfg: GateConfig) -> list[MetricResult]:
    """Adjust p-values across metrics (each protected attribute of a metric one hypothesis),
    decide every verdict, and sort failures first."""
    members = [_members(r, cfg) for r in results]
    flat = [m for ms in members for m in ms]
    gate_p = [_gate_p(m) if m.direction == Direction.LOWER else None for m in flat]
    missing = next((r.p_missing for r in results if r.p_missing is not None), None)
    family = gate_p + ([missing] if missing is not None else [])
    adjusted_holm = holm(family)
    missing_holm = adjusted_holm[-1] if missing is not None else None
    adjusted_bh = benjamini_hochberg([m.p_value for m in flat])
    alpha_missing = missing_holm is not None and missing_holm < cfg.alpha
    out = []
    at = 0
    for r, ms in zip(results, members, strict=True):
        span = slice(at, at + len(ms))
        at += len(ms)
        decided = [
            replace(m, p_holm=ph, p_bh=pb)
            for m, ph, pb in zip(ms, adjusted_holm[span], adjusted_bh[span], strict=True)
        ]
        several = ms[0] is not r
        r = r if several else decided[0]
        r = replace(r, p_missing=missing_holm if r.p_missing is not None else None)
        decision = _no_signal(r) or (
            None
            if r.groups_with_data < 2
            else _coverage(r, cfg, alpha_missing and r.p_missing is not None)
        )
        if not several:
            out.append(_final(r, decision or _decide(r, cfg), cfg))
            continue
        parts = [_final(m, _decide(m, cfg), cfg) for m in decided]
        if decision is None:
            out.append(from_attributes(r, parts))
        else:  # no signal, or coverage: decided for the metric as a whole
            out.append(replace(_final(r, decision, cfg), attributes=tuple(parts)))
    return sorted(out, key=_severity_key)
