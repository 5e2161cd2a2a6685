"""A regression as a paired contrast: the version in place of the attribute, the case in place
of the seed (docs/regression.md, "Check"). Pure numpy/scipy, numbers in, numbers out.

A case's repeats in one version are averaged into one unit (as a fairness variant's repeats
are); ``u_c`` is case c's change, oriented so that positive is worse. The gate tests the
one-sided non-inferiority hypothesis H0: D ≥ τ against D < τ (PASS), and H0: D ≤ τ against
D > τ (FAIL), with the same bounds as the fairness gate. D is fixed per kind of metric before
any value is read:

* a **rate** weighs each case by its repeats (:func:`case_weights`: 2·n·n′/(n + n′), the
  Mantel–Haenszel weight; K in a replay, the pairs of a paired request set), so D is the
  request-level contrast Σ w_c u_c / Σ w_c and a case of one request moves it by one
  request's worth, not by 1/cases (it had held the in-sample gate INCONCLUSIVE in 3 of 100
  end-to-end trials). Its bound is the smaller of the cluster-robust (sandwich) studentized
  bound over cases and the exact bound of the same weighted D from the pooled repeats
  (:func:`exact_rate_upper`, Clopper–Pearson at α/2 a side, shared with the fairness gate
  through :func:`~..common.stats.clopper_pearson_upper`; a sum of binomials with different
  shares is no more spread than one binomial, Hoeffding 1956; a side whose weights are not
  its repeats is scaled by its largest, or smallest, weight per repeat). With 16 repeats of
  24 cases and no bad repeat in either run, D < 0.010 at 95 %.
* a **count** or a **timing** is the mean over cases, with the studentized bound
  ū ± t(n−1, 1−α)·s/√n.

With no variation between cases, the worst-case spread of one repeat on the metric's scale,
averaged over each case's repeats, is assumed and said.

Per case, against the case's own variability: a one-sided Fisher exact test for a 0/1
property (held k of K → k' of K'), a one-sided Mann–Whitney test for a count or a timing
(shifted by the tolerance). Their p-values join the metrics' in one Holm family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray
from scipy.stats import hypergeom, mannwhitneyu, norm
from scipy.stats import t as student_t

from ...common.stats import clopper_pearson_upper, holm

__all__ = [
    "POWER",
    "PairedBound",
    "PooledCounts",
    "Scale",
    "case_weights",
    "exact_rate_upper",
    "fisher_worse_p",
    "paired_bound",
    "shift_worse_p",
    "tarone_holm",
    "worst_case_sd",
]

FloatArray = NDArray[np.float64]

#: The power the "cases/repeats needed" figures and the plan's smallest detectable changes use.
POWER = 0.8
_EPS = 1e-12


class Scale(StrEnum):
    """What a per-case change measures: a difference of rates, of counts, or of logs."""

    RATE = "rate"
    COUNT = "count"
    LOG = "log"


def worst_case_sd(scale: Scale, tolerance: float) -> float:
    """The spread of one repeat assumed when the cases show none: a rate at ½, one count, the
    tolerance for a log ratio (a deterministic timing is unknown in a real app, not exact).
    A case's change averages K repeats a side, so its assumed spread is this × √(2/K)."""
    return {Scale.RATE: 0.5, Scale.COUNT: 1.0, Scale.LOG: max(tolerance, 0.1)}[scale]


@dataclass(frozen=True)
class PairedBound:
    """One metric's paired contrast over ``cases`` cases."""

    cases: int
    estimate: float  # the (weighted) mean change, positive = worse
    lower: float  # one-sided 1 − α lower bound of D
    upper: float  # one-sided 1 − α upper bound of D (the smaller of studentized and exact)
    p_fail: float  # p-value of H0: D ≤ τ
    worst_case: bool  # no variation between cases: the worst-case spread was assumed
    cases_needed: int | None  # cases that would put the bound clear of τ (PASS or FAIL)
    repeats_needed: int | None  # repeats per case that would, at this many cases


@dataclass(frozen=True)
class PooledCounts:
    """A rate's repeats pooled over cases, for the exact bound (:func:`exact_rate_upper`):
    bad repeats and repeats a side, and each side's largest/smallest weight per repeat
    relative to the mean (``scale_cur`` ≥ 1 ≥ ``scale_base``; 1 when every case's weight is
    its repeats, as in a replay or a paired request set)."""

    bad_base: float
    n_base: float
    bad_cur: float
    n_cur: float
    scale_base: float = 1.0
    scale_cur: float = 1.0

    def upper(self, alpha: float, factor: float = 1.0) -> float:
        """The exact bound; ``factor`` scales every count (a design ``factor`` × as large,
        at the shares observed)."""
        return exact_rate_upper(
            round(self.bad_base * factor),
            round(self.n_base * factor),
            round(self.bad_cur * factor),
            round(self.n_cur * factor),
            alpha,
            self.scale_base,
            self.scale_cur,
        )


def case_weights(n_base: Sequence[int], n_cur: Sequence[int]) -> list[float]:
    """A case's weight in a rate's contrast, from its repeats alone (never their values):
    2·n·n′/(n + n′), the Mantel–Haenszel weight of a stratum (the inverse of its change's
    variance, up to the common per-repeat variance): K for K repeats a side, the pairs for a
    paired request set, 12 for 8 baseline and 24 current requests."""
    return [2.0 * b * c / (b + c) if b + c > 0 else 0.0 for b, c in zip(n_base, n_cur, strict=True)]


def _spread(
    changes: FloatArray, weights: FloatArray, repeats: FloatArray, scale: Scale, tolerance: float
) -> tuple[float, float, bool]:
    """The weighted mean, its cluster-robust (sandwich) standard error over cases, and whether
    the cases showed no spread (then one repeat's worst-case spread, averaged over each case's
    repeats: Var(u_c) = 2σ²/K_c)."""
    n = int(changes.shape[0])
    total = float(weights.sum())
    mean = float((weights * changes).sum() / total)
    resid = weights * (changes - mean)
    se = math.sqrt(n / (n - 1) * float((resid * resid).sum())) / total if n > 1 else 0.0
    worst = se <= _EPS * max(1.0, abs(mean)) / max(math.sqrt(n), 1.0)
    if worst:
        sd = worst_case_sd(scale, tolerance)
        se = sd * math.sqrt(2.0 * float((weights * weights / repeats).sum())) / total
    return mean, se, worst


def paired_bound(
    changes: FloatArray,
    tolerance: float,
    alpha: float,
    scale: Scale,
    within_var: float = 0.0,
    repeats: float = 1.0,
    pooled: PooledCounts | None = None,
    weights: FloatArray | None = None,
) -> PairedBound | None:
    """The contrast of per-case changes ``changes`` (positive = worse); None without a case.

    ``weights`` (a rate's :func:`case_weights`; equal when None) make D the weighted mean of
    the cases' changes, with a cluster-robust bound over cases; ``pooled`` adds the exact bound
    of the same weighted D, and the upper bound is the smaller of the two (fixed in advance,
    as the fairness gate's). ``within_var`` is the pooled variance of one repeat within a case
    and version, and ``repeats`` the repeats per case and version: they split the cases'
    spread into the part more repeats would shrink and the part only more cases would."""
    n = int(changes.shape[0])
    if n == 0:
        return None
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    per_case = np.full(n, max(repeats, 1.0)) if weights is None else np.maximum(w, 1e-9)
    mean, se, worst = _spread(changes, w, per_case, scale, tolerance)
    spread = se * math.sqrt(n)  # the standard deviation of one (average) case's change
    tq = float(student_t.ppf(1.0 - alpha, n - 1)) if n > 1 else math.inf
    upper = mean + tq * se
    if pooled is not None:
        upper = min(upper, pooled.upper(alpha))
    p = float(student_t.sf((mean - tolerance) / se, n - 1)) if n > 1 else 1.0
    within = worst_case_sd(scale, tolerance) ** 2 if worst else within_var
    # the exact bound's search only where the figures are read: a bound not yet under τ
    plan = _Projection(
        mean, spread, tolerance, alpha, n, repeats, pooled if upper >= tolerance else None
    )
    return PairedBound(
        n,
        mean,
        mean - tq * se,
        upper,
        p,
        worst,
        plan.cases_needed(),
        plan.repeats_needed(within),
    )


def _z(alpha: float) -> float:
    return float(norm.ppf(1.0 - alpha) + norm.ppf(POWER))


#: The largest design the "cases/repeats needed" figures search (a figure beyond is none).
_MOST = 100_000


@dataclass(frozen=True)
class _Projection:
    """How many cases, or repeats per case, would put the bound clear of τ: the studentized
    bound at 80 % power, or (PASS side, a rate) the exact bound at the shares observed — the
    smaller. None when neither would at any size (repeats: the cases differ among themselves
    by more than the tolerance leaves room for)."""

    mean: float
    sd: float
    tolerance: float
    alpha: float
    n: int
    k: float
    pooled: PooledCounts | None

    def _exact(self, start: int, scale: float) -> int | None:
        """The smallest size m ≥ start (cases or repeats; counts × m/scale) at which the
        exact bound is under τ, by bisection (the bound falls as the counts grow)."""
        pooled = self.pooled
        if pooled is None or self.mean >= self.tolerance:
            return None
        if pooled.upper(self.alpha, _MOST / scale) >= self.tolerance:
            return None
        lo, hi = start, _MOST
        while lo < hi:
            mid = (lo + hi) // 2
            if pooled.upper(self.alpha, mid / scale) < self.tolerance:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def cases_needed(self) -> int | None:
        room = abs(self.tolerance - max(self.mean, 0.0))
        if room <= 1e-12:
            return None
        found = [max(2, math.ceil((_z(self.alpha) * self.sd / room) ** 2))]
        exact = self._exact(max(2, self.n), self.n)
        return min(found + ([exact] if exact is not None else []))

    def repeats_needed(self, within: float) -> int | None:
        """Var(u_c) ≈ σ²_between + 2σ²_within/K: the K at which n cases would decide."""
        found: list[int] = []
        room = abs(self.tolerance - max(self.mean, 0.0))
        if room > 1e-12 and within > 0 and self.k > 0:
            between = max(0.0, self.sd * self.sd - 2.0 * within / self.k)
            allowed = (room * math.sqrt(self.n) / _z(self.alpha)) ** 2 - between
            if allowed > 0:
                found.append(max(1, math.ceil(2.0 * within / allowed)))
        exact = self._exact(1, self.k)
        if exact is not None:
            found.append(exact)
        return min(found) if found else None


def exact_rate_upper(
    bad_base: int,
    n_base: int,
    bad_cur: int,
    n_cur: int,
    alpha: float,
    scale_base: float = 1.0,
    scale_cur: float = 1.0,
) -> float:
    """The one-sided 1 − α upper bound of D = (current share of bad repeats) − (baseline's),
    from the pooled counts: Clopper–Pearson at α/2 on each side. With cases weighted other
    than by their repeats, a side's weighted share is at most ``scale`` (its largest weight
    per repeat over the mean; at least ``scale`` for the smallest) times its pooled share."""
    upper_cur = clopper_pearson_upper(bad_cur, n_cur, alpha / 2)
    lower_base = 1.0 - clopper_pearson_upper(n_base - bad_base, n_base, alpha / 2)
    return min(1.0, upper_cur * scale_cur) - lower_base * scale_base


def fisher_worse_p(bad_base: int, n_base: int, bad_cur: int, n_cur: int) -> tuple[float, float]:
    """One-sided Fisher exact p-value that the current share of bad repeats exceeds the
    baseline's (1 when it does not), and the smallest p-value the test could give with these
    margins (1 when no repeat was bad on either side: it can never reject)."""
    total_bad = bad_base + bad_cur
    if n_base == 0 or n_cur == 0 or total_bad == 0:
        return 1.0, 1.0
    most = min(total_bad, n_cur)
    floor = float(hypergeom.pmf(most, n_base + n_cur, total_bad, n_cur))
    if bad_cur * n_base <= bad_base * n_cur:
        return 1.0, floor
    return float(hypergeom.sf(bad_cur - 1, n_base + n_cur, total_bad, n_cur)), floor


def tarone_holm(p_values: Sequence[float], floors: Sequence[float], alpha: float) -> list[float]:
    """Holm's adjustment over the tests that could reject at all (Tarone 1990): a discrete
    test whose smallest attainable p-value (``floors``) exceeds α/K cannot reject, so the
    family is the smallest K with at most K such tests; the others keep p = 1. Holm itself is
    :func:`~..common.stats.holm`, shared with the fairness gate."""
    m = len(p_values)
    k = 1
    while k <= m and sum(f <= alpha / k for f in floors) > k:
        k += 1
    keep = [i for i, f in enumerate(floors) if f <= alpha / k]
    adjusted = holm([p_values[i] for i in keep])
    out = [1.0] * m
    for i, p in zip(keep, adjusted, strict=True):
        out[i] = 1.0 if p is None else p
    return out


def shift_worse_p(base: FloatArray, current: FloatArray, shift: float) -> tuple[float, float]:
    """One-sided Mann–Whitney p-value that ``current − shift`` is stochastically larger than
    ``base`` (1 with fewer than two values a side, or when its median is not larger), and the
    smallest attainable (1 when every value is the same: no ordering can reject)."""
    cur = current - shift
    if base.shape[0] < 2 or cur.shape[0] < 2:
        return 1.0, 1.0
    if np.ptp(np.concatenate([base, cur])) <= _EPS:
        return 1.0, 1.0
    floor = 1.0 / math.comb(base.shape[0] + cur.shape[0], cur.shape[0])
    if np.median(cur) <= np.median(base):
        return 1.0, floor
    return float(mannwhitneyu(cur, base, alternative="greater").pvalue), floor
