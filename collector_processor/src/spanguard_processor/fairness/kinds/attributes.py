"""A gap metric on a suite with several protected attributes: one result per attribute.

Each attribute is its own contrast (:mod:`..stats.attributes`: within a seed, the variants
that differ in it, matched on the others); a seed informs an attribute only where its variants
vary it, and an attribute that no seed varies is not tested. The combined groups
("age=25, gender=female") stay on the metric as cells for evidence. The gate puts every
attribute's p-value in its Holm family and decides the metric from them (:mod:`..gate.decide`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..gate.config import GateConfig
from ..gate.results import MetricResult
from ..stats import inference, seeds
from ..stats.attributes import attribute_units
from ..stats.groups import group_stats
from ..vocabulary import Scale
from .base import Prepared, RecordIndex

__all__ = ["ATTRIBUTE_ESTIMAND", "ATTRIBUTE_GAP_ESTIMAND", "attribute_results"]

ATTRIBUTE_ESTIMAND = (
    "per protected attribute, the largest difference between the true means of its values "
    "(within-seed, matched on the other attributes); the metric's verdict is the attributes'"
)
ATTRIBUTE_GAP_ESTIMAND = (
    "the largest difference between the true means of this attribute's values (within-seed, "
    "matched on the other attributes)"
)

Measure = Callable[
    [inference.Units, float, GateConfig, Scale | None, int, NDArray[np.int64] | None, float | None],
    dict[str, Any],
]


def attribute_results(
    prepared: Prepared,
    design: RecordIndex,
    cfg: GateConfig,
    units: inference.Units,
    measure: Measure,
) -> tuple[MetricResult, ...]:
    """One result per attribute that some seed varies (ungated: the gate decides them), in
    the attributes' sorted order; none without attributes."""
    attrs = design.attributes
    if attrs is None:
        return ()
    d = prepared.definition
    threshold = float(prepared.config.threshold)
    out = []
    for a, name in enumerate(attrs.names):
        found = attribute_units(units, attrs.levels, a)
        if found is None:
            continue
        au = found.units
        labels = [attrs.values[a][v] or "(not set)" for v in found.values.tolist()]
        figures = measure(
            au, threshold, cfg, d.scale, len(labels), None, prepared.config.max_difference
        )
        info = figures.pop("upper_bound", None)
        records = np.bincount(
            au.group, weights=au.repeats.astype(np.float64), minlength=au.n_groups
        ).astype(np.int64)
        out.append(
            MetricResult(
                attribute=name,
                score=_gap(au),
                details={} if info is None else {"upper_bound": info},
                groups_with_data=figures.pop("groups_with_data", 0),
                seeds=figures.pop("seeds", 0),
                groups=group_stats(au, labels, records, cfg.level, 0, d.scale),
                units=int(au.values.shape[0]),
                estimand=ATTRIBUTE_GAP_ESTIMAND,
                **figures,
                **prepared.base(design),
            )
        )
    return tuple(out)


def _gap(units: inference.Units) -> float:
    """The attribute's seed-adjusted gap: max − min of its values' within-seed means."""
    cells = seeds.build_design(units.seed, units.group, units.n_seeds, units.n_groups)
    return seeds.gap_estimate(*seeds.seed_aggregates(cells, units.values)).gap
