"""The gate: turning estimates and p-values into verdicts.

Modes (``GateConfig.mode``):

* ``default`` — a lower-is-better metric fails only when its gap exceeds the threshold **and**
  the within-seed permutation test, Holm-adjusted across the run's metrics, rejects "no group
  effect" at ``alpha``. A gap past the threshold that is within noise passes with a warning.
* ``point`` — fairtrace's verdict: the gap against the threshold, nothing else.
* ``upper-bound`` — the interval's far end must be on the right side of the threshold (the
  upper bound under it for lower-is-better metrics, the lower bound over it for higher).

Higher-is-better metrics (counterfactual_stability) have no group contrast to test, so
``default`` uses the point verdict for them. In every mode, a metric with fewer than two groups
holding data is "insufficient_data", which does not pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from spanguard.exceptions import ConfigError

from .results import MetricResult
from .stats import benjamini_hochberg, holm

__all__ = ["GATE_MODES", "GateConfig", "apply_gate"]

GateMode = Literal["default", "point", "upper-bound"]
GATE_MODES: tuple[GateMode, ...] = ("default", "point", "upper-bound")


@dataclass(frozen=True)
class GateConfig:
    """Statistics and gate settings; every default is documented in docs/fairness.md."""

    mode: GateMode = "default"
    alpha: float = 0.05
    level: float = 0.95
    bootstrap_samples: int = 2000
    permutation_samples: int = 999
    seed: int = 0
    # records × permutations above which the normal approximation replaces Monte Carlo
    exact_budget: int = 25_000_000
    normal_draws: int = 20_000
    power: float = 0.8

    def __post_init__(self) -> None:
        if self.mode not in GATE_MODES:
            raise ConfigError("gate", f"must be one of {', '.join(GATE_MODES)}, "
                                      f"got {self.mode!r}.")
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError("alpha", f"must be between 0 and 1, got {self.alpha}.")
        if not 0.0 < self.level < 1.0:
            raise ConfigError("level", f"must be between 0 and 1, got {self.level}.")
        if self.bootstrap_samples < 0 or self.permutation_samples < 0:
            raise ConfigError("samples", "bootstrap and permutation counts must not be "
                                         "negative.")


def _point(r: MetricResult) -> bool:
    if r.direction == "higher":
        return r.score >= r.threshold
    return r.score <= r.threshold


def _verdict(r: MetricResult, cfg: GateConfig) -> tuple[bool, list[str]]:
    notes: list[str] = []
    if cfg.mode == "point":
        return _point(r), notes
    if cfg.mode == "upper-bound":
        ci = r.confidence_interval
        if ci is None:
            notes.append("no interval is available; the point estimate decided.")
            return _point(r), notes
        return (ci[0] >= r.threshold if r.direction == "higher" else ci[1] <= r.threshold), notes
    if r.p_holm is None:
        return _point(r), notes
    if r.score > r.threshold and r.p_holm >= cfg.alpha:
        notes.append(f"the gap {r.score:.4g} exceeds the threshold {r.threshold:g} but is "
                     f"within noise (Holm-adjusted p = {r.p_holm:.4g} ≥ {cfg.alpha:g}).")
        return True, notes
    return not (r.score > r.threshold and r.p_holm < cfg.alpha), notes


def _severity_key(r: MetricResult) -> tuple[bool, float, str]:
    return (r.passed, -r.severity, r.metric)


def apply_gate(results: Sequence[MetricResult], cfg: GateConfig) -> list[MetricResult]:
    """Adjust p-values across metrics, decide every verdict, and sort like fairtrace."""
    raw = [r.p_value for r in results]
    adjusted_holm = holm(raw)
    adjusted_bh = benjamini_hochberg(raw)
    out = []
    for r, ph, pb in zip(results, adjusted_holm, adjusted_bh, strict=True):
        r = replace(r, p_holm=ph, p_bh=pb)
        warnings: list[str] = []
        if r.groups_with_data < 2:
            details = {**r.details, "insufficient_data": True,
                       "reason": "need at least two groups"}
            out.append(replace(r, details=details, passed=False, verdict="insufficient_data",
                               warnings=("fewer than two groups hold data for this metric; "
                                         "it cannot pass.",)))
            continue
        passed, notes = _verdict(r, cfg)
        warnings.extend(notes)
        if r.mde is not None and r.direction == "lower" and r.mde > r.threshold:
            warnings.append(f"the suite is too small to detect a gap of {r.threshold:g}: its "
                            f"minimum detectable effect is {r.mde:.4g} (80% power); add seeds.")
        out.append(replace(r, passed=passed, verdict="pass" if passed else "fail",
                           warnings=tuple(warnings)))
    return sorted(out, key=_severity_key)
