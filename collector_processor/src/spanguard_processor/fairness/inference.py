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
statistic at H0's least favourable configurations (``_least_favourable``); its p-value is the
smallest α at which it would reject.

See docs/fairness.md for the reasoning and bench/bench_calibration.py for the simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "GapInference",
    "Units",
    "infer_gap",
    "min_detectable_effect",
    "scale_of",
    "test_critical",
    "variant_units",
    "worst_case_variance",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# draws of the max-|t| null distribution: Monte Carlo error of k at 95% is about ±0.02
NULL_DRAWS = 10_000
# below this many contrast seeds the MDE simulation resamples the seeds' own residuals
# (skewness, discreteness); above it the normal model of the contrasts is used
RESAMPLE_SEEDS = 200
# below this many contrast seeds the critical value comes from the studentized seed bootstrap
BOOTSTRAP_SEEDS = 1000
# ... and at least this many: with fewer, resamples of a handful of seeds degenerate (zero
# standard errors), so the multivariate t on the seeds' degrees of freedom is used
BOOTSTRAP_MIN_SEEDS = 10
_EPS = 1e-12


@dataclass(frozen=True)
class Units:
    """Per-variant means, the unit of analysis; ``repeats`` counts the records averaged."""

    values: FloatArray  # (V, C)
    seed: IntArray  # (V,)
    group: IntArray  # (V,)
    repeats: IntArray  # (V,)
    n_seeds: int
    n_groups: int


def variant_units(variant: IntArray, seed: IntArray, group: IntArray, x: FloatArray,
                  n_variants: int, n_seeds: int, n_groups: int) -> Units:
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
    return Units(means, v_seed[has], v_group[has], counts[has].astype(np.int64), n_seeds,
                 n_groups)


def scale_of(values: FloatArray, declared: str | None = None) -> str:
    """A metric's scale: "rate" (values in [0, 1]), "count" (values ≥ 0) or "real"; the
    metric's declared scale, else inferred from its values."""
    if declared is not None:
        return declared
    if values.size == 0 or (values.min() >= 0.0 and values.max() <= 1.0):
        return "rate"
    return "count" if values.min() >= 0.0 else "real"


def worst_case_variance(values: FloatArray, scale: str = "rate") -> float:
    """The variance assumed when the data show none: 1/4 (a rate at 0.5) for rates; otherwise
    the larger of the values' mean (a Poisson variance) and variance, at least 1."""
    if scale == "rate":
        return 0.25
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
    interval: tuple[float, float]  # simultaneous 1 − α interval of Δ
    p_threshold: float  # p-value of H0: Δ ≤ τ
    worst_case: bool  # some contrast showed no variation: worst-case variance used
    null_maxes: tuple[FloatArray, ...]  # per family, sorted draws of max |T| under H0
    test_draws: tuple[FloatArray, ...]  # per family, (configurations, draws): the threshold
    # test's statistic at H0's least favourable configurations (max |T| for attributes), sorted
    residuals: FloatArray  # (S, G, C) per-seed residuals of the group means (for the MDE)
    levels: FloatArray  # (G, C) each group's raw mean (their average: the MDE's base rate)
    scale: str  # "rate", "count" or "real"

    @property
    def width(self) -> int:
        return int(self.contrast.size)


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
    s, g, x = units.seed, units.group, units.values
    n_s = np.bincount(s, minlength=units.n_seeds).astype(np.float64)
    cols = x.shape[1]
    e = np.empty_like(x)
    for c in range(cols):
        tot = np.bincount(s, weights=x[:, c], minlength=units.n_seeds)
        e[:, c] = x[:, c] - (tot / np.maximum(n_s, 1.0))[s]
    cells = s * units.n_groups + g
    size = units.n_seeds * units.n_groups
    counts = np.bincount(cells, minlength=size).astype(np.float64).reshape(units.n_seeds, -1)
    sums = np.stack([np.bincount(cells, weights=e[:, c], minlength=size) for c in range(cols)],
                    axis=1).reshape(units.n_seeds, units.n_groups, cols)
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


def _null_parts(cov: FloatArray, se: FloatArray, df: int, draws: int,
                seed: int) -> tuple[FloatArray, FloatArray]:
    """Draws of (d* − d̂, se*) under the multivariate t: Z ~ N(0, cov) and se·sqrt(χ²_df/df)."""
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((draws, cov.shape[0])) @ root.T
    scale = np.sqrt(rng.chisquare(df, size=draws) / df)
    return z, se[None, :] * scale[:, None]


def _null_max(cov: FloatArray, se: FloatArray, df: int, draws: int, seed: int) -> FloatArray:
    """Sorted draws of max_j |Z_j / se_j| / sqrt(χ²_df / df), Z ~ N(0, cov)."""
    z, se_star = _null_parts(cov, se, df, draws, seed)
    return np.sort((np.abs(z) / se_star).max(axis=1))


def _bootstrap_parts(w: FloatArray, draws: int, seed: int) -> tuple[FloatArray, FloatArray]:
    """Draws of (d* − d̂, se*) over seed-cluster bootstrap resamples (linearised: exact for
    balanced suites), each with its own standard errors (the bootstrap-t)."""
    s = w.shape[0]
    rng = np.random.default_rng(seed)
    corr = s / (s - 1.0)
    shift = np.empty((draws, w.shape[1]))
    se_star = np.empty((draws, w.shape[1]))
    step = max(1, min(draws, 2_000_000 // max(s * w.shape[1], 1)))
    w2 = w * w
    for start in range(0, draws, step):
        b = min(step, draws - start)
        picks = rng.integers(0, s, size=(b, s)) + (np.arange(b) * s)[:, None]
        n = np.bincount(picks.ravel(), minlength=b * s).reshape(b, s).astype(np.float64)
        sh = n @ w
        var = corr * (n @ w2 - sh * sh / s)
        shift[start:start + b] = sh
        se_star[start:start + b] = np.sqrt(np.maximum(var, 0.0))
    return shift, se_star


def _max_t(shift: FloatArray, se_star: FloatArray) -> FloatArray:
    """Sorted draws of max_j |d*_j − d̂_j| / se*_j (a zero shift counts 0, a zero se* ∞)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(shift) / se_star
    t = np.where(np.abs(shift) <= _EPS, 0.0, np.nan_to_num(t, nan=0.0, posinf=np.inf))
    return np.sort(t.max(axis=1))


def _bootstrap_max(w: FloatArray, d: FloatArray, draws: int, seed: int) -> FloatArray:
    """Sorted draws of max_j |d*_j − d̂_j| / se*_j over seed-cluster bootstrap resamples, each
    studentized by its own standard errors (the bootstrap-t): captures the skew of rates near 0
    or 1 and the noise of per-contrast variance estimates that a common-variance t misses."""
    del d
    return _max_t(*_bootstrap_parts(w, draws, seed))


#: Element operations the least-favourable search may spend per metric (a few seconds).
_LFC_WORK = 1_000_000_000


def _least_favourable(shift: FloatArray, se_star: FloatArray, se: FloatArray, tau: float,
                      g: int) -> FloatArray | None:
    """Null draws of the test statistic (``_k_star``'s first family) at the least favourable
    configurations of H0: Δ ≤ τ, sorted per configuration: (configurations, draws).

    The statistic's events are one-sided (|d̂_g| above τ, d̂_g − d̂_h above the pair bound),
    and inside H0 they cannot all sit at their boundary at once: Σ_g d_g = 0, and with one
    group τ above the others only that group's upper event (and its pairs) are at the
    boundary, the others' events are (τ − d)/se away. H0's extreme points are the
    configurations with m groups τ above the rest (m = 1 … G − 1); for each m the raised
    groups are the m least precise, or the m most precise, in every column. The test's
    critical value is the largest 1 − α quantile over them, instead of max-|t|'s quantile,
    which puts every one of the 2G one-sided events at its boundary at once. None when the
    draws would be too many to simulate (then max-|t|, conservative, is used)."""
    draws = shift.shape[0]
    cols = se.shape[1]
    # memory of one configuration's pair array, and the work of all 2(G − 1) of them: beyond
    # either (e.g. 135 intersectional groups: ~10^10 operations, minutes) max-|t| is used
    if draws * g * g * cols > 50_000_000 or draws * g * g * cols * 2 * (g - 1) > _LFC_WORK:
        return None
    lmat = _contrast_matrix(g)
    order = np.argsort(-se[:g], axis=0, kind="stable")  # (G, C): least precise first
    sh = shift.reshape(draws, g, cols)
    ss = np.maximum(se_star.reshape(draws, g, cols), _EPS)
    # the pair events' parts that do not depend on the configuration, computed once
    pair_shift = sh[:, :, None, :] - sh[:, None, :, :]  # (B, G, G, C)
    pair_inv = 1.0 / (ss[:, :, None, :] + ss[:, None, :, :])
    bound = tau * g / (g - 1)
    out = []
    for rank in (order, order[::-1]):
        for m in range(1, g):
            mu = np.zeros((g, cols))
            np.put_along_axis(mu, rank[:m], tau, axis=0)
            d = lmat @ mu
            single = ((np.abs(d[None] + sh) - tau) / ss).reshape(draws, -1).max(axis=1)
            gap = d[:, None, :] - d[None, :, :] - bound  # (G, G, C)
            pair = ((pair_shift + gap[None]) * pair_inv).reshape(draws, -1).max(axis=1)
            out.append(np.sort(np.maximum(single, pair)))
    return np.stack(out)


def _quantile(sorted_draws: FloatArray, level: float) -> float:
    b = sorted_draws.shape[0]
    index = min(b - 1, max(0, math.ceil(level * (b + 1)) - 1))
    return float(sorted_draws[index])


def _k_star(d: FloatArray, se: FloatArray, tau: float, g: int) -> FloatArray:
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
    main = np.maximum(single[..., :g, :].reshape(*lead, -1).max(axis=-1),
                      pair.reshape(*lead, -1).max(axis=-1))
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


def _tail(sorted_draws: FloatArray, k_star: float) -> float:
    if k_star <= 0.0:
        return 1.0
    hits = sorted_draws.shape[0] - int(np.searchsorted(sorted_draws, k_star, side="left"))
    return (1.0 + hits) / (1.0 + sorted_draws.shape[0])


def infer_gap(units: Units, threshold: float, alpha: float, seed: int = 0,
              draws: int = NULL_DRAWS, attributes: IntArray | None = None,
              scale: str | None = None) -> GapInference | None:
    """Contrasts, simultaneous interval of Δ and the test of Δ ≤ threshold; None with fewer
    than two groups holding within-seed contrasts. ``attributes`` (groups × attributes) gives
    each group's value index per attribute when groups combine several attributes; their
    contrasts form a second family, and α is split evenly (Bonferroni) between the two."""
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
    flat = np.abs(var) <= _EPS * max(1.0, float(np.abs(units.values).max(initial=0.0)) ** 2)
    worst = bool(flat.any())
    se_seen = np.sqrt(np.maximum(var, 0.0)).reshape(rows, cols)
    if worst:
        # no variation between seeds: the lower end (and the test) keep what the data show,
        # every seed agreeing; the upper end, the critical value and the MDE assume the
        # worst-case variance of the metric's scale, so "shown fair" needs more than agreement
        wc = worst_case_variance(units.values, scale_of(units.values, scale)) * (
            lmat @ _unit_cov(counts) @ lmat.T)
        wc_full = np.kron(wc, np.eye(cols))
        cov[flat, :] = 0.0
        cov[:, flat] = 0.0
        cov[flat, flat] = np.diag(wc_full)[flat]
        var = np.diag(cov).copy()
    se = np.sqrt(np.maximum(var, _EPS)).reshape(rows, cols)
    spans = [(0, g * cols)] + ([(g * cols, rows * cols)] if rows > g else [])
    null_maxes = []
    tests = []  # per family, the test's sorted null draws: (configurations, draws)
    for f, (lo, hi) in enumerate(spans):
        if worst or s_count >= BOOTSTRAP_SEEDS or s_count < BOOTSTRAP_MIN_SEEDS:
            shift, se_star = _null_parts(cov[lo:hi, lo:hi], se.ravel()[lo:hi],
                                         max(1, s_count - 1), draws, seed)
        else:
            shift, se_star = _bootstrap_parts(w[:, lo:hi], draws, seed)
        null_maxes.append(_max_t(shift, se_star))
        lfc = _least_favourable(shift, se_star, se[:g], threshold, g) if f == 0 else None
        tests.append(null_maxes[-1][None, :] if lfc is None
                     else np.vstack([null_maxes[-1][None, :], lfc]))
        del shift, se_star
    share = alpha / len(spans)
    ks = [_quantile(m, 1.0 - share) for m in null_maxes]
    k_star = _k_star(d, se_seen, threshold, g)
    p = min(1.0, len(spans) * min(_test_tail(t, float(k)) for t, k in zip(tests, k_star,
                                                                         strict=True)))
    estimate = float(np.max(means.max(axis=0) - means.min(axis=0)))
    lower = _interval(d, se_seen, ks, g)[0]
    upper = _interval(d, se, ks, g)[1]
    if scale_of(units.values, scale) == "rate":
        upper = min(upper, 1.0)  # a gap between rates cannot exceed 1
    lower = min(lower, upper)  # rounding (a contrast of 1 + 2e-16) must not invert the interval
    return GapInference(
        groups=present.astype(np.int64), means=means, contrast=d, se=se, cov=cov, lmat=lmat,
        seeds=s_count, critical=ks[0], estimate=estimate, interval=(lower, upper),
        p_threshold=p, worst_case=worst, null_maxes=tuple(null_maxes), test_draws=tuple(tests),
        residuals=resid,
        levels=_levels(units)[present], scale=scale_of(units.values, scale),
    )


def test_critical(inf: GapInference, alpha: float) -> FloatArray:
    """Per family, the threshold test's critical value at level α (Bonferroni over families):
    the largest 1 − α quantile over H0's least favourable configurations."""
    share = alpha / len(inf.test_draws)
    return np.array([_test_quantile(t, 1.0 - share) for t in inf.test_draws])


def _test_quantile(draws: FloatArray, level: float) -> float:
    """Row 0 holds max |T| (valid at every configuration: every event needs a contrast
    outside its simultaneous interval), rows 1… the least favourable configurations; either
    critical value is valid, so the smaller is used."""
    k = _quantile(draws[0], level)
    if draws.shape[0] > 1:
        k = min(k, max(_quantile(row, level) for row in draws[1:]))
    return k


def _test_tail(draws: FloatArray, k_star: float) -> float:
    """The p-value matching ``_test_quantile``: both rows' tails are monotone in k*."""
    p = _tail(draws[0], k_star)
    if draws.shape[0] > 1:
        p = min(p, max(_tail(row, k_star) for row in draws[1:]))
    return p


def _group_cov(inf: GapInference) -> FloatArray:
    """Covariance of the group means (G·C): the seeds' sandwich, or the worst case when the
    data show no variation (recovered from the contrasts' covariance)."""
    u = inf.residuals.reshape(inf.residuals.shape[0], -1)
    s_count = u.shape[0]
    vm: FloatArray = (s_count / max(s_count - 1.0, 1.0)) * (u.T @ u)
    if inf.worst_case:
        cols = inf.means.shape[1]
        pinv = np.linalg.pinv(np.kron(inf.lmat, np.eye(cols)))
        vm = pinv @ inf.cov @ pinv.T
    return vm


def _levels(units: Units) -> FloatArray:
    n = np.bincount(units.group, minlength=units.n_groups).astype(np.float64)
    cols = units.values.shape[1]
    tot = np.stack([np.bincount(units.group, weights=units.values[:, c],
                                minlength=units.n_groups) for c in range(cols)], axis=1)
    out: FloatArray = tot / np.maximum(n, 1.0)[:, None]
    return out


def _spread(scale: str, level: float, delta: float) -> tuple[float, float]:
    """(direction, sd factor) of planting a gap ``delta`` on a group at ``level``: a rate's
    variance p(1 − p) and a count's (Poisson) variance move with the mean."""
    if scale == "rate" and 0.0 < level < 1.0:
        sign = 1.0 if level <= 0.5 else -1.0
        moved = min(1.0, max(0.0, level + sign * delta))
        return sign, math.sqrt(max(moved * (1.0 - moved), 1e-6) / (level * (1.0 - level)))
    if scale == "count" and level > 0.0:
        return 1.0, math.sqrt((level + delta) / level)
    return 1.0, 1.0


def min_detectable_effect(inf: GapInference, threshold: float, alpha: float,
                          power: float = 0.8, sims: int = 400, seed: int = 0,
                          upper: float | None = None) -> float | None:
    """The true gap Δ (planted in the group and column measured least precisely) that this
    test detects with ``power``, by simulating the test on this design and bisecting on Δ.

    Fewer than ``RESAMPLE_SEEDS`` seeds: each simulated suite resamples the seeds' own contrast
    residuals (so skewed, discrete data keep their shape) and re-estimates the standard errors;
    more seeds, or no observed variation: contrasts drawn from their normal model. The same
    draws serve every Δ, so power is monotone in Δ and the bisection is deterministic.
    None when no gap up to ``upper`` (the scale's largest gap, e.g. 1 for rates) is detected
    with ``power``.
    """
    rows, cols = inf.contrast.shape
    g = inf.means.shape[0]
    ks = test_critical(inf, alpha)
    rng = np.random.default_rng(seed)
    target = int(np.argmax(inf.se[:g].ravel()))
    tg, tc = divmod(target, cols)
    # the planted group's noise scales by f(Δ): contrasts and their variances are linear and
    # quadratic in f, so each is kept as its parts (rest, planted group) and recombined per Δ
    base_rate = float(inf.levels[:, tc].mean())  # the column's rate over all groups
    star = np.zeros((g, cols), dtype=bool)
    star[tg, tc] = True
    if inf.seeds < RESAMPLE_SEEDS and not inf.worst_case:
        s_count = inf.seeds
        u = inf.residuals
        parts = [np.einsum("rg,sgc->src", inf.lmat, np.where(m, u, 0.0)).reshape(s_count, -1)
                 for m in (~star, star)]
        idx = rng.integers(0, s_count, size=(sims, s_count))
        drawn = [p[idx] for p in parts]  # (sims, S, R·C) each
        means = [d.mean(axis=1) for d in drawn]
        cen = [d - m[:, None, :] for d, m in zip(drawn, means, strict=True)]
        corr = s_count / (s_count - 1.0) if s_count > 1 else 1.0
        quad = [corr * (cen[0] ** 2).sum(axis=1), corr * 2.0 * (cen[0] * cen[1]).sum(axis=1),
                corr * (cen[1] ** 2).sum(axis=1)]
        base = [s_count * m for m in means]
    else:
        full = np.kron(inf.lmat, np.eye(cols))  # (R·C, G·C)
        vm = _group_cov(inf)
        vals, vecs = np.linalg.eigh(vm)
        z = rng.standard_normal((sims, vm.shape[0])) @ (vecs * np.sqrt(np.clip(vals, 0, None))).T
        flat = star.ravel()
        base = [np.where(flat, 0.0, z) @ full.T, np.where(flat, z, 0.0) @ full.T]

        def diag(f: float) -> FloatArray:
            scale = np.where(flat, f, 1.0)
            return np.asarray(np.einsum("ij,jk,ik->i", full, vm * np.outer(scale, scale), full))

        q0, q1, qm = diag(0.0), diag(1.0), diag(-1.0)
        quad = [np.broadcast_to(q0, (sims, q0.shape[0])),
                np.broadcast_to(q1 - qm, (sims, q0.shape[0])),
                np.broadcast_to((q1 + qm) / 2.0 - q0, (sims, q0.shape[0]))]

    def power_at(delta: float) -> float:
        sign, f = _spread(inf.scale, base_rate, delta)
        if inf.worst_case:
            f = 1.0
        d = (base[0] + f * base[1]).reshape(sims, rows, cols)
        planted = np.zeros((rows, cols))
        planted[:, tc] = sign * delta * inf.lmat[:, tg]  # moves every contrast
        var = quad[0] + f * quad[1] + f * f * quad[2]
        se = np.sqrt(np.maximum(var, _EPS)).reshape(sims, rows, cols)
        stars = _k_star(d + planted, se, threshold, g)  # (sims, families)
        return float(np.mean(np.any(stars > ks, axis=-1)))

    lo = threshold
    step = max(float(inf.se.max()), 1e-6)
    hi = threshold + step
    limit = upper if upper is not None else threshold + 1e6 * step
    while power_at(hi) < power:
        if hi >= limit:
            return None
        lo, hi = hi, min(limit, threshold + 2.0 * (hi - threshold))
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if power_at(mid) >= power:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-3 * max(1.0, abs(hi)):
            break
    return hi
