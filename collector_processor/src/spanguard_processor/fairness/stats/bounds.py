"""Exact bounds of a gap from the seeds whose variants disagree (or all agree).

For any metric, the gap between two groups' true means is the mean over seeds of the
within-seed difference, so Δ = max_g μ_g − min_g μ_g ≤ E[R_s], where R_s is seed s's range
over its groups (the largest over columns for multi-column metrics). When R_s lies in
[0, M], E[R_s] ≤ M · P(R_s > 0): the share of *discordant* seeds bounds the gap with no
multiplicity over groups or columns. The exact one-sided Clopper–Pearson bound of that share
from k discordant seeds of n is 1 − α^(1/n) at k = 0 (≈ 3/n at α = 0.05): 0.042 at n = 70.

* rates: M = 1, exact (valid for every app, however noisy; tight for deterministic ones).
* counts (and any other unbounded scale): M is the metric's ``max_difference`` *stated by the
  suite* — the largest per-seed difference between groups the metric can take. It is never
  read off the sampled seeds: an app whose bias lives in templates the suite did not draw
  shows k = 0 and any spread (docs/fairness.md, "what PASS means for counts"). With no stated
  range there is no such bound (:func:`value_range` is None) and the gate cannot PASS a count
  metric whose seeds all agree.

A cluster bootstrap of n identical zeros says [0, 0] for any n; this bound never does.

:func:`agreement_test` is the other side for such data: when every seed shows the same
within-seed pattern, the exact test of Δ ≤ τ and its lower bound (a FAIL needs seeds enough
that agreeing by chance is unlikely under Δ ≤ τ). Pure numpy/scipy, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...common.stats import clopper_pearson_upper
from ..vocabulary import Scale

__all__ = [
    "AgreementTest",
    "DiscordanceBound",
    "agreement_test",
    "clopper_pearson_upper",
    "discordance_bound",
    "seed_ranges",
    "value_range",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# a within-seed difference smaller than this (relative to the values' size) is rounding
_TOLERANCE = 1e-9


def value_range(scale: Scale, stated: float | None) -> float | None:
    """M, the largest per-seed difference between groups: 1 for rates (by scale), the suite's
    stated ``max_difference`` otherwise (None when it states none)."""
    if scale == Scale.RATE:
        return 1.0 if stated is None else min(1.0, stated)
    return stated


@dataclass(frozen=True)
class DiscordanceBound:
    """The seeds' disagreement and the gap bound that follows from it."""

    seeds: int  # seeds holding at least two groups
    discordant: int  # of them, seeds whose groups' values differ
    share_bound: float  # Clopper–Pearson upper bound of the discordant share
    spread: float  # M: the largest within-seed range (1 for rates, else the suite's statement)
    bound: float  # share_bound × spread: the upper bound of Δ
    mean_range: float  # the seeds' mean range, E[R_s]'s estimate

    @property
    def deterministic(self) -> bool:
        return self.seeds > 0 and self.discordant == 0


def _cell_sums(
    values: FloatArray, seed: IntArray, group: IntArray, n_seeds: int, n_groups: int
) -> tuple[IntArray, FloatArray]:
    """Per (seed, group) cell: how many variants, (S, G), and their values' sums, (S, G, C)."""
    cols = values.shape[1]
    cell = seed * n_groups + group
    size = n_seeds * n_groups
    counts = np.bincount(cell, minlength=size).reshape(n_seeds, n_groups)
    sums = np.stack(
        [np.bincount(cell, weights=values[:, c], minlength=size) for c in range(cols)], axis=-1
    ).reshape(n_seeds, n_groups, cols)
    return np.asarray(counts, dtype=np.int64), np.asarray(sums, dtype=np.float64)


def seed_ranges(
    values: FloatArray, seed: IntArray, group: IntArray, n_seeds: int, n_groups: int
) -> tuple[FloatArray, FloatArray]:
    """Per contrast seed (holding ≥ 2 groups): the range over its groups' means, the largest
    over columns; and the spread of all values (per column max − min, the largest)."""
    cols = values.shape[1]
    counts, sums = _cell_sums(values, seed, group, n_seeds, n_groups)
    has = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / np.maximum(counts, 1)[:, :, None]
    hi = np.where(has[:, :, None], means, -np.inf).max(axis=1)
    lo = np.where(has[:, :, None], means, np.inf).min(axis=1)
    keep = has.sum(axis=1) >= 2
    ranges = (hi - lo)[keep].max(axis=1) if cols else np.zeros(int(keep.sum()))
    spread = (values.max(axis=0) - values.min(axis=0)) if values.shape[0] else np.zeros(1)
    return np.asarray(ranges, dtype=np.float64), np.asarray(spread, dtype=np.float64)


def discordance_bound(
    values: FloatArray,
    seed: IntArray,
    group: IntArray,
    n_seeds: int,
    n_groups: int,
    alpha: float,
    spread: float | None,
) -> DiscordanceBound | None:
    """The exact bound of Δ from the seeds' disagreement; None with no contrast seed or no
    range M (``spread``, from :func:`value_range`).

    ``values`` (V, C) are variant values (repeats averaged), one row per variant."""
    ranges, _ = seed_ranges(values, seed, group, n_seeds, n_groups)
    n = int(ranges.shape[0])
    if n == 0 or spread is None:
        return None
    size = max(1.0, float(np.abs(values).max(initial=0.0)))
    k = int(np.count_nonzero(ranges > _TOLERANCE * size))
    share = clopper_pearson_upper(k, n, alpha)
    return DiscordanceBound(
        seeds=n,
        discordant=k,
        share_bound=share,
        spread=spread,
        bound=share * spread,
        mean_range=float(ranges.mean()),
    )


@dataclass(frozen=True)
class AgreementTest:
    """The exact threshold test when every contrast seed shows the same within-seed pattern.

    With n seeds agreeing on the pattern v (each group's value minus a reference group's, every
    column) whose widest pair difference is d (groups a, b, column c), the gap satisfies
    Δ ≥ E[D_ab] ≥ d·P(v) − M·(1 − P(v)) for the within-seed difference D_ab ≥ −M, so
    Δ ≤ τ forces P(v) ≤ (τ + M)/(d + M) =: q. The first seed names the pattern and the other
    n − 1 must repeat it: P(n seeds agree on a pattern this wide) ≤ q^(n−1) under H0, whatever
    the distribution, so p = q^(n−1) is an exact p-value. Inverting it, the one-sided 1 − α
    lower bound is d − π̂·(M + d), π̂ = 1 − α^(1/(n−1)) the Clopper–Pearson bound on the share
    of seeds that would differ from the pattern, from 0 of n − 1."""

    seeds: int
    gap: float  # d: the agreed pattern's widest difference
    spread: float  # M: 1 for rates, the stated range otherwise
    p_value: float
    lower: float  # the one-sided 1 − α lower bound of Δ (0 when it would be negative)


def agreement_test(
    values: FloatArray,
    seed: IntArray,
    group: IntArray,
    n_seeds: int,
    n_groups: int,
    threshold: float,
    alpha: float,
    spread: float | None,
) -> AgreementTest | None:
    """The exact test of Δ ≤ threshold when every contrast seed holds the same groups and shows
    the same within-seed differences (to rounding); None otherwise, and None without a range M
    (``spread``, from :func:`value_range`: never the sample's own spread, which a compensating
    bias in templates the suite did not draw exceeds)."""
    cols = values.shape[1]
    if spread is None:
        return None
    counts, sums = _cell_sums(values, seed, group, n_seeds, n_groups)
    has = counts > 0
    keep = has.sum(axis=1) >= 2
    if not keep.any() or cols == 0:
        return None
    has, counts, sums = has[keep], counts[keep], sums[keep]
    if not (has == has[0]).all():
        return None  # seeds hold different groups: their patterns are not comparable
    present = np.flatnonzero(has[0])
    means = sums[:, present] / counts[:, present][:, :, None]  # (n, G, C)
    pattern = means - means[:, :1]
    tol = _TOLERANCE * max(1.0, float(np.abs(values).max(initial=0.0)))
    if float(np.abs(pattern - pattern[0]).max(initial=0.0)) > tol:
        return None
    n = int(means.shape[0])
    d = float((pattern[0].max(axis=0) - pattern[0].min(axis=0)).max())
    m = spread
    p = 1.0 if d <= threshold or n < 2 else float(((threshold + m) / (d + m)) ** (n - 1))
    share = clopper_pearson_upper(0, n - 1, alpha)
    lower = max(0.0, d - share * (m + d))
    return AgreementTest(seeds=n, gap=d, spread=m, p_value=min(1.0, p), lower=lower)
