"""Run-to-run noise for the regression gate: pure functions, numbers in, numbers out.

Two runs of an unchanged agent over the same cases never give identical latencies, costs or (for
a sampling model) identical outcomes. A difference between two runs is a regression only when it
is larger than the allowed tolerance *and* larger than this noise:

* a rate over the same cases (pass rate, fallback rate, …) — McNemar's exact test on the
  discordant pairs: of the cases whose outcome changed, are significantly more of them changes
  for the worse than a fair coin gives? (:func:`mcnemar_worse_p`);
* p95 latency and mean cost — a two-sample case bootstrap: resample each run's cases, recompute
  the statistic, and take a one-sided lower bound of the increase; an increase whose lower bound
  is not above zero is within what resampling the same cases produces
  (:func:`bootstrap_increase_bound`).

Both are deterministic: the bootstrap uses a fixed seed, so the same inputs give the same verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "ALPHA",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "MIN_BOOTSTRAP_CASES",
    "bootstrap_increase_bound",
    "mcnemar_worse_p",
    "p95",
]

#: One-sided significance level of both noise tests.
ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
#: With fewer per-case values on either side the bootstrap says nothing useful; the tolerance
#: alone decides (trace2eval's rule).
MIN_BOOTSTRAP_CASES = 5


def mcnemar_worse_p(worse: int, better: int) -> float:
    """One-sided exact McNemar p-value: P(X ≥ worse) for X ~ Binomial(worse + better, ½).

    ``worse`` counts cases good on the baseline and bad now, ``better`` the reverse. With no
    discordant pair the p-value is 1 (nothing changed).
    """
    n = worse + better
    if n == 0 or worse == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(worse, n + 1))
    return min(1.0, tail / 2**n)


def p95(values: np.ndarray) -> np.ndarray:
    """The 0.95 quantile along the last axis, linear interpolation (as the metrics file's)."""
    return np.quantile(values, 0.95, axis=-1)


def _mean(values: np.ndarray) -> np.ndarray:
    return np.asarray(values.mean(axis=-1))


STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"p95": p95, "mean": _mean}


def bootstrap_increase_bound(
    baseline: Sequence[float],
    current: Sequence[float],
    statistic: str,
    alpha: float = ALPHA,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> float | None:
    """The one-sided (1 − alpha) lower bound of ``stat(current) − stat(baseline)``.

    Each run's cases are resampled with replacement on their own (percentile bootstrap); None
    when either side has fewer than :data:`MIN_BOOTSTRAP_CASES` values.
    """
    if len(baseline) < MIN_BOOTSTRAP_CASES or len(current) < MIN_BOOTSTRAP_CASES:
        return None
    stat = STATISTICS[statistic]
    rng = np.random.default_rng(seed)
    base = np.asarray(baseline, dtype=float)
    cur = np.asarray(current, dtype=float)
    base_draws = base[rng.integers(0, len(base), size=(resamples, len(base)))]
    cur_draws = cur[rng.integers(0, len(cur), size=(resamples, len(cur)))]
    differences = stat(cur_draws) - stat(base_draws)
    return float(np.quantile(differences, alpha))
