"""The gap kind (every built-in metric but two): a gap of group means over the metric's value
matrix, with the seeds' within-seed contrasts behind its interval, threshold test and MDE
(:mod:`..stats.inference`, :mod:`..stats.precision`) and a within-seed permutation p-value of "any
difference" (:mod:`..stats.permutation`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..design.suite import MetricConfig
from ..gate.config import GateConfig
from ..gate.results import MetricResult
from ..metrics import MetricDefinition, MetricValues
from ..records import Observation
from ..stats import inference, permutation, precision, seeds
from ..stats.groups import group_stats
from ..vocabulary import Scale
from .attributes import ATTRIBUTE_ESTIMAND, attribute_results
from .base import KindStrategy, Prepared, RecordIndex, index_labels
from .details import balanced, metric_details, pooled_means, spread
from .evidence import find_pairs

__all__ = [
    "ESTIMAND",
    "NORMAL_MIN_SEEDS",
    "GapPrepared",
    "GapStrategy",
    "any_difference",
    "measure",
]

ESTIMAND = (
    "the largest difference between true group means (seed-adjusted; the largest "
    "over columns for multi-column metrics)"
)
# below this many contrast seeds the "any difference" p-value is never the normal approximation
NORMAL_MIN_SEEDS = 200


@dataclass(frozen=True, kw_only=True, eq=False)
class GapPrepared(Prepared):
    """A gap metric's per-record values and its seed-adjusted point estimate."""

    values: MetricValues
    estimate: seeds.GapEstimate
    covered: NDArray[np.bool_]
    # the variant units when they come from a table (:mod:`..evaluate_table`), not the records
    units: inference.Units | None = None

    def widest_column(self) -> int:
        """The column whose group means spread most (the one a chart shows)."""
        means = self.estimate.means
        if not means.size or not np.any(~np.isnan(means)):
            return 0
        spread_ = np.nan_to_num(np.nanmax(means, axis=0) - np.nanmin(means, axis=0), nan=-1.0)
        return int(np.nanargmax(spread_))


class GapStrategy(KindStrategy[GapPrepared]):
    gap_between_groups = True

    def prepare(
        self, config: MetricConfig, definition: MetricDefinition, design: RecordIndex
    ) -> GapPrepared:
        obs = design.observations
        values = definition.compute(obs, config.options)
        keep = values.valid
        cells = seeds.build_design(
            design.seed[keep], design.group[keep], design.n_seeds, design.n_groups
        )
        x = values.values[keep]
        estimate = seeds.gap_estimate(*seeds.seed_aggregates(cells, x))
        pooled = pooled_means(x, cells, design.group_labels)
        is_balanced = balanced(cells)
        if is_balanced:
            score = max(
                (spread([m[c] for m in pooled.values()]) for c in range(x.shape[1])), default=0.0
            )
        else:
            score = estimate.gap
        details = metric_details(definition, values, obs, pooled, design.group_labels, design.group)
        details["estimator"] = "pooled group means" if is_balanced else "within-seed contrasts"
        marginals = _attribute_gaps(obs, keep, design.seed[keep], design.n_seeds, x)
        if marginals:
            details["attribute_gaps"] = marginals
        return GapPrepared(
            config=config,
            definition=definition,
            score=score,
            details=details,
            values=values,
            estimate=estimate,
            covered=design.expected.covered(design.variant[keep]),
        )

    def result(
        self, prepared: GapPrepared, design: RecordIndex, cfg: GateConfig, p_missing: float | None
    ) -> MetricResult:
        p = prepared
        d = p.definition
        threshold = float(p.config.threshold)
        units = p.units if p.units is not None else design.units(p.values)
        extra: dict[str, Any] = {
            "coverage": design.expected.coverage(p.covered),
            "units": int(units.values.shape[0]),
            "estimand": ESTIMAND,
            "p_missing": p_missing if not p.covered.all() else None,
        }
        records = np.bincount(
            units.group, weights=units.repeats.astype(np.float64), minlength=units.n_groups
        ).astype(np.int64)
        groups = group_stats(
            units, design.group_labels, records, cfg.level, p.widest_column(), d.scale
        )
        if design.attributes is not None:
            per = attribute_results(p, design, cfg, units, measure)
            if per:
                return MetricResult(
                    score=p.score,
                    confidence_interval=None,
                    p_value=None,
                    details=p.details,
                    groups_with_data=p.estimate.groups_with_data,
                    seeds=max(r.seeds for r in per),
                    p_method=None,
                    groups=groups,
                    attributes=per,
                    **p.base(design),
                    **{**extra, "estimand": ATTRIBUTE_ESTIMAND},
                )
        found = measure(
            units,
            threshold,
            cfg,
            d.scale,
            design.n_groups,
            design.expected.attributes,
            p.config.max_difference,
        )
        info = found.pop("upper_bound", None)
        return MetricResult(
            score=p.score,
            details=p.details if info is None else {**p.details, "upper_bound": info},
            groups_with_data=found.pop("groups_with_data", p.estimate.groups_with_data),
            seeds=found.pop("seeds", p.estimate.contrast_seeds),
            groups=groups if info is not None else (),
            **found,
            **p.base(design),
            **extra,
        )

    def evidence(
        self, result: MetricResult, prepared: GapPrepared, design: RecordIndex, pairs: int
    ) -> MetricResult:
        """The counterfactual pairs behind the gap (:mod:`.evidence`; cheap: the top
        k seeds)."""
        found = find_pairs(
            result.metric,
            prepared.values,
            design.observations,
            design.seed,
            design.group,
            design.seed_labels,
            design.group_labels,
            pairs,
        )
        return replace(result, evidence=found)


def _attribute_gaps(
    obs: Sequence[Observation],
    keep: NDArray[np.bool_],
    seed_idx: NDArray[np.int64],
    n_seeds: int,
    x: NDArray[np.float64],
) -> dict[str, float]:
    """With several attributes, the within-seed gap along each one alone (its marginal); none
    when no record is valid for the metric."""
    names = sorted({k for o in obs for k in o.assignments})
    if len(names) < 2 or not keep.any():
        return {}
    rows = np.flatnonzero(keep).tolist()
    out = {}
    for name in names:
        labels, idx = index_labels([obs[i].assignments.get(name, "") for i in rows])
        cells = seeds.build_design(seed_idx, idx, n_seeds, len(labels))
        out[name] = seeds.gap_estimate(*seeds.seed_aggregates(cells, x)).gap
    return out


def measure(
    units: inference.Units,
    threshold: float,
    cfg: GateConfig,
    declared: Scale | None,
    n_groups: int,
    attributes: NDArray[np.int64] | None = None,
    max_difference: float | None = None,
) -> dict[str, Any]:
    """One gap's figures from its units (:class:`MetricResult` fields, with ``upper_bound``
    for its details): the interval, both p-values, the MDE and the seeds needed."""
    alpha = 1.0 - cfg.level
    inf = inference.infer_gap(
        units,
        threshold,
        alpha,
        cfg.seed,
        draws=max(cfg.bootstrap_samples, 2000),
        attributes=attributes,
        scale=declared,
        max_difference=max_difference,
    )
    scale = inference.scale_of(units.values, declared)
    if inf is None:
        needed = precision.unmeasured(n_groups, scale, threshold, alpha, cfg.power)
        return {
            "confidence_interval": None,
            "p_value": None,
            "p_method": None,
            "seeds_needed": needed,
        }
    p_value, method = any_difference(units, cfg)
    # PASS's upper bound and the MDE at the interval's level: an intersection-union test
    # needs no correction across metrics (docs/fairness.md, "what PASS means")
    shown = precision.precision(units, inf, scale, threshold, alpha, cfg.power)
    return {
        "confidence_interval": shown.interval,
        "p_value": p_value,
        "p_method": method,
        "mde": shown.mde,
        "seeds_needed": shown.seeds_needed,
        "p_threshold": inf.p_threshold,
        "worst_case_variance": inf.worst_case,
        "seeds": inf.seeds,
        "groups_with_data": int(inf.groups.shape[0]),
        "upper_bound": shown.info,
    }


def any_difference(units: inference.Units, cfg: GateConfig) -> tuple[float, str]:
    """Within-seed permutation p-value of "group labels do not matter", variants (with their
    repeats) as the units; exact enumeration when the labellings are few."""
    cells = seeds.build_design(units.seed, units.group, units.n_seeds, units.n_groups)
    x = units.values
    est = seeds.gap_estimate(*seeds.seed_aggregates(cells, x))
    # enumeration needs few labellings, hence few seeds: skip its pass over big suites
    exact = permutation.exact_permutation_p(cells, x, est.gap) if est.contrast_seeds <= 64 else None
    if exact is not None:
        return exact, "within-seed permutation of variants (exact enumeration)"
    perms = cfg.permutation_samples
    if est.contrast_seeds < NORMAL_MIN_SEEDS or 0 < cells.n * perms <= cfg.exact_budget:
        perms = perms or 999
        return (
            permutation.permutation_p(cells, x, est.gap, perms, cfg.seed),
            f"within-seed permutation of variants ({perms} permutations)",
        )
    cov, n_g = permutation.permutation_covariance(cells, x)
    return (
        permutation.normal_permutation_p(cov, n_g, x.shape[1], est.gap, cfg.normal_draws, cfg.seed),
        "within-seed permutation of variants, normal approximation",
    )
