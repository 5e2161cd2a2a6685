"""Inference for a gap metric: variant means, simultaneous contrasts, the threshold test, MDE.

Pure numpy, no I/O. The design is nested: seed → variant (one group's version of the seed) →
repeat. A variant's repeats are **one unit**: they are averaged first (identical repeats add no
evidence, independent repeats make that mean less noisy), then every statistic works on
variant means, weighting variants equally.

The named estimand is Δ = max_g μ_g − min_g μ_g, the largest difference between the true
(seed-adjusted) group means. It is bounded through the G contrasts "group g against the mean of
the other groups", d_g = μ_g − mean_{h≠g} μ_h:

* Δ ≥ |d_g| for every g (the mean of the others lies between min and max), and
* Δ = (G − 1)/G · (max_g d_g − min_g d_g) exactly.

With several attributes (groups are their combinations), each attribute value against the
other values of that attribute (averages of the combinations' means) is a further contrast with
|d| ≤ Δ: a bias along one attribute spread over many combinations shows there first.

Simultaneous intervals d̂_g ± k·se_g for all G contrasts (k: the 1 − α quantile of max_g |T_g|
under a multivariate t with the seeds' degrees of freedom, se: seed-cluster sandwich standard
errors) therefore give an interval for Δ that covers it whenever every contrast interval
covers its contrast, i.e. with probability ≥ 1 − α. The gate's test of H0: Δ ≤ τ rejects when
the contrasts' largest standardised excess over τ passes a critical value: the interval's k
(then the interval's lower end exceeds τ), or, when smaller, the largest 1 − α quantile of that
statistic at H0's least favourable configurations (:mod:`.nulls`, which also draws the
null distributions); its p-value is the smallest α at which it would reject. The interval's
lower end is the test's (the contrasts' bounds at the test's critical value), so it is above τ
exactly when the test rejects: a FAIL never shows a lower end at or under τ. A contrast with
no variation between seeds gets the worst-case variance in the test and the interval alike
(M²/4 for a metric whose per-seed difference between groups lies within a range M: 1 for
rates, the suite's ``max_difference`` for counts); when every seed shows the same within-seed
pattern, the exact agreement test of :mod:`.bounds` gives the p-value and the lower end
instead. A count metric with no stated range and such a contrast has no valid bound at all
(its hidden seeds may differ by any amount): its interval is [0, ∞) and its p-value 1.

See docs/fairness.md for the reasoning and bench/bench_calibration.py for the simulations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..vocabulary import Scale
from .bounds import agreement_test, value_range
from .nulls import (
    EPS,
    bootstrap_parts,
    least_favourable,
    max_t,
    null_parts,
    quantile,
    threshold_quantile,
    threshold_tail,
)
from .seeds import Design, seed_aggregates

__all__ = [
    "GapInference",
    "Units",
    "infer_gap",
    "largest_k",
    "scale_of",
    "threshold_critical",
    "upper_at",
    "variant_units",
    "worst_case_variance",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# draws of the max-|t| null distribution: Monte Carlo error of k at 95% is about ±0.02
NULL_DRAWS = 10_000
# below this many contrast seeds the critical value comes from the studentized seed bootstrap
BOOTSTRAP_SEEDS = 1000
# ... and at least this many: with fewer, resamples of a handful of seeds degenerate (zero
# standard errors), so the multivariate t on the seeds' degrees of freedom is used
BOOTSTRAP_MIN_SEEDS = 10


@dataclass(frozen=True)
class Units:
    """Per-variant means, the unit of analysis; ``repeats`` counts the records averaged."""

    values: FloatArray  # (V, C)
    seed: IntArray  # (V,)
    group: IntArray  # (V,)
    repeats: IntArray  # (V,)
    n_seeds: int
    n_groups: int


def variant_units(
    variant: IntArray,
    seed: IntArray,
    group: IntArray,
    x: FloatArray,
    n_variants: int,
    n_seeds: int,
    n_groups: int,
) -> Units:
    """Average each variant's records (its repeats) into one unit."""
    counts = np.bincount(variant, minlength=n_variants)
    cols = x.shape[1]
    sums = np.empty((n_variants, cols))
    for c in range(cols):
        sums[:, c] = np.bincount(variant, weights=x[:, c], minlength=n_variants)
    has = counts > 0
    v_seed = np.zeros(n_variants, dtype=np.int64)
    v_group = np.zeros(n_variants, dtype=np.int64)
    v_seed[variant] = seed
    v_group[variant] = group
    means = sums[has] / counts[has][:, None]
    return Units(means, v_seed[has], v_group[has], counts[has].astype(np.int64), n_seeds, n_groups)


def scale_of(values: FloatArray, declared: Scale | None = None) -> Scale:
    """A metric's scale: "rate" (values in [0, 1]), "count" (values ≥ 0) or "real"; the
    metric's declared scale, else inferred from its values."""
    if declared is not None:
        return declared
    if values.size == 0 or (values.min() >= 0.0 and values.max() <= 1.0):
        return Scale.RATE
    return Scale.COUNT if values.min() >= 0.0 else Scale.REAL


def worst_case_variance(
    values: FloatArray, scale: Scale = Scale.RATE, spread: float | None = None
) -> float:
    """The variance assumed when the data show none: M²/4 for values whose within-seed range
    is at most M (1/4, a rate at 0.5, for rates); with no range, the larger of the values' mean
    (a Poisson variance) and variance, at least 1 (a guess, not a bound: :func:`infer_gap`
    reports no bound for such a metric)."""
    if scale == Scale.RATE:
        return 0.25
    if spread is not None:
        return spread * spread / 4.0
    mean = float(np.abs(values).mean())
    return max(mean, float(values.var()), 1.0)


@dataclass(frozen=True)
class GapInference:
    """The contrasts of one metric and what follows from them (groups with data only)."""

    groups: IntArray  # (G,) indices of the groups holding contrast data
    means: FloatArray  # (G, C) seed-adjusted group means, centred
    contrast: FloatArray  # (R, C) d̂: each group minus the mean of the other groups (first G
    # rows), then each attribute value against the attribute's other values
    se: FloatArray  # (R, C) seed-cluster standard errors of d̂
    cov: FloatArray  # (R·C, R·C) covariance of d̂ (row-major over rows, then columns)
    lmat: FloatArray  # (R, G) the contrasts as rows over the groups' means
    seeds: int  # seeds holding at least two groups (the independent units)
    critical: float  # k: the groups' family's 1 − α quantile of max |T|
    estimate: float  # plug-in Δ̂ (max over columns of max − min of adjusted means)
    interval: tuple[float, float]  # Δ's interval: the threshold test's lower end, the
    # simultaneous 1 − α upper end
    p_threshold: float  # p-value of H0: Δ ≤ τ
    worst_case: bool  # some contrast showed no variation: worst-case variance used
    null_maxes: tuple[FloatArray, ...]  # per family, sorted draws of max |T| under H0
    test_draws: tuple[FloatArray, ...]  # per family, (configurations, draws): the threshold
    # test's statistic at H0's least favourable configurations (max |T| for attributes), sorted
    residuals: FloatArray  # (S, G, C) per-seed residuals of the group means (for the MDE)
    levels: FloatArray  # (G, C) each group's raw mean (their average: the MDE's base rate)
    scale: Scale
    value_range: float | None = None  # M: 1 for rates, the stated range, None (none stated)


def _contrast_matrix(g: int) -> FloatArray:
    """L with (L m)_g = m_g − mean of the other groups."""
    out = np.full((g, g), -1.0 / (g - 1))
    np.fill_diagonal(out, 1.0)
    return out


def _marginal_rows(levels: IntArray) -> FloatArray:
    """Contrast rows over groups for one attribute: each of its values (the mean of the groups
    holding it) against the mean of its other values. ``levels[g]`` is group g's value."""
    values = np.unique(levels)
    if values.shape[0] < 2:
        return np.zeros((0, levels.shape[0]))
    avg = np.stack([(levels == v) / np.count_nonzero(levels == v) for v in values])
    rows: FloatArray = _contrast_matrix(values.shape[0]) @ avg
    return rows


def _seed_sums(units: Units) -> tuple[FloatArray, FloatArray]:
    """Within-seed centred sums (S, G, C) and variant counts (S, G), contrast seeds only."""
    design = Design(units.seed, units.group, units.n_seeds, units.n_groups)
    sums, counts = seed_aggregates(design, units.values)
    keep = np.count_nonzero(counts, axis=1) >= 2
    return sums[keep], counts[keep]


def _unit_cov(counts: FloatArray) -> FloatArray:
    """Covariance of the adjusted group means when variant values are iid with variance 1."""
    n_s = counts.sum(axis=1)
    inv = counts / n_s[:, None]
    cov = np.diag(counts.sum(axis=0)) - np.einsum("sg,sh->gh", counts, inv)
    n_g = counts.sum(axis=0)
    out: FloatArray = cov / np.outer(n_g, n_g)
    return out


def largest_k(d: FloatArray, se: FloatArray, tau: float, g: int) -> FloatArray:
    """Per family, the largest k at which its lower bound of Δ still exceeds τ: (…, families).

    Rows of d/se (…, rows, C): the first ``g`` are the groups' contrasts (family 0, which also
    bounds Δ by pairs), the rest the attribute contrasts (family 1, if any)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        single = (np.abs(d) - tau) / se
        shift = tau * g / (g - 1)
        dg, sg = d[..., :g, :], se[..., :g, :]
        diff = dg[..., :, None, :] - dg[..., None, :, :]  # (…, G, G, C)
        pair = (diff - shift) / (sg[..., :, None, :] + sg[..., None, :, :])
    single = np.where(np.isnan(single), -np.inf, single)
    pair = np.where(np.isnan(pair), -np.inf, pair)
    lead = d.shape[:-2]
    main = np.maximum(
        single[..., :g, :].reshape(*lead, -1).max(axis=-1), pair.reshape(*lead, -1).max(axis=-1)
    )
    parts = [main]
    if d.shape[-2] > g:
        parts.append(single[..., g:, :].reshape(*lead, -1).max(axis=-1))
    return np.stack(parts, axis=-1).astype(np.float64)


def _interval(d: FloatArray, se: FloatArray, ks: list[float], g: int) -> tuple[float, float]:
    k = ks[0]
    single = float(np.max(np.abs(d[:g]) - k * se[:g]))
    if len(ks) > 1:
        single = max(single, float(np.max(np.abs(d[g:]) - ks[1] * se[g:])))
    d, se = d[:g], se[:g]
    lo_c, hi_c = d - k * se, d + k * se
    factor = (g - 1) / g
    pair = float(np.max(factor * (lo_c.max(axis=0) - hi_c.min(axis=0))))
    upper = float(np.max(factor * (hi_c.max(axis=0) - lo_c.min(axis=0))))
    return (max(0.0, single, pair), upper)


def infer_gap(
    units: Units,
    threshold: float,
    alpha: float,
    seed: int = 0,
    draws: int = NULL_DRAWS,
    attributes: IntArray | None = None,
    scale: Scale | None = None,
    max_difference: float | None = None,
) -> GapInference | None:
    """Contrasts, simultaneous interval of Δ and the test of Δ ≤ threshold; None with fewer
    than two groups holding within-seed contrasts. ``attributes`` (groups × attributes) gives
    each group's value index per attribute when groups combine several attributes; their
    contrasts form a second family, and α is split evenly (Bonferroni) between the two.
    ``max_difference`` is the suite's stated range M of a count metric (rates have M = 1)."""
    sums, counts = _seed_sums(units)
    n_g = counts.sum(axis=0)
    present = np.flatnonzero(n_g > 0)
    if present.shape[0] < 2 or sums.shape[0] == 0:
        return None
    sums, counts, n_g = sums[:, present], counts[:, present], n_g[present]
    s_count, g, cols = sums.shape
    means = sums.sum(axis=0) / n_g[:, None]
    resid = (sums - counts[:, :, None] * means[None]) / n_g[None, :, None]  # (S, G, C)
    lmat = _contrast_matrix(g)
    if attributes is not None and attributes.shape[1] >= 2:
        extra = [_marginal_rows(attributes[present, a]) for a in range(attributes.shape[1])]
        lmat = np.vstack([lmat, *extra])
    rows = lmat.shape[0]
    d = lmat @ means
    w = np.einsum("gh,shc->sgc", lmat, resid).reshape(s_count, rows * cols)
    corr = s_count / (s_count - 1.0) if s_count > 1 else 1.0
    cov = corr * (w.T @ w)
    var = np.diag(cov).copy()
    flat = np.abs(var) <= EPS * max(1.0, float(np.abs(units.values).max(initial=0.0)) ** 2)
    worst = bool(flat.any())
    kind = scale_of(units.values, scale)
    m_range = value_range(kind, max_difference)
    se_seen = np.sqrt(np.maximum(var, 0.0)).reshape(rows, cols)
    if worst:
        # no variation between seeds: the test keeps what the data show, every seed agreeing;
        # the interval and the critical value assume the worst-case variance of the metric's
        # scale (the exact bound of :mod:`.bounds` is the tight one for such data)
        wc = worst_case_variance(units.values, kind, m_range) * (lmat @ _unit_cov(counts) @ lmat.T)
        wc_full = np.kron(wc, np.eye(cols))
        cov[flat, :] = 0.0
        cov[:, flat] = 0.0
        cov[flat, flat] = np.diag(wc_full)[flat]
        var = np.diag(cov).copy()
    se = np.sqrt(np.maximum(var, EPS)).reshape(rows, cols)
    spans = [(0, g * cols)] + ([(g * cols, rows * cols)] if rows > g else [])
    null_maxes = []
    tests = []  # per family, the test's sorted null draws: (configurations, draws)
    for f, (lo, hi) in enumerate(spans):
        if worst or s_count >= BOOTSTRAP_SEEDS or s_count < BOOTSTRAP_MIN_SEEDS:
            shift, se_star = null_parts(
                cov[lo:hi, lo:hi], se.ravel()[lo:hi], max(1, s_count - 1), draws, seed
            )
        else:
            shift, se_star = bootstrap_parts(w[:, lo:hi], draws, seed)
        null_maxes.append(max_t(shift, se_star))
        lfc = (
            least_favourable(shift, se_star, se[:g], threshold, _contrast_matrix(g))
            if f == 0
            else None
        )
        tests.append(
            null_maxes[-1][None, :] if lfc is None else np.vstack([null_maxes[-1][None, :], lfc])
        )
        del shift, se_star
    share = alpha / len(spans)
    ks = [quantile(m, 1.0 - share) for m in null_maxes]
    # with no variation seen, the test and the lower end both assume the worst case: n seeds
    # that agree do not show a gap to the last digit (one seed refusing one group is not
    # [1, 1]; six seeds all showing 0.2 are likely under Δ = 0.1)
    k_star = largest_k(d, se if worst else se_seen, threshold, g)
    p = min(
        1.0,
        len(spans) * min(threshold_tail(t, float(k)) for t, k in zip(tests, k_star, strict=True)),
    )
    estimate = float(np.max(means.max(axis=0) - means.min(axis=0)))
    # the lower end is the threshold test's (its critical values, at most the interval's k):
    # above τ exactly when the test rejects, so a FAIL never shows a lower end at or under τ
    kt = [min(k, threshold_quantile(t, 1.0 - share)) for k, t in zip(ks, tests, strict=True)]
    lower = _interval(d, se if worst else se_seen, kt, g)[0]
    upper = _interval(d, se, ks, g)[1]
    agreed = (
        agreement_test(
            units.values,
            units.seed,
            units.group,
            units.n_seeds,
            units.n_groups,
            threshold,
            alpha,
            m_range,
        )
        if worst
        else None
    )
    if agreed is not None:
        # every seed shows the same pattern: the exact test of :mod:`.bounds` replaces the
        # worst-case one (it needs no variance), and its lower end is the one shown
        p, lower = agreed.p_value, agreed.lower
    elif worst and m_range is None:
        # a contrast without variation and no range: seeds the suite did not draw may differ
        # by any amount, so the data bound the gap on neither side
        p, lower, upper = 1.0, 0.0, float("inf")
    if kind == Scale.RATE:
        upper = min(upper, 1.0)  # a gap between rates cannot exceed 1
    lower = min(lower, upper)  # rounding (a contrast of 1 + 2e-16) must not invert the interval
    return GapInference(
        groups=present.astype(np.int64),
        means=means,
        contrast=d,
        se=se,
        cov=cov,
        lmat=lmat,
        seeds=s_count,
        critical=ks[0],
        estimate=estimate,
        interval=(lower, upper),
        p_threshold=p,
        worst_case=worst,
        null_maxes=tuple(null_maxes),
        test_draws=tuple(tests),
        residuals=resid,
        levels=_levels(units)[present],
        scale=kind,
        value_range=m_range,
    )


def upper_at(inf: GapInference, alpha: float) -> float:
    """The studentized simultaneous upper bound of Δ at level 1 − α (α split evenly over
    the families of contrasts, as in :func:`infer_gap`), clipped to 1 for rates."""
    share = alpha / len(inf.null_maxes)
    ks = [quantile(m, 1.0 - share) for m in inf.null_maxes]
    upper = _interval(inf.contrast, inf.se, ks, int(inf.means.shape[0]))[1]
    if inf.worst_case and inf.value_range is None:
        return float("inf")  # no range, a contrast without variation: no bound (infer_gap)
    return min(upper, 1.0) if inf.scale == Scale.RATE else upper


def threshold_critical(inf: GapInference, alpha: float) -> FloatArray:
    """Per family, the threshold test's critical value at level α (Bonferroni over families):
    the largest 1 − α quantile over H0's least favourable configurations."""
    share = alpha / len(inf.test_draws)
    return np.array([threshold_quantile(t, 1.0 - share) for t in inf.test_draws])


def _levels(units: Units) -> FloatArray:
    n = np.bincount(units.group, minlength=units.n_groups).astype(np.float64)
    cols = units.values.shape[1]
    tot = np.stack(
        [
            np.bincount(units.group, weights=units.values[:, c], minlength=units.n_groups)
            for c in range(cols)
        ],
        axis=1,
    )
    out: FloatArray = tot / np.maximum(n, 1.0)[:, None]
    return out
