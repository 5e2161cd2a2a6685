"""Within-seed permutation tests of "group labels do not matter" for the max-minus-min gap.

Group labels are shuffled among the records of each seed (the counterfactual design makes them
exchangeable under the null). Three ways to the same p-value, by suite size: exact enumeration
of every labelling (:func:`exact_permutation_p`), Monte Carlo permutations
(:func:`permutation_p`, exact in distribution), and for very large suites the normal
approximation to that same permutation distribution (:func:`permutation_covariance`, its exact
covariance summed over independent seeds, and :func:`normal_permutation_p`). Pure numpy, no I/O.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import NDArray

from .seeds import Design, centred, gap_of

__all__ = [
    "EXACT_LABELLINGS",
    "exact_permutation_p",
    "normal_permutation_p",
    "permutation_covariance",
    "permutation_p",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# float tolerance when comparing a permuted statistic with the observed one
_TIE = 1e-12


def _contrast_rows(design: Design, x: FloatArray) -> tuple[FloatArray, IntArray, IntArray]:
    e, keep = centred(design, x)
    order = np.argsort(design.seed[keep], kind="stable")
    return e[keep][order], design.seed[keep][order], design.group[keep][order]


def permutation_p(
    design: Design, x: FloatArray, observed: float, permutations: int, seed: int
) -> float:
    """Monte Carlo p-value of the gap under within-seed permutation of the group labels.

    ``(1 + #{gap* ≥ gap}) / (1 + P)``: valid at every P (the observed labelling counts as one
    permutation). Group sizes are fixed under within-seed permutation, so only sums change.
    """
    e, s, g = _contrast_rows(design, x)
    n = e.shape[0]
    if n == 0 or permutations <= 0:
        return 1.0
    n_groups = design.n_groups
    n_g = np.bincount(g, minlength=n_groups).astype(np.float64)
    rng = np.random.default_rng(seed)
    blocks = _blocks_by_size(s)
    step = max(1, min(permutations, 2_000_000 // n))
    hits = 0
    done = 0
    limit = observed - _TIE * max(1.0, abs(observed))
    while done < permutations:
        b = min(step, permutations - done)
        perm = np.empty((b, n), dtype=np.int64)
        for positions in blocks:  # shuffle every seed's rows among themselves
            shuffled = rng.permuted(np.broadcast_to(positions, (b, *positions.shape)), axis=2)
            perm[:, positions.ravel()] = shuffled.reshape(b, -1)
        cells = (np.arange(b, dtype=np.int64) * n_groups)[:, None] + g[None, :]
        means = np.empty((b, n_groups, e.shape[1]))
        for c in range(e.shape[1]):
            sums = np.bincount(
                cells.ravel(), weights=e[perm, c].ravel(), minlength=b * n_groups
            ).reshape(b, n_groups)
            with np.errstate(invalid="ignore", divide="ignore"):
                means[:, :, c] = np.where(n_g > 0, sums / n_g, np.nan)
        hits += int(np.count_nonzero(gap_of(means) >= limit))
        done += b
    return (hits + 1.0) / (permutations + 1.0)


# enumerate every within-seed labelling when there are at most this many
EXACT_LABELLINGS = 20_000


def exact_permutation_p(design: Design, x: FloatArray, observed: float) -> float | None:
    """The exact within-seed permutation p-value, enumerating every distinct labelling of
    every seed, when there are at most ``EXACT_LABELLINGS`` of them; otherwise None."""
    e, s, g = _contrast_rows(design, x)
    if e.shape[0] == 0:
        return None
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    bounds = list(zip(starts.tolist(), np.r_[starts[1:], s.shape[0]].tolist(), strict=True))
    total = 1
    for lo, hi in bounds:
        labels = g[lo:hi].tolist()
        ways = math.factorial(len(labels))
        for c in np.unique(labels, return_counts=True)[1].tolist():
            ways //= math.factorial(c)
        total *= ways
        if total > EXACT_LABELLINGS:
            return None
    n_groups, cols = design.n_groups, e.shape[1]
    sums = np.zeros((1, n_groups, cols))
    for lo, hi in bounds:
        arrangements = sorted(set(itertools.permutations(g[lo:hi].tolist())))
        contrib = np.zeros((len(arrangements), n_groups, cols))
        for a, labels in enumerate(arrangements):
            np.add.at(contrib[a], np.asarray(labels), e[lo:hi])
        sums = (sums[:, None] + contrib[None]).reshape(-1, n_groups, cols)
    n_g = np.bincount(g, minlength=n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(n_g[None, :, None] > 0, sums / n_g[None, :, None], np.nan)
    limit = observed - _TIE * max(1.0, abs(observed))
    return float(np.count_nonzero(gap_of(means) >= limit) / means.shape[0])


def _blocks_by_size(sorted_seeds: IntArray) -> list[IntArray]:
    """Row positions of every seed, grouped by seed size: one (seeds, size) array per size."""
    starts = np.flatnonzero(np.r_[True, sorted_seeds[1:] != sorted_seeds[:-1]])
    sizes = np.diff(np.r_[starts, sorted_seeds.shape[0]])
    blocks = []
    for size in np.unique(sizes):
        first = starts[sizes == size]
        blocks.append(first[:, None] + np.arange(size)[None, :])
    return blocks


def permutation_covariance(design: Design, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Exact covariance of the adjusted group means under within-seed permutation.

    Returns ``(cov, n_g)`` with cov of shape (G·C, G·C), ordered group-major. Within a seed of
    size n with finite-population covariance S (C × C) and group counts c, the group sums have
    covariance S ⊗ (diag(c) − c cᵀ / n); seeds are independent, so the covariances add.
    """
    e, s, g = _contrast_rows(design, x)
    n_groups, cols = design.n_groups, e.shape[1]
    if e.shape[0] == 0:
        return np.zeros((n_groups * cols, n_groups * cols)), np.zeros(n_groups)
    seeds, local = np.unique(s, return_inverse=True)
    k = seeds.shape[0]
    size = np.bincount(local, minlength=k).astype(np.float64)
    cnt = np.bincount(local * n_groups + g, minlength=k * n_groups).reshape(k, n_groups)
    cnt = cnt.astype(np.float64)
    prod = (e[:, :, None] * e[:, None, :]).reshape(-1, cols * cols)
    scat = (
        np.stack(
            [np.bincount(local, weights=prod[:, j], minlength=k) for j in range(cols * cols)],
            axis=1,
        ).reshape(k, cols, cols)
        / np.maximum(size - 1.0, 1.0)[:, None, None]
    )
    diag_part = np.einsum("sab,sg->gab", scat, cnt)
    outer = np.einsum("sab,sg,sh->gahb", scat / size[:, None, None], cnt, cnt)
    cov = -outer
    for grp in range(n_groups):
        cov[grp, :, grp, :] += diag_part[grp]
    n_g = cnt.sum(axis=0)
    scale = np.where(n_g > 0, 1.0 / np.maximum(n_g, 1.0), 0.0)
    cov = cov * scale[:, None, None, None] * scale[None, None, :, None]
    return cov.reshape(n_groups * cols, n_groups * cols), n_g


def normal_permutation_p(
    cov: FloatArray, n_g: FloatArray, cols: int, observed: float, draws: int, seed: int
) -> float:
    """p-value of the gap from the normal approximation to the permutation distribution."""
    groups = n_g.shape[0]
    if not np.any(cov):
        return 1.0 if observed <= _TIE else 1.0 / (draws + 1.0)
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    rng = np.random.default_rng(seed)
    hits = 0
    limit = observed - _TIE * max(1.0, abs(observed))
    for start in range(0, draws, 10_000):
        b = min(10_000, draws - start)
        z = rng.standard_normal((b, cov.shape[0])) @ root.T
        means = z.reshape(b, groups, cols)
        means[:, n_g == 0, :] = np.nan
        hits += int(np.count_nonzero(gap_of(means) >= limit))
    return (hits + 1.0) / (draws + 1.0)
