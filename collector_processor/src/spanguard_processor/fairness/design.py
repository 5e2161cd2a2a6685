"""A suite design's power before any app call: its MDE and the seeds it needs.

PROVISIONAL (branch ``power``): a stand-in with the interface the ``gate`` branch provides;
it is replaced by theirs when that lands. The design's MDE is the engine's own simulated MDE on
a balanced design of that size whose every value is equal (a deterministic fair app), so
the worst-case variance of the metric's scale is assumed.
"""

from __future__ import annotations

import math

import numpy as np

from .inference import Units, infer_gap
from .power import min_detectable_effect

__all__ = ["design_mde", "seeds_needed"]

#: null draws of the design's simulated test: enough for a plan, cheap enough to bisect on
_DRAWS = 2000


def design_mde(scale: str, threshold: float, seeds: int, groups: int, *,
               per_group: int = 1, repeats: int = 1, alpha: float = 0.05,
               power: float = 0.8, seed: int = 0) -> float | None:
    """The smallest true gap the gate detects with ``power`` on a balanced design of ``seeds``
    seeds × ``groups`` groups (``per_group`` variants of each group per seed, ``repeats``
    calls each) at the worst-case variance of ``scale``; None when no gap on the scale is
    (``math.inf`` never: a rate's gap beyond 1 is None)."""
    if seeds < 1 or groups < 2:
        return None
    per_seed = groups * per_group
    n = seeds * per_seed
    units = Units(values=np.zeros((n, 1)),
                  seed=np.repeat(np.arange(seeds, dtype=np.int64), per_seed),
                  group=np.tile(np.repeat(np.arange(groups, dtype=np.int64), per_group), seeds),
                  repeats=np.full(n, repeats, dtype=np.int64), n_seeds=seeds, n_groups=groups)
    inf = infer_gap(units, threshold, alpha, seed, draws=_DRAWS, scale=scale)
    if inf is None:
        return None
    mde = min_detectable_effect(inf, threshold, alpha, power, seed=seed,
                                upper=1.0 if scale == "rate" else None)
    return None if mde is None or not math.isfinite(mde) else float(mde)


def seeds_needed(scale: str, threshold: float, groups: int, *, target: float | None = None,
                 per_group: int = 1, repeats: int = 1, alpha: float = 0.05,
                 power: float = 0.8, limit: int = 100_000) -> int | None:
    """The fewest seeds whose design MDE is at most ``target`` (default twice the threshold);
    None when even ``limit`` seeds are not enough."""
    goal = 2.0 * threshold if target is None else target

    def enough(s: int) -> bool:
        mde = design_mde(scale, threshold, s, groups, per_group=per_group, repeats=repeats,
                         alpha=alpha, power=power)
        return mde is not None and mde <= goal

    hi = 2
    while not enough(hi):
        if hi >= limit:
            return None
        hi = min(limit, hi * 2)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
