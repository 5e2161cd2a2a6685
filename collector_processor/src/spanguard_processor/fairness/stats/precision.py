"""What one metric's data can show: its upper bound, its MDE, and the seeds a fair app needs.

Joins two valid one-sided upper bounds of the gap — the studentized simultaneous bound of
:mod:`.inference` and the exact discordance bound of :mod:`.bounds` — by taking the smaller,
each at α/2 (the exact one alone, at α, when no seed's variants disagree), so the result keeps
1 − α coverage (measured in bench/bench_calibration.py); and sizes the suite with
:mod:`.power`'s functions from the observed variance. Pure numpy, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from ..vocabulary import Scale
from . import power as design_power
from .bounds import DiscordanceBound, clopper_pearson_upper, discordance_bound
from .inference import GapInference, Units, upper_at
from .power import STUDENTIZED_SHARE

__all__ = ["Precision", "precision", "unmeasured"]


@dataclass(frozen=True)
class Precision:
    """A metric's interval (upper end: the tighter bound), MDE and suite size."""

    interval: tuple[float, float]
    mde: float  # inf: beyond the scale
    seeds_needed: int | None
    info: dict[str, Any]  # what bounded the upper end, for reports (details["upper_bound"])


def _unit_variance(inf: GapInference) -> float:
    """A variant's variance recovered from the group contrasts' standard errors
    (se² = σ²·G/((G − 1)·n) on a balanced suite), the largest over groups and columns."""
    g = inf.means.shape[0]
    se = inf.se[:g]
    return float((se.max(initial=0.0) ** 2) * inf.seeds * (g - 1) / g)


def precision(
    units: Units, inf: GapInference, scale: Scale, threshold: float, alpha: float, power: float
) -> Precision:
    """The interval, MDE and seeds needed for one gap metric with a fitted inference.

    The upper end: with no discordant seed, the exact bound at α (the studentized bound then
    rests on the worst-case variance alone); otherwise the smaller of the exact and the
    studentized bound, each at α/2, so that their minimum keeps 1 − α coverage
    (bench/bench_calibration.py measures it). The exact bound needs the range M
    (``inf.value_range``: 1 for rates, the suite's ``max_difference`` for counts); without it
    the studentized bound alone, at α — and none when a contrast shows no variation."""
    m = inf.value_range
    disc = _discordance(units, alpha, m)
    lower = inf.interval[0]
    if disc is not None and disc.deterministic:
        studentized = inf.interval[1]
    elif disc is None:
        studentized = upper_at(inf, alpha)
    else:
        studentized = upper_at(inf, alpha * STUDENTIZED_SHARE)
        disc = _discordance(units, alpha * (1.0 - STUDENTIZED_SHARE), m)
    if not math.isfinite(studentized):
        studentized = math.inf
    upper = studentized
    method = "studentized" if math.isfinite(studentized) else "none"
    if disc is not None and disc.bound < upper:
        upper, method = disc.bound, "discordance"
    g = int(inf.groups.shape[0])
    repeats = max(1, round(float(units.repeats.mean()))) if units.repeats.size else 1
    variance = _unit_variance(inf)
    info: dict[str, Any] = {
        "method": method,
        "studentized": studentized,
        "discordance": None if disc is None else disc.bound,
    }
    if disc is not None:
        info.update(seeds=disc.seeds, discordant=disc.discordant, range=disc.spread)
    if method == "none":
        # a count metric whose contrasts show no variation and no stated range: no seed count
        # helps; the suite must state the metric's max_difference
        info["needs_range"] = True
        return Precision((min(lower, upper), upper), math.inf, None, info)
    mde, needed, again = _power(
        disc, inf.seeds, g, repeats, variance, scale, threshold, alpha, power
    )
    if again is not None:
        info.update(repeats_needed=again, repeats=repeats)
    if needed is not None:
        needed = _at_least_run(needed, inf, upper, threshold, alpha, power)
    if needed is not None and m is not None and not (disc is not None and disc.deterministic):
        exact = design_power.deterministic_seeds(threshold, alpha, m)
        if exact < needed:  # what a deterministic fair app would need
            info["deterministic_seeds"] = exact
    to_fail = _seeds_to_fail(inf, lower, threshold, alpha, power)
    if to_fail is not None:
        info["seeds_to_fail"] = to_fail
    if scale == Scale.RATE and mde >= 1.0:
        mde = math.inf
    return Precision((min(lower, upper), upper), mde, needed, info)


def _discordance(units: Units, alpha: float, m: float | None) -> DiscordanceBound | None:
    return discordance_bound(
        units.values, units.seed, units.group, units.n_seeds, units.n_groups, alpha, m
    )


def _power(
    disc: DiscordanceBound | None,
    seeds: int,
    groups: int,
    repeats: int,
    variance: float,
    scale: Scale,
    threshold: float,
    alpha: float,
    power: float,
) -> tuple[float, int | None, int | None]:
    """(MDE, seeds needed, repeats needed in all) from the observed data. The MDE is the
    design's with the variance seen; the advice sizes from the variance's upper confidence
    bound and the discordant share's (``ADVICE_CONFIDENCE``), so that a fair app re-run at
    the printed size PASSes as often as the power promises, from a small pilot too."""
    spread = disc.spread if disc is not None else 1.0
    if disc is not None and disc.deterministic:
        return disc.bound, design_power.deterministic_seeds(threshold, alpha, spread), None
    studentized = design_power.resolution(seeds, groups, variance, alpha, power)
    mde = min(
        studentized if studentized is not None else math.inf,
        disc.bound if disc is not None else math.inf,
    )
    advised = design_power.variance_upper(variance, seeds)
    options = [
        design_power.seeds_needed(
            groups, repeats, scale, threshold, alpha, power, observed=max(advised, 1e-300)
        )
    ]
    if disc is not None:
        share = clopper_pearson_upper(
            disc.discordant, disc.seeds, 1.0 - design_power.ADVICE_CONFIDENCE
        )
        exact = design_power.discordant_seeds_needed(
            share, threshold, alpha * (1.0 - STUDENTIZED_SHARE), spread
        )
        if exact is not None:
            options.append(exact)
    again = design_power.repeats_needed(seeds, groups, threshold, advised, repeats, alpha, power)
    return mde, min(options), again


def _lean(alpha: float, power: float) -> float:
    """How much wider than the one-sided bound's half-width the distance to τ must be for
    the bound to clear τ with probability ``power``: (z_{1−α} + z_power) / z_{1−α}."""
    z = NormalDist()
    return (z.inv_cdf(1.0 - alpha) + z.inv_cdf(power)) / z.inv_cdf(1.0 - alpha)


def _at_least_run(
    needed: int, inf: GapInference, upper: float, threshold: float, alpha: float, power: float
) -> int:
    """Never fewer seeds than the suite already has: when a fair app's size is reached and
    the metric is still open, it is the gap seen, not the noise, that is near τ; the size
    for the upper bound to clear τ if the gap is what it shows (half-width ∝ 1/√seeds)."""
    if needed > inf.seeds:
        return needed
    est = inf.estimate
    if est >= threshold or not math.isfinite(upper) or upper <= est:
        return inf.seeds + 1
    ratio = _lean(alpha, power) * (upper - est) / (threshold - est)
    return max(inf.seeds + 1, math.ceil(inf.seeds * ratio * ratio))


def _seeds_to_fail(
    inf: GapInference, lower: float, threshold: float, alpha: float, power: float
) -> int | None:
    """For a metric leaning FAIL (its gap above τ, its lower bound not): the seeds for the
    lower bound to clear τ with probability ``power`` if the gap is what it shows."""
    est = inf.estimate
    if est <= threshold or lower > threshold or est <= lower:
        return None
    ratio = _lean(alpha, power) * (est - lower) / (est - threshold)
    return max(inf.seeds + 1, math.ceil(inf.seeds * ratio * ratio))


def unmeasured(groups: int, scale: Scale, threshold: float, alpha: float, power: float) -> int:
    """Seeds needed when the data hold no within-seed contrast: the design's worst case."""
    return design_power.seeds_needed(max(groups, 2), 1, scale, threshold, alpha, power)
