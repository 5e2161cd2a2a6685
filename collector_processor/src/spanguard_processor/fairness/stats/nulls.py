"""Null distributions of the contrasts' statistics and their critical values.

:func:`~.inference.infer_gap` needs, per family of contrasts, draws of the studentized shift
(d* − d̂, se*) under the null: from a multivariate t on the seeds' degrees of freedom
(:func:`null_parts`) or from the studentized seed-cluster bootstrap (:func:`bootstrap_parts`).
From them come the sorted draws of max |T| (:func:`max_t`, the simultaneous interval's k) and
of the threshold test's statistic at H0's least favourable configurations
(:func:`least_favourable`); :func:`threshold_quantile` and :func:`threshold_tail` turn those
into the test's critical value and p-value. Pure numpy, no I/O.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EPS",
    "bootstrap_parts",
    "least_favourable",
    "max_t",
    "null_parts",
    "quantile",
    "threshold_quantile",
    "threshold_tail",
]

FloatArray = NDArray[np.float64]

EPS = 1e-12


def null_parts(
    cov: FloatArray, se: FloatArray, df: int, draws: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """Draws of (d* − d̂, se*) under the multivariate t: Z ~ N(0, cov) and se·sqrt(χ²_df/df)."""
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((draws, cov.shape[0])) @ root.T
    scale = np.sqrt(rng.chisquare(df, size=draws) / df)
    return z, se[None, :] * scale[:, None]


def bootstrap_parts(w: FloatArray, draws: int, seed: int) -> tuple[FloatArray, FloatArray]:
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
        shift[start : start + b] = sh
        se_star[start : start + b] = np.sqrt(np.maximum(var, 0.0))
    return shift, se_star


def max_t(shift: FloatArray, se_star: FloatArray) -> FloatArray:
    """Sorted draws of max_j |d*_j − d̂_j| / se*_j (a zero shift counts 0, a zero se* ∞)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(shift) / se_star
    t = np.where(np.abs(shift) <= EPS, 0.0, np.nan_to_num(t, nan=0.0, posinf=np.inf))
    return np.sort(t.max(axis=1))


#: Element operations the least-favourable search may spend per metric (a few seconds).
_LFC_WORK = 1_000_000_000


def least_favourable(
    shift: FloatArray, se_star: FloatArray, se: FloatArray, tau: float, lmat: FloatArray
) -> FloatArray | None:
    """Null draws of the test statistic (the first family of ``inference.largest_k``) at the
    least favourable configurations of H0: Δ ≤ τ, sorted per configuration: (configurations,
    draws). ``lmat`` (G × G) is the groups' contrast matrix, ``shift`` and ``se_star`` the
    family's null draws.

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
    g, cols = lmat.shape[0], se.shape[1]
    # memory of one configuration's pair array, and the work of all 2(G − 1) of them: beyond
    # either (e.g. 135 intersectional groups: ~10^10 operations, minutes) max-|t| is used
    if draws * g * g * cols > 50_000_000 or draws * g * g * cols * 2 * (g - 1) > _LFC_WORK:
        return None
    order = np.argsort(-se[:g], axis=0, kind="stable")  # (G, C): least precise first
    sh = shift.reshape(draws, g, cols)
    ss = np.maximum(se_star.reshape(draws, g, cols), EPS)
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


def quantile(sorted_draws: FloatArray, level: float) -> float:
    b = sorted_draws.shape[0]
    index = min(b - 1, max(0, math.ceil(level * (b + 1)) - 1))
    return float(sorted_draws[index])


def _tail(sorted_draws: FloatArray, k_star: float) -> float:
    if k_star <= 0.0:
        return 1.0
    hits = sorted_draws.shape[0] - int(np.searchsorted(sorted_draws, k_star, side="left"))
    return (1.0 + hits) / (1.0 + sorted_draws.shape[0])


def threshold_quantile(draws: FloatArray, level: float) -> float:
    """Row 0 holds max |T| (valid at every configuration: every event needs a contrast
    outside its simultaneous interval), rows 1… the least favourable configurations; either
    critical value is valid, so the smaller is used."""
    k = quantile(draws[0], level)
    if draws.shape[0] > 1:
        k = min(k, max(quantile(row, level) for row in draws[1:]))
    return k


def threshold_tail(draws: FloatArray, k_star: float) -> float:
    """The p-value matching ``threshold_quantile``: both rows' tails are monotone in k*."""
    p = _tail(draws[0], k_star)
    if draws.shape[0] > 1:
        p = min(p, max(_tail(row, k_star) for row in draws[1:]))
    return p
