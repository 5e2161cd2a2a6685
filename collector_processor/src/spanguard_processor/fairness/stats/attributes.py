"""One protected attribute's within-seed contrast when a suite's groups combine several.

The hypothesis is per attribute (docs/fairness.md, "several protected attributes"): within a
seed, compare the variants that differ in that attribute and agree on every other one. A
seed's variants are split into *strata* (the same values of the other attributes); a stratum
informs the attribute only if its variants hold two or more of its values, and a seed only if
one of its strata does. Inside a stratum every value is centred on the stratum's mean (the
match on the other attributes); a seed's centred values are then averaged per value of the
attribute (over its strata: the marginal over the others) into one unit per (seed, value),
shifted back by the mean of the seed's informative variants so that the units keep the
metric's scale on a balanced seed. The units go to the same inference as single-attribute
groups (:mod:`.inference`), the seed remaining the independent unit.

Groups formed by every combination of the attributes are cells for evidence, never the groups of
the test: a max over cells with one record each is 1 under every permutation. Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .inference import Units

__all__ = ["AttributeUnits", "attribute_units"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class AttributeUnits:
    """One attribute's units: one per (seed, value) of the seeds that vary it."""

    units: Units  # group: the index of the attribute's value, into ``values``
    values: IntArray  # (L,) the attribute's value indices (into the design's levels) in use


def _rows(key: IntArray) -> IntArray:
    """Each row's index among the distinct rows of ``key`` (N, K)."""
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(-1)


def attribute_units(units: Units, levels: IntArray, attribute: int) -> AttributeUnits | None:
    """The units of attribute ``attribute`` (a column of ``levels``, groups × attributes: each
    group's value index per attribute); None when no seed's variants vary it."""
    value = levels[units.group, attribute]
    others = np.delete(levels, attribute, axis=1)[units.group]
    stratum = _rows(np.column_stack([units.seed, others]))
    n_strata = int(stratum.max(initial=-1)) + 1
    distinct = np.zeros(n_strata, dtype=np.int64)
    pairs = np.unique(np.column_stack([stratum, value]), axis=0)
    np.add.at(distinct, pairs[:, 0], 1)
    keep = distinct[stratum] >= 2
    if not keep.any():
        return None
    x, seed, value, stratum = units.values[keep], units.seed[keep], value[keep], stratum[keep]
    repeats = units.repeats[keep]
    cols = x.shape[1]
    size = np.bincount(stratum, minlength=n_strata).astype(np.float64)
    centred = np.empty_like(x)
    seed_mean = np.empty_like(x)
    n_seed = np.bincount(seed, minlength=units.n_seeds).astype(np.float64)
    for c in range(cols):
        total = np.bincount(stratum, weights=x[:, c], minlength=n_strata)
        centred[:, c] = x[:, c] - (total / np.maximum(size, 1.0))[stratum]
        by_seed = np.bincount(seed, weights=x[:, c], minlength=units.n_seeds)
        seed_mean[:, c] = (by_seed / np.maximum(n_seed, 1.0))[seed]
    used, local = np.unique(value, return_inverse=True)
    local = np.asarray(local, dtype=np.int64).reshape(-1)
    n_values = int(used.shape[0])
    cell = seed * n_values + local
    cells, inverse = np.unique(cell, return_inverse=True)
    inverse = np.asarray(inverse, dtype=np.int64).reshape(-1)
    count = np.bincount(inverse).astype(np.float64)
    out = np.empty((cells.shape[0], cols))
    for c in range(cols):
        shifted = centred[:, c] + seed_mean[:, c]
        out[:, c] = np.bincount(inverse, weights=shifted) / count
    merged = Units(
        out,
        (cells // n_values).astype(np.int64),
        (cells % n_values).astype(np.int64),
        np.bincount(inverse, weights=repeats).astype(np.int64),
        units.n_seeds,
        n_values,
    )
    return AttributeUnits(merged, used.astype(np.int64))
