"""A regression as a paired contrast: the version in place of the attribute, the case in place
of the seed (docs/regression.md, "Check"). Pure numpy/scipy, numbers in, numbers out.

A case's repeats in one version are averaged into one unit (as a fairness variant's repeats
are), so a case informs the contrast once however many repeats it holds; ``u_c`` is case c's
change, oriented so that positive is worse. The metric's change is D = E[u_c] over cases, and
the gate tests the one-sided non-inferiority hypothesis H0: D ≥ τ against D < τ (PASS), and
H0: D ≤ τ against D > τ (FAIL), with the same bounds as the fairness gate:

* the studentized one-sided bound ū ± t(n−1, 1−α)·s/√n over cases (a case with no variation
  between cases gets the worst-case spread of the metric's scale, and says so);
* for rates, also an exact bound that rests on no spread read off the sample
  (:func:`exact_rate_upper`): over the suite's cases, D ≤ mean_c q'_c − mean_c q_c for the
  share q of bad repeats, and the pooled count of bad repeats bounds each mean by
  Clopper–Pearson (:func:`~..common.stats.clopper_pearson_upper`, shared with the fairness
  gate; a sum of binomials with different shares is no more spread than one binomial,
  Hoeffding 1956). PASS uses the smaller of the two bounds, as the fairness gate does: with 16
  repeats of 24 cases and no bad repeat in either run, D < 0.008 at 95 %.

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
    "Scale",
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
    estimate: float  # ū: the mean change, positive = worse
    lower: float  # one-sided 1 − α lower bound of D
    upper: float  # one-sided 1 − α upper bound of D (the smaller of studentized and exact)
    p_fail: float  # p-value of H0: D ≤ τ
    worst_case: bool  # no variation between cases: the worst-case spread was assumed
    cases_needed: int | None  # cases that would put the bound clear of τ (PASS or FAIL)
    repeats_needed: int | None  # repeats per case that would, at this many cases


def paired_bound(
    changes: FloatArray,
    tolerance: float,
    alpha: float,
    scale: Scale,
    within_var: float = 0.0,
    repeats: float = 1.0,
    exact_upper: float | None = None,
) -> PairedBound | None:
    """The contrast of per-case changes ``changes`` (positive = worse); None without a case.

    ``within_var`` is the pooled variance of one repeat within a case and version, and
    ``repeats`` the repeats per case and version: they split the cases' spread into the part
    more repeats would shrink and the part only more cases would."""
    n = int(changes.shape[0])
    if n == 0:
        return None
    mean = float(changes.mean())
    sd = float(changes.std(ddof=1)) if n > 1 else 0.0
    worst = sd <= _EPS * max(1.0, abs(mean))
    spread = worst_case_sd(scale, tolerance) * math.sqrt(2.0 / max(repeats, 1.0)) if worst else sd
    se = spread / math.sqrt(n)
    tq = float(student_t.ppf(1.0 - alpha, n - 1)) if n > 1 else math.inf
    upper = mean + tq * se
    # pooled repeats weight a case by its repeats: on recorded traffic (a common question holds
    # hundreds of requests, a rare one three) the pooled bound can fall below the mean over
    # cases it is meant to bound (+21.3 vs +21.6 pts on the demo); then the t-bound stands alone
    if exact_upper is not None and exact_upper >= mean:
        upper = min(upper, exact_upper)
    lower = mean - tq * se
    p = float(student_t.sf((mean - tolerance) / se, n - 1)) if n > 1 else 1.0
    return PairedBound(
        n,
        mean,
        lower,
        upper,
        p,
        worst,
        _cases_needed(mean, spread, tolerance, alpha),
        _repeats_needed(mean, spread, tolerance, alpha, n, within_var, repeats),
    )


def _z(alpha: float) -> float:
    return float(norm.ppf(1.0 - alpha) + norm.ppf(POWER))


def _cases_needed(mean: float, sd: float, tolerance: float, alpha: float) -> int | None:
    """Cases at which the bound would clear the tolerance on the side the estimate is on
    (under it: PASS; over it: FAIL), at this spread, with 80 % power."""
    room = abs(tolerance - max(mean, 0.0))
    if room <= 1e-12:
        return None
    return max(2, math.ceil((_z(alpha) * sd / room) ** 2))


def _repeats_needed(
    mean: float, sd: float, tolerance: float, alpha: float, n: int, within: float, k: float
) -> int | None:
    """Var(u_c) ≈ σ²_between + 2σ²_within/K: the K at which n cases would show D < τ."""
    room = tolerance - max(mean, 0.0)
    if room <= 0 or within <= 0 or k <= 0:
        return None
    between = max(0.0, sd * sd - 2.0 * within / k)
    allowed = (room * math.sqrt(n) / _z(alpha)) ** 2 - between
    if allowed <= 0:
        return None
    return max(1, math.ceil(2.0 * within / allowed))


def exact_rate_upper(bad_base: int, n_base: int, bad_cur: int, n_cur: int, alpha: float) -> float:
    """The one-sided 1 − α upper bound of D = (current share of bad repeats) − (baseline's),
    from the pooled counts: Clopper–Pearson at α/2 on each side."""
    upper_cur = clopper_pearson_upper(bad_cur, n_cur, alpha / 2)
    lower_base = 1.0 - clopper_pearson_upper(n_base - bad_base, n_base, alpha / 2)
    return upper_cur - lower_base


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
