"""The pieces that reproduce fairtrace 0.1.0 exactly: exact means, stability, legacy exposure.

``statistics.mean`` rounds an exact rational sum once; :func:`exact_mean` does the same with
integer arithmetic. The many tiny per-seed means of the stability metric use it for suites of
up to ``EXACT_LIMIT`` records and a correctly rounded sum divided once beyond (it can differ
from fairtrace by one unit in the last place there).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..records import Observation

__all__ = ["EXACT_LIMIT", "exact_mean", "legacy_exposure", "stability_similarities"]

EXACT_LIMIT = 2_000


def exact_mean(values: NDArray[np.float64] | Sequence[float]) -> float:
    """The mean as ``statistics.mean`` computes it: the exact sum divided by n, rounded once.

    Every float is m·2^e with a 53-bit integer m, so the exact sum is an integer sum per
    exponent, shifted; numpy does the sums, Python integers the few shifts (0.0 for no values).
    """
    arr = np.asarray(values, dtype=np.float64)
    n = arr.shape[0]
    if n == 0:
        return 0.0
    mantissa, exponent = np.frexp(arr)
    ints = (mantissa * 2.0**53).astype(np.int64)
    low_exp = int(exponent.min())
    total = 0
    for exp in np.unique(exponent):
        part = ints[exponent == exp]
        # split into 26-bit halves so the int64 sums cannot overflow
        high = int((part >> 26).sum())
        low = int((part & ((1 << 26) - 1)).sum())
        total += ((high << 26) + low) << (int(exp) - low_exp)
    scale = 53 - low_exp
    exact = Fraction(total, n << scale) if scale >= 0 else Fraction(total << -scale, n)
    return float(exact)


def _mean(values: list[float], exact: bool) -> float:
    if not values:
        return 0.0
    return exact_mean(values) if exact else math.fsum(values) / len(values)


def stability_similarities(
    observations: Sequence[Observation],
) -> tuple[dict[str, float], dict[str, float]]:
    """fairtrace's per-seed mean pairwise Jaccard similarity and per-record mean similarity.

    Token sets are the lowercased whitespace tokens; two empty responses are identical (1.0);
    a seed with one record scores 1.0. Means are exact (as ``statistics.mean``) for up to
    ``EXACT_LIMIT`` records and correctly rounded sums divided once beyond.
    """
    exact = len(observations) <= EXACT_LIMIT
    by_seed: dict[str, list[Observation]] = defaultdict(list)
    for o in observations:
        by_seed[o.seed_id].append(o)
    seeds: dict[str, float] = {}
    scenarios: dict[str, float] = {}
    for seed, items in by_seed.items():
        if len(items) < 2:
            seeds[seed] = 1.0
            for o in items:
                scenarios[o.id] = 1.0
            continue
        tokens = [frozenset(o.response.lower().split()) for o in items]
        per_item: list[list[float]] = [[] for _ in items]
        pairs: list[float] = []
        for i in range(len(items)):
            left = tokens[i]
            for j in range(i + 1, len(items)):
                right = tokens[j]
                if not left and not right:
                    sim = 1.0
                else:
                    inter = len(left & right)
                    sim = inter / (len(left) + len(right) - inter)
                pairs.append(sim)
                per_item[i].append(sim)
                per_item[j].append(sim)
        seeds[seed] = _mean(pairs, exact)
        for o, sims in zip(items, per_item, strict=True):
            scenarios[o.id] = _mean(sims, exact)
    return seeds, scenarios


def legacy_exposure(
    observations: Sequence[Observation],
) -> tuple[float, dict[str, Any], int]:
    """fairtrace 0.1.0's ``retrieval_exposure_gap``, kept only under the ``_legacy`` name.

    It sums 1/rank per *document* group over all records and compares document groups, so it
    grows with the suite size and ignores the users entirely (see docs/fairness.md).
    Returns the score, the details fairtrace writes, and the count of records without documents.
    """
    total: dict[str, float] = defaultdict(float)
    exposures: dict[str, float] = {}
    by_group: dict[str, dict[str, float]] = {}
    gaps: dict[str, float] = {}
    empty = 0
    for o in observations:
        local: dict[str, float] = defaultdict(float)
        docs = o.trace.retrieved_documents if o.trace is not None else ()
        if o.trace is not None and not docs:
            empty += 1
        for doc in docs:
            if not doc.group:
                continue
            rank = doc.rank if isinstance(doc.rank, int) and doc.rank >= 1 else 1
            total[doc.group] += 1.0 / rank
            local[doc.group] += 1.0 / rank
        by_group[o.id] = dict(local)
        exposures[o.id] = sum(local.values())
        gaps[o.id] = max(local.values()) - min(local.values()) if len(local) >= 2 else 0.0
    score = max(total.values()) - min(total.values()) if len(total) >= 2 else 0.0
    details = {
        "exposure_by_group": dict(total),
        "scenario_exposures": exposures,
        "scenario_exposure_by_group": by_group,
        "scenario_gaps": gaps,
    }
    return score, details, empty
