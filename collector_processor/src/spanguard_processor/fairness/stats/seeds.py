"""The statistics of a counterfactual suite: pure numpy, no I/O.

The seed (one prompt template instantiated for every group) is the unit of analysis. Every
record's value is centred on its seed's mean, so a group's *adjusted mean* is built only from
within-seed contrasts; on a balanced suite (every seed holds every group equally often) the gap
of adjusted means equals the gap of pooled group means that fairtrace reports.

* Intervals: seed-cluster bootstrap (seeds drawn with replacement), bias-corrected percentile
  interval at the stated level, widened if needed so that it always contains the estimate.
* p-values: within-seed permutation of group labels for the max-minus-min statistic, in
  :mod:`.permutation` (exact enumeration, Monte Carlo, or the normal approximation).
* Multiplicity: Holm (for the gate) and Benjamini–Hochberg (for reports).
* Power is elsewhere: the design's MDE in :mod:`.power` (``design_mde``), the measured one
  in :mod:`.precision`.

See docs/fairness.md for the formulas and the reasons behind them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from ...common.stats import holm

__all__ = [
    "Design",
    "GapEstimate",
    "benjamini_hochberg",
    "bias_corrected_interval",
    "bootstrap_seed_counts",
    "build_design",
    "centred",
    "gap_estimate",
    "gap_of",
    "holm",
    "seed_aggregates",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Design:
    """Which seed and group every record belongs to (records already filtered to valid ones)."""

    seed: IntArray  # (n,) in [0, n_seeds)
    group: IntArray  # (n,) in [0, n_groups)
    n_seeds: int
    n_groups: int

    @property
    def n(self) -> int:
        return int(self.seed.shape[0])


@dataclass(frozen=True)
class GapEstimate:
    """Adjusted group means (groups × columns) and the max-over-columns of max-minus-min."""

    means: FloatArray  # (G, C); NaN for a group without contrast data
    gap: float
    contrast_seeds: int
    groups_with_data: int


def build_design(
    seed: Sequence[int] | IntArray, group: Sequence[int] | IntArray, n_seeds: int, n_groups: int
) -> Design:
    return Design(
        np.asarray(seed, dtype=np.int64), np.asarray(group, dtype=np.int64), n_seeds, n_groups
    )


def centred(design: Design, x: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Values minus their seed mean, and which records sit in a seed with >= 2 groups."""
    n_s = np.bincount(design.seed, minlength=design.n_seeds).astype(np.float64)
    cols = x.shape[1]
    sums = np.stack(
        [np.bincount(design.seed, weights=x[:, c], minlength=design.n_seeds) for c in range(cols)],
        axis=1,
    )
    seed_mean = sums / np.maximum(n_s, 1.0)[:, None]
    present = np.zeros((design.n_seeds, design.n_groups), dtype=bool)
    present[design.seed, design.group] = True
    contrast_seed = present.sum(axis=1) >= 2
    return x - seed_mean[design.seed], contrast_seed[design.seed]


def seed_aggregates(design: Design, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per seed and group: the sums of centred values (S, G, C) and record counts (S, G).

    Seeds holding a single group carry no within-seed contrast and get zero weight. The one
    seed-cluster sum of the package: the estimate, the permutation tests and the contrasts of
    :mod:`.inference` (on variant means) all start from it.
    """
    e, keep = centred(design, x)
    s, g = design.seed[keep], design.group[keep]
    cell = s * design.n_groups + g
    size = design.n_seeds * design.n_groups
    counts = np.bincount(cell, minlength=size).astype(np.float64)
    sums = np.stack(
        [np.bincount(cell, weights=e[keep, c], minlength=size) for c in range(x.shape[1])], axis=1
    )
    shaped: FloatArray = sums.reshape(design.n_seeds, design.n_groups, -1).astype(np.float64)
    return shaped, counts.reshape(design.n_seeds, design.n_groups)


def gap_of(means: FloatArray) -> FloatArray:
    """max − min over groups (axis −2), ignoring NaN groups, then max over columns (axis −1)."""
    with np.errstate(invalid="ignore"):
        hi = np.fmax.reduce(means, axis=-2)
        lo = np.fmin.reduce(means, axis=-2)
    spread = np.nan_to_num(hi - lo, nan=0.0)
    return np.asarray(spread.max(axis=-1), dtype=np.float64)


def gap_estimate(sums: FloatArray, counts: FloatArray) -> GapEstimate:
    total = sums.sum(axis=0)  # (G, C)
    n_g = counts.sum(axis=0)  # (G,)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(n_g[:, None] > 0, total / n_g[:, None], np.nan)
    contrast = int(np.count_nonzero(counts.sum(axis=1)))
    return GapEstimate(means, float(gap_of(means)), contrast, int(np.count_nonzero(n_g)))


# --- bootstrap ----------------------------------------------------------------------------


def bootstrap_seed_counts(
    n_seeds: int, resamples: int, seed: int, chunk: int = 0
) -> Iterator[FloatArray]:
    """Yield (chunk, S) matrices: how often each seed is drawn in each bootstrap resample.

    Chunked so memory stays bounded (about 8 MB per chunk); identical for identical arguments.
    """
    rng = np.random.default_rng(seed)
    step = chunk or max(1, min(resamples, 1_000_000 // max(n_seeds, 1)))
    done = 0
    while done < resamples:
        b = min(step, resamples - done)
        draws = rng.integers(0, n_seeds, size=(b, n_seeds))
        draws += (np.arange(b, dtype=np.int64) * n_seeds)[:, None]  # row offsets: one bincount
        # float32 counts are exact (< 2^24) and halve the memory traffic of the products
        yield (
            np.bincount(draws.ravel(), minlength=b * n_seeds).reshape(b, n_seeds).astype(np.float32)
        )
        done += b


def bias_corrected_interval(
    draws: FloatArray, estimate: float, level: float = 0.95
) -> tuple[float, float]:
    """Efron's bias-corrected percentile interval, widened to contain the estimate.

    max-minus-min is biased upwards (noise always widens a range), so plain percentiles can
    exclude the estimate; the bias correction shifts the quantiles by the share of draws below it.
    """
    values = np.sort(np.asarray(draws, dtype=np.float64))
    b = values.shape[0]
    if b == 0:
        return (estimate, estimate)
    below = (np.count_nonzero(values < estimate) + 0.5 * np.count_nonzero(values == estimate)) / b
    below = min(max(below, 1.0 / (b + 1)), b / (b + 1.0))
    z0 = _NORMAL.inv_cdf(below)
    z = _NORMAL.inv_cdf(0.5 + level / 2.0)
    lo_q = _NORMAL.cdf(2 * z0 - z)
    hi_q = _NORMAL.cdf(2 * z0 + z)
    lo = float(np.quantile(values, lo_q))
    hi = float(np.quantile(values, hi_q))
    return (min(lo, estimate), max(hi, estimate))


# --- multiplicity -------------------------------------------------------------------------


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg step-up adjusted p-values (q-values); None entries stay None."""
    index = [i for i, p in enumerate(p_values) if p is not None]
    m = len(index)
    ordered = sorted(index, key=lambda i: (p_values[i], i))
    out: list[float | None] = [None] * len(p_values)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = ordered[rank]
        p = p_values[i]
        assert p is not None
        running = min(running, p * m / (rank + 1))
        out[i] = running
    return out
