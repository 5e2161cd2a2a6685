"""The power of the threshold test: its minimum detectable effect on a suite's design.

Given a fitted :class:`~.inference.GapInference`, :func:`min_detectable_effect` plants a true
gap in the least precisely measured group, simulates the test on this design (resampling the
seeds' own residuals, or drawing from the contrasts' normal model) and bisects on the gap until
the test detects it with the asked power. Pure numpy, no I/O.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .inference import GapInference, largest_k, test_critical
from .nulls import EPS

__all__ = ["RESAMPLE_SEEDS", "min_detectable_effect"]

FloatArray = NDArray[np.float64]

# below this many contrast seeds the MDE simulation resamples the seeds' own residuals
# (skewness, discreteness); above it the normal model of the contrasts is used
RESAMPLE_SEEDS = 200


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
        se = np.sqrt(np.maximum(var, EPS)).reshape(sims, rows, cols)
        stars = largest_k(d + planted, se, threshold, g)  # (sims, families)
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
