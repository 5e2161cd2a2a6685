"""Per-group figures: means with scale-respecting intervals, coverage, and missingness.

* A group's mean is the mean of its variant means (a variant's repeats are one unit); its
  standard error treats seeds as clusters. Rates (values in [0, 1]) get a Wilson interval at the
  effective sample size p(1 − p)/se² with a t quantile on the seeds' degrees of freedom, so it
  stays inside [0, 1]; non-negative values (counts) get a t interval cut at 0.
* Coverage is the share of a group's expected variants that hold at least one valid record.
* Missingness that depends on the group is tested by permuting the missing indicator among the
  variants of each seed (the same within-seed permutation as the gap's p-value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import stdtrit

from ..vocabulary import Scale
from . import permutation, seeds
from .inference import Units, scale_of

__all__ = ["GroupStat", "group_stats", "missingness_p"]


@dataclass(frozen=True)
class GroupStat:
    """One group's mean over its variants with a scale-respecting interval, for charts."""

    label: str
    mean: float
    low: float
    high: float
    records: int


def group_stats(
    units: Units,
    labels: Sequence[str],
    records: NDArray[np.int64],
    level: float,
    column: int = 0,
    scale: Scale | None = None,
) -> tuple[GroupStat, ...]:
    """Every group's mean over its variants with a scale-respecting interval at ``level``."""
    x = units.values[:, column]
    s, g = units.seed, units.group
    n_groups = units.n_groups
    cells = s * n_groups + g
    size = units.n_seeds * n_groups
    tot = np.bincount(cells, weights=x, minlength=size).reshape(units.n_seeds, n_groups)
    cnt = np.bincount(cells, minlength=size).reshape(units.n_seeds, n_groups).astype(float)
    n_g = cnt.sum(axis=0)
    shown = scale_of(units.values, scale)
    unit_bounded = shown == Scale.RATE
    non_negative = shown in (Scale.RATE, Scale.COUNT)
    out = []
    for grp, label in enumerate(labels):
        if n_g[grp] <= 0:
            continue
        mean = float(tot[:, grp].sum() / n_g[grp])
        if unit_bounded:  # a mean of per-variant means may round past a bound (1 + 2e-16)
            mean = min(max(mean, 0.0), 1.0)
        elif non_negative:
            mean = max(mean, 0.0)
        holds = cnt[:, grp] > 0
        k = int(np.count_nonzero(holds))
        resid = (tot[holds, grp] - mean * cnt[holds, grp]) / n_g[grp]
        var = float(k / (k - 1) * (resid**2).sum()) if k > 1 else 0.0
        q = float(stdtrit(max(k - 1, 1), 0.5 + level / 2.0))
        if unit_bounded:
            lo, hi = _wilson(mean, var, q, cap=float(records[grp]))
        else:
            half = q * math.sqrt(var)
            lo, hi = mean - half, mean + half
            if non_negative:
                lo = max(0.0, lo)
        out.append(GroupStat(label, mean, lo, hi, int(records[grp])))
    return tuple(out)


def _wilson(p: float, var: float, q: float, cap: float) -> tuple[float, float]:
    """Wilson's interval at the effective sample size p(1 − p)/var (capped at ``cap``)."""
    p = min(max(p, 0.0), 1.0)
    n = p * (1.0 - p) / var if var > 0.0 and 0.0 < p < 1.0 else cap
    n = max(min(n, cap), 1.0)
    centre = (p + q * q / (2 * n)) / (1 + q * q / n)
    half = q / (1 + q * q / n) * math.sqrt(p * (1 - p) / n + q * q / (4 * n * n))
    # at p = 0 or 1 centre ∓ half is p up to rounding (3e-18): the interval must hold p
    return (min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


def missingness_p(
    seed: NDArray[np.int64],
    group: NDArray[np.int64],
    missing: NDArray[np.bool_],
    n_seeds: int,
    n_groups: int,
    permutations: int,
    rng_seed: int,
) -> float | None:
    """Within-seed permutation p-value of "missingness does not depend on the group" over the
    expected variants; None when nothing is missing or fewer than two groups are expected."""
    if not missing.any() or n_groups < 2:
        return None
    design = seeds.build_design(seed, group, n_seeds, n_groups)
    y = missing.astype(np.float64)[:, None]
    sums, counts = seeds.seed_aggregates(design, y)
    gap = seeds.gap_estimate(sums, counts).gap
    if gap <= 0.0:
        return 1.0
    return permutation.permutation_p(design, y, gap, max(permutations, 999), rng_seed)
