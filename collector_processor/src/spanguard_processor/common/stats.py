"""Exact bounds and multiplicity control shared by the fairness and regression gates.

Pure functions, numbers in, numbers out: the Clopper–Pearson one-sided bound of a binomial share
(:func:`clopper_pearson_upper`) and Holm's step-down adjustment (:func:`holm`). They live here,
below both gates, so that neither gate imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence

from scipy.stats import beta

__all__ = ["clopper_pearson_upper", "holm"]


def clopper_pearson_upper(k: int, n: int, alpha: float = 0.05) -> float:
    """The exact one-sided 1 − α upper confidence bound of a binomial share from k of n;
    1 with no trial."""
    if n <= 0 or k >= n:
        return 1.0
    if k <= 0:
        return float(1.0 - alpha ** (1.0 / n))
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (None entries are skipped and stay None)."""
    index = [i for i, p in enumerate(p_values) if p is not None]
    m = len(index)
    ordered = sorted(index, key=lambda i: (p_values[i], i))
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, i in enumerate(ordered):
        p = p_values[i]
        assert p is not None
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
