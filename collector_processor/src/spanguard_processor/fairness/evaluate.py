"""Evaluate a suite's metrics over observations: estimates, intervals, p-values, verdicts.

One pass computes every metric's per-record values (hooks run once per record). A variant's
repeats are averaged into one unit before any statistic (:mod:`.inference`): intervals, the
threshold test and the MDE come from the seeds' within-seed contrasts of variant means, and the
"any difference" p-value from permuting variants (with their repeats) within seeds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spanguard.exceptions import InputError

from . import inference, permutation, precision, stats
from .compat import EXACT_LIMIT, legacy_exposure, stability_similarities
from .coverage import ExpectedVariants
from .details import balanced, counters, metric_details, pooled_means, spread
from .diagnosis import SignalCounts, with_signal
from .evidence import PAIRS, find_pairs, stability_pairs
from .gate import GateConfig, apply_gate
from .groups import group_stats
from .metrics import MetricDefinition, MetricValues, get_metric
from .records import Observation
from .results import Evaluation, MetricResult
from .signals import ObservationList
from .stability import stability_arrays
from .suite import MetricConfig
from .vocabulary import Kind

__all__ = ["evaluate"]


@dataclass
class _Prepared:
    config: MetricConfig
    definition: MetricDefinition
    values: MetricValues | None = None
    design: stats.Design | None = None
    sums: NDArray[np.float64] | None = None
    counts: NDArray[np.float64] | None = None
    estimate: stats.GapEstimate | None = None
    covered: NDArray[np.bool_] | None = None
    seed_sims: NDArray[np.float64] | None = None
    draws: list[NDArray[np.float64]] = field(default_factory=list)
    score: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


def _index(labels: Sequence[str]) -> tuple[list[str], NDArray[np.int64]]:
    order: dict[str, int] = {}
    idx = np.fromiter((order.setdefault(x, len(order)) for x in labels), dtype=np.int64,
                      count=len(labels))
    return list(order), idx


def _group_labels(observations: Sequence[Observation]) -> list[str]:
    # identical assignments are usually one shared dict: label each distinct object once
    cache: dict[int, str] = {}
    out = []
    for o in observations:
        key = id(o.assignments)
        label = cache.get(key)
        if label is None:
            label = cache[key] = o.group
        out.append(label)
    return out


def _generated_at() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (datetime.fromtimestamp(int(epoch), UTC) if epoch and epoch.isdigit()
              else datetime.now(UTC))
    return moment.replace(microsecond=0).isoformat()


def evaluate(
    observations: Sequence[Observation],
    metrics: Sequence[MetricConfig],
    config: GateConfig | None = None,
    *,
    variant_count: int | None = None,
    suite_digest: str = "",
    generated_at: str | None = None,
    evidence_pairs: int = PAIRS,
    expected: Sequence[tuple[str, str, str]] | None = None,
) -> Evaluation:
    """Evaluate ``metrics`` over ``observations`` and apply the gate in ``config``; each gap
    metric keeps up to ``evidence_pairs`` counterfactual pairs (0: none).

    ``expected`` lists the suite's variants as ``(variant id, seed id, group label)`` so that
    coverage counts variants without any record; without it, the observed variants are the
    expected ones (records that are invalid for a metric still count as missing for it).
    """
    cfg = config or GateConfig()
    if not observations:
        raise InputError("there are no records to evaluate; run the app or pass trace files "
                         "that hold the suite's variants.")
    seen: set[str] = set()
    for o in observations:
        if o.id in seen:
            raise InputError(f"the record id '{o.id}' appears twice; every record needs a "
                             "unique id.", field="id")
        seen.add(o.id)
    observations = ObservationList(observations)
    group_labels, group_idx = _index(_group_labels(observations))
    seed_labels, seed_idx = _index([o.seed_id for o in observations])
    variant_labels, variant_idx = _variants(observations)
    plan = ExpectedVariants.build(expected, variant_labels, variant_idx, seed_idx, group_labels,
                           group_idx, seed_labels)
    prepared = []
    for mc in metrics:
        definition = get_metric(mc.type)
        if definition is None:
            raise InputError(f"unknown metric type '{mc.type}'.", field="type")
        p = _prepare(mc, definition, observations, group_labels, group_idx, seed_idx,
                     seed_labels)
        if p.values is not None:
            p.covered = plan.covered(variant_idx[p.values.valid])
        prepared.append(p)
    _bootstrap(prepared, len(seed_labels), cfg)
    tested = sum(1 for p in prepared if p.covered is not None)
    index = _Index(variant_idx, seed_idx, group_idx, len(variant_labels), len(seed_labels),
                   len(group_labels))
    plan = replace(plan, attributes=_attribute_levels(observations, group_idx, len(group_labels)))
    p_missing = plan.missingness([p.covered for p in prepared if p.covered is not None], cfg)
    results = [_result(p, observations, group_labels, cfg, tested, plan, p_missing, index)
               for p in prepared]
    results = [_with_evidence(r, p, observations, seed_idx, group_idx, seed_labels, group_labels,
                              evidence_pairs) for r, p in zip(results, prepared, strict=True)]
    counts = SignalCounts(observations)  # what each metric reads, and who carries it
    results = [with_signal(r, p.definition, counts) for r, p in zip(results, prepared, strict=True)]
    return Evaluation(
        generated_at=generated_at or _generated_at(),
        variant_count=variant_count if variant_count is not None
        else len({o.variant_id for o in observations}),
        results=tuple(apply_gate(results, cfg)),
        observations=tuple(observations),
        config=cfg,
        suite_digest=suite_digest,
        seeds=len(seed_labels),
    )


def _prepare(mc: MetricConfig, definition: MetricDefinition, obs: Sequence[Observation],
             group_labels: list[str], group_idx: NDArray[np.int64], seed_idx: NDArray[np.int64],
             seed_labels: list[str]) -> _Prepared:
    p = _Prepared(mc, definition)
    n_seeds = len(seed_labels)
    if definition.kind == Kind.STABILITY:
        if len(obs) <= EXACT_LIMIT:  # fairtrace's exact per-seed means, pair by pair
            seeds, scenarios = stability_similarities(obs)
            p.seed_sims = np.fromiter(seeds.values(), dtype=np.float64, count=len(seeds))
        else:
            p.seed_sims, per_record = stability_arrays(obs, seed_idx, n_seeds)
            seeds = dict(zip(seed_labels, p.seed_sims.tolist(), strict=True))
            scenarios = dict(zip([o.id for o in obs], per_record.tolist(), strict=True))
        p.score = float(p.seed_sims.min()) if len(seeds) else 1.0
        p.details = {"seed_similarities": seeds, "scenario_similarities": scenarios}
        return p
    if definition.kind == Kind.LEGACY_EXPOSURE:
        p.score, details, empty = legacy_exposure(obs)
        p.details = {**details, **counters(definition, obs, group_labels, group_idx, empty)}
        return p
    values = definition.compute(obs, mc.options)
    p.values = values
    keep = values.valid
    p.design = stats.build_design(seed_idx[keep], group_idx[keep], n_seeds, len(group_labels))
    x = values.values[keep]
    p.sums, p.counts = stats.seed_aggregates(p.design, x)
    p.estimate = stats.gap_estimate(p.sums, p.counts)
    pooled = pooled_means(x, p.design, group_labels)
    is_balanced = balanced(p.design)
    if is_balanced:
        p.score = max((spread([m[c] for m in pooled.values()]) for c in range(x.shape[1])),
                      default=0.0)
    else:
        p.score = p.estimate.gap
    p.details = metric_details(definition, values, obs, pooled, group_labels, group_idx)
    p.details["estimator"] = "pooled group means" if is_balanced else "within-seed contrasts"
    marginals = _attribute_gaps(obs, keep, seed_idx[keep], n_seeds, x)
    if marginals:
        p.details["attribute_gaps"] = marginals
    return p


def _attribute_gaps(obs: Sequence[Observation], keep: NDArray[np.bool_],
                    seed_idx: NDArray[np.int64], n_seeds: int,
                    x: NDArray[np.float64]) -> dict[str, float]:
    """With several attributes, the within-seed gap along each one alone (its marginal); none
    when no record is valid for the metric."""
    names = sorted({k for o in obs for k in o.assignments})
    if len(names) < 2 or not keep.any():
        return {}
    rows = np.flatnonzero(keep).tolist()
    out = {}
    for name in names:
        labels, idx = _index([obs[i].assignments.get(name, "") for i in rows])
        design = stats.build_design(seed_idx, idx, n_seeds, len(labels))
        out[name] = stats.gap_estimate(*stats.seed_aggregates(design, x)).gap
    return out


def _bootstrap(prepared: Sequence[_Prepared], n_seeds: int, cfg: GateConfig) -> None:
    """The stability bootstrap: seeds drawn with replacement, the statistic the minimum over
    the drawn seeds. (Gap metrics get their intervals from :mod:`.inference`.)"""
    stable = [p for p in prepared if p.seed_sims is not None]
    if not stable or cfg.bootstrap_samples <= 0:
        return
    orders = [np.argsort(p.seed_sims, kind="stable") for p in stable if p.seed_sims is not None]
    for weights in stats.bootstrap_seed_counts(n_seeds, cfg.bootstrap_samples, cfg.seed):
        for p, order in zip(stable, orders, strict=True):
            assert p.seed_sims is not None
            drawn = (weights > 0)[:, order]
            p.draws.append(p.seed_sims[order][np.argmax(drawn, axis=1)])


ESTIMAND = ("the largest difference between true group means (seed-adjusted; the largest "
            "over columns for multi-column metrics)")
# below this many contrast seeds the "any difference" p-value is never the normal approximation
NORMAL_MIN_SEEDS = 200


@dataclass(frozen=True)
class _Index:
    """Each record's variant, seed and group, and their counts."""

    variant: NDArray[np.int64]
    seed: NDArray[np.int64]
    group: NDArray[np.int64]
    n_variants: int
    n_seeds: int
    n_groups: int

    def units(self, values: MetricValues) -> inference.Units:
        """The metric's variant units, built when needed and dropped after (a million-variant
        run would otherwise hold a copy per metric)."""
        keep = values.valid
        if bool(keep.all()) and self.n_variants == self.variant.shape[0]:
            # every record is its own variant: the units are the records themselves
            return inference.Units(values.values, self.seed, self.group,
                                   np.ones(1, dtype=np.int64).repeat(self.n_variants),
                                   self.n_seeds, self.n_groups)
        return inference.variant_units(self.variant[keep], self.seed[keep], self.group[keep],
                                       values.values[keep], self.n_variants, self.n_seeds,
                                       self.n_groups)


def _result(p: _Prepared, obs: Sequence[Observation], labels: list[str],
            cfg: GateConfig, metric_count: int, plan: ExpectedVariants,
            p_missing: float | None, index: _Index) -> MetricResult:
    d = p.definition
    threshold = p.config.threshold
    base: dict[str, Any] = {"metric": d.name, "threshold": threshold, "direction": d.direction,
            "category": d.category, "records": len(obs), "optional": p.config.optional}
    if d.kind == Kind.LEGACY_EXPOSURE:
        return MetricResult(score=p.score, confidence_interval=None, p_value=None,
                            details=p.details, groups_with_data=2, seeds=0,
                            p_method="none (legacy formula)", **base)
    draws = np.concatenate(p.draws) if p.draws else np.zeros(0)
    if d.kind == Kind.STABILITY:
        assert p.seed_sims is not None
        interval = (stats.bias_corrected_interval(draws, p.score, cfg.level)
                    if draws.size and p.seed_sims.size >= 2 else None)
        return MetricResult(score=p.score, confidence_interval=interval, p_value=None,
                            details=p.details, groups_with_data=2,
                            seeds=int(p.seed_sims.size), p_method=None, **base)
    assert p.values is not None and p.covered is not None and p.estimate is not None
    units = index.units(p.values)
    coverage = plan.coverage(p.covered)
    extra: dict[str, Any] = {"coverage": coverage, "units": int(units.values.shape[0]),
                             "estimand": ESTIMAND,
                             "p_missing": p_missing if not p.covered.all() else None}
    inf = inference.infer_gap(units, float(threshold), 1.0 - cfg.level, cfg.seed,
                              draws=max(cfg.bootstrap_samples, 2000), attributes=plan.attributes,
                              scale=d.scale)
    scale = inference.scale_of(units.values, d.scale)
    if inf is None:
        needed = precision.unmeasured(len(labels), scale, float(threshold), 1.0 - cfg.level,
                                      cfg.power)
        return MetricResult(score=p.score, confidence_interval=None, p_value=None,
                            details=p.details, groups_with_data=p.estimate.groups_with_data,
                            seeds=p.estimate.contrast_seeds, p_method=None,
                            seeds_needed=needed, **base, **extra)
    p_value, method = _any_difference(units, cfg)
    # PASS's upper bound and the MDE at the interval's level: an intersection-union test
    # needs no correction across metrics (docs/fairness.md, "what PASS means")
    shown = precision.precision(units, inf, scale, float(threshold), 1.0 - cfg.level,
                                cfg.power)
    details = {**p.details, "upper_bound": shown.info}
    records = np.bincount(units.group, weights=units.repeats.astype(np.float64),
                          minlength=units.n_groups).astype(np.int64)
    return MetricResult(
        score=p.score, confidence_interval=shown.interval, p_value=p_value, details=details,
        groups_with_data=int(inf.groups.shape[0]), seeds=inf.seeds, p_method=method,
        mde=shown.mde, seeds_needed=shown.seeds_needed,
        groups=group_stats(units, labels, records, cfg.level, _widest_column(p), d.scale),
        p_threshold=inf.p_threshold, worst_case_variance=inf.worst_case, **base, **extra,
    )


def _with_evidence(r: MetricResult, p: _Prepared, obs: Sequence[Observation],
                   seed_idx: NDArray[np.int64], group_idx: NDArray[np.int64],
                   seed_labels: list[str], group_labels: list[str], k: int) -> MetricResult:
    """The counterfactual pairs behind a gap metric (evidence.py; cheap: top-k seeds)."""
    if p.seed_sims is not None:
        sims = p.details.get("seed_similarities", {})
        return replace(r, evidence=stability_pairs(obs, sims, k))
    if p.values is None:
        return r
    pairs = find_pairs(r.metric, p.values, obs, seed_idx, group_idx, seed_labels, group_labels,
                       k)
    return replace(r, evidence=pairs)


def _any_difference(units: inference.Units, cfg: GateConfig) -> tuple[float, str]:
    """Within-seed permutation p-value of "group labels do not matter", variants (with their
    repeats) as the units; exact enumeration when the labellings are few."""
    design = stats.build_design(units.seed, units.group, units.n_seeds, units.n_groups)
    x = units.values
    sums, counts = stats.seed_aggregates(design, x)
    est = stats.gap_estimate(sums, counts)
    # enumeration needs few labellings, hence few seeds: skip its pass over big suites
    exact = (permutation.exact_permutation_p(design, x, est.gap)
             if est.contrast_seeds <= 64 else None)
    if exact is not None:
        return exact, "within-seed permutation of variants (exact enumeration)"
    perms = cfg.permutation_samples
    n = design.n
    if est.contrast_seeds < NORMAL_MIN_SEEDS or 0 < n * perms <= cfg.exact_budget:
        perms = perms or 999
        return (permutation.permutation_p(design, x, est.gap, perms, cfg.seed),
                f"within-seed permutation of variants ({perms} permutations)")
    cov, n_g = permutation.permutation_covariance(design, x)
    return (permutation.normal_permutation_p(cov, n_g, x.shape[1], est.gap, cfg.normal_draws,
                                       cfg.seed),
            "within-seed permutation of variants, normal approximation")


def _variants(obs: Sequence[Observation]) -> tuple[list[str], NDArray[np.int64]]:
    """Variant labels and each record's variant index; without repeats (every record its own
    variant, the common case at scale) no dictionary of a million ids is built."""
    ids = obs.ids() if isinstance(obs, ObservationList) else [o.id for o in obs]
    if all(o.variant_id == i for o, i in zip(obs, ids, strict=True)):
        return ids, np.arange(len(ids), dtype=np.int64)
    return _index([o.variant_id for o in obs])


def _attribute_levels(obs: Sequence[Observation], group_idx: NDArray[np.int64],
                      n_groups: int) -> NDArray[np.int64] | None:
    """Each group's value index per attribute, when groups combine two or more attributes."""
    first: dict[int, Mapping[str, str]] = {}
    for o, g in zip(obs, group_idx.tolist(), strict=True):
        if g not in first:
            first[g] = o.assignments
            if len(first) == n_groups:
                break
    names = sorted({k for a in first.values() for k in a})
    if len(names) < 2:
        return None
    out = np.zeros((n_groups, len(names)), dtype=np.int64)
    for j, name in enumerate(names):
        _, idx = _index([first[g].get(name, "") for g in range(n_groups)])
        out[:, j] = idx
    return out


def _widest_column(p: _Prepared) -> int:
    assert p.estimate is not None
    means = p.estimate.means
    if not means.size or not np.any(~np.isnan(means)):
        return 0
    spread = np.nan_to_num(np.nanmax(means, axis=0) - np.nanmin(means, axis=0), nan=-1.0)
    return int(np.nanargmax(spread))
