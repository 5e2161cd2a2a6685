"""Exact upper bounds of a gap from the seeds whose variants disagree.

For any metric, the gap between two groups' true means is the mean over seeds of the
within-seed difference, so Δ = max_g μ_g − min_g μ_g ≤ E[R_s], where R_s is seed s's range
over its groups (the largest over columns for multi-column metrics). When R_s lies in
[0, M], E[R_s] ≤ M · P(R_s > 0): the share of *discordant* seeds bounds the gap with no
multiplicity over groups or columns. The exact one-sided Clopper–Pearson bound of that share
from k discordant seeds of n is 1 − α^(1/n) at k = 0 (≈ 3/n at α = 0.05): 0.042 at n = 70.

* rates: M = 1, exact (valid for every app, however noisy; tight for deterministic ones).
* counts: a count has no upper limit, so M is a *stated* range: the larger of 1 (a count that
  changes changes by at least one) and the widest spread of the metric's values over the
  suite's variants. The bound assumes no seed's groups differ by more than that.

A cluster bootstrap of n identical zeros says [0, 0] for any n; this bound never does.
Pure numpy/scipy, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta

__all__ = ["DiscordanceBound", "clopper_pearson_upper", "discordance_bound", "seed_ranges"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# a within-seed difference smaller than this (relative to the values' size) is rounding
_TOLERANCE = 1e-9


def clopper_pearson_upper(k: int, n: int, alpha: float = 0.05) -> float:
    """The exact one-sided 1 − α upper confidence bound of a binomial share from k of n;
    1 with no trial."""
    if n <= 0 or k >= n:
        return 1.0
    if k <= 0:
        return float(1.0 - alpha ** (1.0 / n))
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


@dataclass(frozen=True)
class DiscordanceBound:
    """The seeds' disagreement and the gap bound that follows from it."""

    seeds: int  # seeds holding at least two groups
    discordant: int  # of them, seeds whose groups' values differ
    share_bound: float  # Clopper–Pearson upper bound of the discordant share
    spread: float  # M: the stated largest within-seed range (1 for rates)
    bound: float  # share_bound × spread: the upper bound of Δ
    mean_range: float  # the seeds' mean range, E[R_s]'s estimate

    @property
    def deterministic(self) -> bool:
        return self.seeds > 0 and self.discordant == 0


def seed_ranges(values: FloatArray, seed: IntArray, group: IntArray,
                n_seeds: int, n_groups: int) -> tuple[FloatArray, FloatArray]:
    """Per contrast seed (holding ≥ 2 groups): the range over its groups' means, the largest
    over columns; and the spread of all values (per column max − min, the largest)."""
    cols = values.shape[1]
    cell = seed * n_groups + group
    size = n_seeds * n_groups
    counts = np.bincount(cell, minlength=size).reshape(n_seeds, n_groups)
    sums = np.stack([np.bincount(cell, weights=values[:, c], minlength=size)
                     for c in range(cols)], axis=-1).reshape(n_seeds, n_groups, cols)
    has = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / np.maximum(counts, 1)[:, :, None]
    hi = np.where(has[:, :, None], means, -np.inf).max(axis=1)
    lo = np.where(has[:, :, None], means, np.inf).min(axis=1)
    keep = has.sum(axis=1) >= 2
    ranges = (hi - lo)[keep].max(axis=1) if cols else np.zeros(int(keep.sum()))
    spread = (values.max(axis=0) - values.min(axis=0)) if values.shape[0] else np.zeros(1)
    return np.asarray(ranges, dtype=np.float64), np.asarray(spread, dtype=np.float64)


def discordance_bound(values: FloatArray, seed: IntArray, group: IntArray, n_seeds: int,
                      n_groups: int, alpha: float, scale: str) -> DiscordanceBound | None:
    """The exact bound of Δ from the seeds' disagreement; None with no contrast seed.

    ``values`` (V, C) are variant values (repeats averaged), one row per variant."""
    ranges, spread = seed_ranges(values, seed, group, n_seeds, n_groups)
    n = int(ranges.shape[0])
    if n == 0:
        return None
    size = max(1.0, float(np.abs(values).max(initial=0.0)))
    k = int(np.count_nonzero(ranges > _TOLERANCE * size))
    share = clopper_pearson_upper(k, n, alpha)
    m = 1.0 if scale == "rate" else max(1.0, float(spread.max(initial=0.0)))
    return DiscordanceBound(seeds=n, discordant=k, share_bound=share, spread=m,
                            bound=share * m, mean_range=float(ranges.mean()))
