"""Design power: what a suite of seeds × groups × repeats can show, before the first app call.

Pure functions (numbers in, numbers out; no I/O). The gate's PASS needs a one-sided upper bound
of the gap Δ under the threshold τ (docs/fairness.md, "what PASS means"); two bounds exist
(:mod:`..stats.bounds`):

* **noisy app** — the studentized simultaneous bound over the "group against the rest"
  contrasts, at α/2 (the other half goes to the exact bound below, so that the smaller of the
  two keeps 1 − α coverage). On a fair app it is ``range(group means) + 2·k·se·(G − 1)/G``;
  its ``power``
  quantile is the design's **minimum detectable effect** (MDE): a fair app's bound falls
  below it with probability ``power``, and, the same distance seen from the other side, a gap
  of MDE is told apart from none with about that power. A fair app PASSes with probability
  ``power`` when MDE ≤ τ (and almost surely when MDE ≤ τ/2).
* **deterministic app** (every seed's variants agree) — the exact Clopper–Pearson bound on
  the share of seeds whose variants disagree, ``1 − α^(1/n)`` with none disagreeing, times
  the scale's range (1 for rates; a count's stated spread). It needs
  ``n ≥ ln α / ln(1 − τ/range)`` seeds, whatever the number of groups.

With no data the variance is the scale's worst case: p(1 − p) at p = 0.5 for rates, and for
counts (which have no worst case) a Poisson count of mean 1, unless ``variance`` says more.
Independent repeats divide a variant's variance by their number; identical repeats (caching,
temperature 0) add nothing, so pass ``repeats=1`` for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from ..vocabulary import Scale

__all__ = [
    "ADVICE_CONFIDENCE",
    "COUNT_VARIANCE",
    "RATE_VARIANCE",
    "STUDENTIZED_SHARE",
    "design_mde",
    "deterministic_bound",
    "deterministic_seeds",
    "discordant_seeds_needed",
    "repeats_needed",
    "resolution",
    "seeds_needed",
    "variance_upper",
]

# a noisy app's upper bound is the smaller of the studentized and the exact bound, each at
# this share of α (their minimum keeps 1 − α coverage); a deterministic app's is the exact
# bound at the whole α
STUDENTIZED_SHARE = 0.5
RATE_VARIANCE = 0.25  # a rate's largest variance, p(1 − p) at p = 0.5
COUNT_VARIANCE = 1.0  # a count has no worst case: a Poisson count of mean 1 is assumed
_DRAWS = 20_000
_MAX_SEEDS = 10_000_000
_NORMAL_DF = 500  # from this many degrees of freedom on, the t is taken as normal
# the advice (seeds or repeats a fair app needs to PASS) sizes from the pilot's variance at this
# one-sided confidence (and the discordant share likewise): re-run at the printed size, a fair
# app PASSes in ≥ 80% per metric family (bench/bench_calibration.py --advice)
ADVICE_CONFIDENCE = 0.9


def _unit_variance(scale: Scale, repeats: int, variance: float | None) -> float:
    if variance is None:
        variance = RATE_VARIANCE if scale == Scale.RATE else COUNT_VARIANCE
    return float(variance) / max(int(repeats), 1)


@lru_cache(maxsize=64)
def _fair_draws(groups: int) -> tuple[np.ndarray, np.ndarray, Mapping[str, Any]]:
    """A fair app's simulated group means for ``groups`` groups, drawn once per group count
    (every ``df`` shares them): the studentized statistic's numerator, the means' spread,
    and the generator's state after the draws, from which each ``df`` draws its chi-squares."""
    rng = np.random.default_rng(20261205 + groups)
    draws = max(2_000, min(_DRAWS, 4_000_000 // groups))  # bounded memory for many groups
    z = rng.standard_normal((draws, groups))
    centred = z - z.mean(axis=1, keepdims=True)
    t = np.abs(centred).max(axis=1) * math.sqrt(groups / (groups - 1.0))
    spread = z.max(axis=1) - z.min(axis=1)
    t.flags.writeable = spread.flags.writeable = False  # shared by every cached constant
    return t, spread, rng.bit_generator.state


@lru_cache(maxsize=512)
def _constant(groups: int, df: int, alpha: float, power: float) -> float:
    """The ``power`` quantile of a fair app's studentized upper bound, in units of σ/√n
    (σ: a variant's standard deviation, n: seeds), with the seeds' degrees of freedom."""
    t, spread, state = _fair_draws(groups)
    if df < _NORMAL_DF:  # the seeds' own standard errors: a multivariate t
        rng = np.random.default_rng()
        rng.bit_generator.state = state  # as if drawn right after the means, as always
        t = t / np.sqrt(rng.chisquare(df, size=len(t)) / df)
    k = float(np.quantile(t, 1.0 - alpha))
    bound = spread + 2.0 * k * math.sqrt((groups - 1.0) / groups)
    return float(np.quantile(bound, power))


def resolution(
    seeds: int, groups: int, unit_variance: float, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The studentized bound's MDE for ``seeds`` × ``groups`` variants of variance
    ``unit_variance`` each (repeats already averaged); None below 2 seeds or 2 groups."""
    if seeds < 2 or groups < 2:
        return None
    df = min(int(seeds) - 1, _NORMAL_DF)
    c = _constant(int(groups), df, float(alpha) * STUDENTIZED_SHARE, float(power))
    return c * math.sqrt(max(unit_variance, 0.0) / seeds)


def deterministic_bound(
    seeds: int, alpha: float = 0.05, discordant: int = 0, spread: float = 1.0
) -> float:
    """The exact one-sided 1 − α upper bound of the gap from ``discordant`` of ``seeds``
    seeds whose variants disagree (Clopper–Pearson), times the scale's range ``spread``."""
    from .bounds import clopper_pearson_upper

    return clopper_pearson_upper(discordant, seeds, alpha) * spread


def deterministic_seeds(threshold: float, alpha: float = 0.05, spread: float = 1.0) -> int:
    """Seeds for the exact bound with no disagreeing seed, ``(1 − α^(1/n))·spread``, to fall
    below ``threshold``: n > ln α / ln(1 − τ/spread)."""
    share = threshold / max(spread, 1e-300)
    if share >= 1.0:
        return 1
    n = math.log(alpha) / math.log1p(-share)
    return max(1, math.floor(n) + 1)


def _spread(scale: Scale, spread: float | None) -> float:
    if scale == Scale.RATE:
        return 1.0
    return max(1.0, spread or 0.0)


def design_mde(
    seeds: int,
    groups: int,
    repeats: int,
    scale: Scale,
    threshold: float,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    variance: float | None = None,
) -> float | None:
    """The design's minimum detectable effect at the scale's worst-case variance (or
    ``variance``, one record's): a fair app's upper bound of the gap falls below it with
    probability ``power``. None when it is beyond the scale (a gap between rates cannot
    exceed 1) or the design has fewer than 2 seeds or 2 groups. ``threshold`` is accepted so
    the call reads like the gate's; compare the MDE with it (PASS needs MDE ≤ τ)."""
    del threshold  # the MDE does not depend on τ; the signature is shared with seeds_needed
    mde = resolution(seeds, groups, _unit_variance(scale, repeats, variance), alpha, power)
    if mde is None or (scale == Scale.RATE and mde >= 1.0):
        return None
    return mde


def seeds_needed(
    groups: int,
    repeats: int,
    scale: Scale,
    threshold: float,
    alpha: float = 0.05,
    power: float = 0.8,
    observed: float | None = None,
    *,
    spread: float | None = None,
) -> int:
    """Seeds for a fair app to PASS: the fewest n with MDE ≤ ``threshold``.

    ``observed`` is the variance of one variant's value as measured (its repeats averaged):
    None assumes the scale's worst case divided by ``repeats``; 0 means a deterministic app
    (no seed's variants disagreed), for which the exact bound needs
    n > ln α / ln(1 − τ/spread) (``spread``: a count's range, at least 1; rates: 1).
    """
    if observed is not None and observed <= 0.0:
        return deterministic_seeds(threshold, alpha, _spread(scale, spread))
    unit = _unit_variance(scale, repeats, None) if observed is None else float(observed)
    groups = max(int(groups), 2)

    def ok(n: int) -> bool:
        mde = resolution(n, groups, unit, alpha, power)
        return mde is not None and mde <= threshold

    if ok(2):
        return 2
    found = _least_passing(ok, 4)
    return _MAX_SEEDS if found is None else found


def repeats_needed(
    seeds: int,
    groups: int,
    threshold: float,
    observed: float,
    repeats: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int | None:
    """Independent repeats per variant **in all** (counted from the ``repeats`` already run,
    never fewer) for a noisy app's MDE to reach ``threshold`` at this many seeds, assuming
    its variance ``observed`` (at ``repeats``) is call-to-call noise that averaging shrinks;
    None when no number of repeats can (too few seeds or groups) or none is needed (the MDE is
    within τ already: the gap seen, not the noise, keeps the metric open). The variance scales as
    1/repeats, so the total is ``repeats · (MDE/τ)²`` rounded up once: a run at that many
    repeats is told about the same total again, not a multiple of it."""
    mde = resolution(seeds, groups, observed, alpha, power)
    if mde is None or observed <= 0.0:
        return None
    now = max(int(repeats), 1)
    if mde <= threshold:
        return None
    return max(now + 1, math.ceil(now * (mde / threshold) ** 2 - 1e-9))


def variance_upper(variance: float, seeds: int, confidence: float = ADVICE_CONFIDENCE) -> float:
    """A one-sided upper confidence bound of a variance estimated from ``seeds`` seeds
    (chi-square on seeds − 1 degrees of freedom): the advice sizes a suite from it, so that a
    pilot that saw too little noise by chance does not promise a PASS its re-run misses."""
    from scipy.stats import chi2

    df = max(int(seeds) - 1, 1)
    return float(variance) * df / float(chi2.ppf(1.0 - confidence, df))


def discordant_seeds_needed(
    share: float, threshold: float, alpha: float = 0.05, spread: float = 1.0
) -> int | None:
    """Seeds for the exact bound to fall below ``threshold`` when a ``share`` of seeds keeps
    disagreeing; None when it never can (share × spread ≥ threshold)."""
    from .bounds import clopper_pearson_upper

    if share <= 0.0:
        return deterministic_seeds(threshold, alpha, spread)
    if share * spread >= threshold:
        return None

    def ok(n: int) -> bool:
        return clopper_pearson_upper(math.floor(share * n), n, alpha) * spread < threshold

    return _least_passing(ok, 2)


def _least_passing(ok: Callable[[int], bool], hi: int) -> int | None:
    """The least seed count above ``hi // 2`` that the monotone ``ok`` passes: double ``hi``
    until it passes, then bisect; None when it still fails at _MAX_SEEDS."""
    while not ok(hi):
        if hi >= _MAX_SEEDS:
            return None
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
