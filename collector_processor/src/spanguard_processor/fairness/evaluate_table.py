"""Evaluate a suite from its sufficient-statistics table, without the records.

:func:`evaluate_sufficient` is the gate fed by :class:`~.stats.sufficient.SufficientStatistics`
(one row per metric, column, seed and group: count, sum, sum of squares, variants): whichever
map filled it — :mod:`.stream` reducing observations as they are read, or an engine's SQL
(:mod:`.stats.sufficient_sql`) — the same estimates, intervals, permutation p-values, bounds and
verdicts follow, by the gap kind's own code (:class:`~.kinds.gap.GapStrategy`) run on the
table's variant units.

A cell of the table is one variant of the suite (a counterfactual suite instantiates each
seed once per group): its unit is the cell's mean, its repeats the cell's count, exactly the
unit :func:`~.stats.inference.variant_units` makes of a variant's records. Where every cell
holds one record the results equal :func:`~.evaluate.evaluate`'s bit for bit; with repeats a
unit's mean is the exactly rounded sum of its records over their count (:mod:`.stream`), where
the records path sums them in record-id order (the last bit may differ, never a verdict short
of a tie).

What a table does not carry is left out of the result: per-record values
(``scenario_scores``, ``scenario_exposures``, ``scenario_reasons``), evidence pairs (the
table's :class:`~.stats.sufficient.EvidencePointer` rows say where a cell's record is) and
``scenario_results``. Metrics that read more than one number per record — counterfactual
stability (each seed's texts compared), the legacy exposure formula — cannot be evaluated from
a table: naming one is an :class:`~spanguard.exceptions.InputError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spanguard.exceptions import InputError

from .design.suite import MetricConfig, Suite
from .evaluate import _generated_at
from .gate.config import GateConfig
from .gate.decide import apply_gate
from .gate.results import Evaluation, MetricResult
from .kinds.base import RecordIndex, attribute_levels, index_labels
from .kinds.coverage import ExpectedVariants
from .kinds.details import spread
from .kinds.gap import GapPrepared, GapStrategy
from .metrics import MetricDefinition, MetricValues, get_metric
from .metrics.diagnosis import SIGNALS
from .records import group_label
from .stats import inference, seeds
from .stats.sufficient import SignalRecords, SufficientStatistics
from .vocabulary import Kind

__all__ = ["TableIndex", "evaluate_sufficient"]


@dataclass(frozen=True, eq=False)
class TableIndex(RecordIndex):
    """A :class:`~.kinds.base.RecordIndex` whose "records" are the table's observed variants
    (one per cell, in suite order); ``record_count`` is the records behind them."""

    record_count: int = 0
    variant_records: tuple[int, ...] = ()  # each observed variant's records

    @property
    def records(self) -> int:
        return self.record_count


def evaluate_sufficient(
    stats: SufficientStatistics,
    suite: Suite,
    config: GateConfig | None = None,
    *,
    generated_at: str | None = None,
) -> Evaluation:
    """Evaluate every metric of ``suite`` from ``stats`` and apply the gate in ``config``.

    The table's seeds and groups are the suite's (a cell the suite does not hold, or a suite
    with two variants in one (seed, group) cell, is an ``InputError``); ``stats.observed``
    gives the run's records per cell (else the cells' counts do). Every metric must be a gap
    metric (see the module)."""
    cfg = config or GateConfig()
    design = _design(stats, suite)
    prepared = [
        _prepare(mc, stats, design, (suite.source, f"metrics[{i}].type"))
        for i, mc in enumerate(suite.metrics)
    ]
    p_missing = design.expected.missingness([p.covered for p in prepared], cfg)
    signals = {s.metric: s for s in stats.signals}
    strategy = GapStrategy()
    results = [
        _with_signal(strategy.result(p, design, cfg, p_missing), p.definition, signals, design)
        for p in prepared
    ]
    return Evaluation(
        generated_at=generated_at or _generated_at(),
        variant_count=len(suite.variants),
        results=tuple(apply_gate(results, cfg)),
        observations=(),
        config=cfg,
        suite_digest=suite.digest,
        seeds=design.n_seeds,
        records=design.record_count,
    )


def _observed(stats: SufficientStatistics) -> dict[tuple[str, str], int]:
    if stats.observed:
        return {(c.seed_id, c.group): c.records for c in stats.observed if c.records > 0}
    out: dict[tuple[str, str], int] = {}
    for c in stats.cells:
        if c.column == 0:
            key = (c.seed_id, c.group)
            out[key] = max(out.get(key, 0), c.count)
    return out


def _design(stats: SufficientStatistics, suite: Suite) -> TableIndex:
    """The observed variants in suite order, indexed as :meth:`RecordIndex.build` indexes
    records."""
    if not stats.observed and not stats.cells:
        raise InputError(
            "there are no records to evaluate; run the app or pass trace files "
            "that hold the suite's variants."
        )
    cell_variant: dict[tuple[str, str], str] = {}
    for v in suite.variants:
        key = (v.seed_id, group_label(v.assignments))
        other = cell_variant.setdefault(key, v.id)
        if other != v.id:
            raise InputError(
                f"the suite {suite.source} has two variants ('{other}', '{v.id}') of seed "
                f"'{key[0]}' in group '{key[1]}': a table of (seed, group) cells cannot tell "
                "their records apart; evaluate the records instead."
            )
    observed = _observed(stats)
    for key in sorted(set(observed) | {(c.seed_id, c.group) for c in stats.cells}):
        if key not in cell_variant:
            raise InputError(
                f"the table holds seed '{key[0]}' in group '{key[1]}', which the suite "
                f"{suite.source} does not: evaluate a table built from this suite's run."
            )
    kept = [v for v in suite.variants if (v.seed_id, group_label(v.assignments)) in observed]
    group_labels, group = index_labels([group_label(v.assignments) for v in kept])
    seed_labels, seed = index_labels([v.seed_id for v in kept])
    variant_labels = [v.id for v in kept]
    variant = np.arange(len(kept), dtype=np.int64)
    expected = [(v.id, v.seed_id, group_label(v.assignments)) for v in suite.variants]
    plan = ExpectedVariants.build(
        expected, variant_labels, variant, seed, group_labels, group, seed_labels
    )
    attributes = attribute_levels((v.assignments for v in kept), group, len(group_labels))
    records = [observed[(v.seed_id, group_label(v.assignments))] for v in kept]
    return TableIndex(
        observations=(),
        variant=variant,
        seed=seed,
        group=group,
        variant_labels=variant_labels,
        seed_labels=seed_labels,
        group_labels=group_labels,
        expected=replace(plan, attributes=None if attributes is None else attributes.levels),
        attributes=attributes,
        record_count=sum(records),
        variant_records=tuple(records),
    )


@dataclass(frozen=True)
class _Cells:
    """One metric's cells over the observed variants: valid counts (V,), sums (V, C)."""

    counts: NDArray[np.float64]
    totals: NDArray[np.float64]
    exact: list[list[Fraction]]  # the totals exactly, per variant and column
    columns: tuple[str, ...]
    missing_field_records: int
    score_source: str | None


def _cells(metric: str, stats: SufficientStatistics, design: TableIndex) -> _Cells:
    rows = [c for c in stats.cells if c.metric == metric]
    described = next((m for m in stats.columns if m.metric == metric), None)
    width = max([1 + c.column for c in rows] + [len(described.labels) if described else 1])
    at = {
        (s, g): i
        for i, (s, g) in enumerate(
            zip(
                (design.seed_labels[k] for k in design.seed.tolist()),
                (design.group_labels[k] for k in design.group.tolist()),
                strict=True,
            )
        )
    }
    counts = np.zeros(len(at))
    totals = np.zeros((len(at), width))
    exact = [[Fraction(0)] * width for _ in range(len(at))]
    for c in rows:
        i = at[(c.seed_id, c.group)]
        if c.column == 0:
            counts[i] = c.count
        totals[i, c.column] = c.total
        exact[i][c.column] = (
            Fraction(c.total) if c.exact_total is None else Fraction(*_ratio(c.exact_total))
        )
    columns = described.labels if described else ("value",)
    missing = described.missing_field_records if described else 0
    source = described.score_source if described else None
    return _Cells(counts, totals, exact, columns, missing, source)


def _ratio(exact: tuple[int, int]) -> tuple[int, int]:
    num, shift = exact
    return num, 1 << shift


def centred_estimate(
    v_seed: NDArray[np.int64],
    v_level: NDArray[np.int64],
    counts: NDArray[np.float64],
    totals: NDArray[np.float64],
    n_seeds: int,
    n_levels: int,
) -> seeds.GapEstimate:
    """:func:`~.stats.seeds.seed_aggregates` and :func:`~.stats.seeds.gap_estimate` over the
    records, from their variants' counts and sums (variants with a count only): each record's
    value minus its seed's mean, summed per (seed, level), summed in variant order — the
    records path's sums where every variant holds one record."""
    n_s = np.bincount(v_seed, weights=counts, minlength=n_seeds)
    cols = totals.shape[1]
    sums = np.stack(
        [np.bincount(v_seed, weights=totals[:, c], minlength=n_seeds) for c in range(cols)], axis=1
    )
    seed_mean = sums / np.maximum(n_s, 1.0)[:, None]
    present = np.zeros((n_seeds, n_levels), dtype=bool)
    present[v_seed, v_level] = True
    keep = (present.sum(axis=1) >= 2)[v_seed]
    e = totals - counts[:, None] * seed_mean[v_seed]
    cell = v_seed[keep] * n_levels + v_level[keep]
    size = n_seeds * n_levels
    n_cell = np.bincount(cell, weights=counts[keep], minlength=size)
    cell_sums = np.stack(
        [np.bincount(cell, weights=e[keep, c], minlength=size) for c in range(cols)], axis=1
    )
    shaped: NDArray[np.float64] = cell_sums.reshape(n_seeds, n_levels, -1).astype(np.float64)
    return seeds.gap_estimate(shaped, n_cell.reshape(n_seeds, n_levels).astype(np.float64))


def _exact_mean(values: Sequence[Fraction], n: float) -> float:
    """The exact sum of ``values`` over ``n``, rounded once: the records' mean as
    :func:`~.metrics.compat.exact_mean` computes it, when the totals are exact."""
    if n <= 0:
        return 0.0
    return float(sum(values, Fraction(0)) / int(n))


def _prepare(
    mc: MetricConfig, stats: SufficientStatistics, design: TableIndex, where: tuple[str, str]
) -> GapPrepared:
    definition = get_metric(mc.type)
    if definition is None:
        raise InputError(f"unknown metric type '{mc.type}'.", file=where[0], field=where[1])
    if definition.kind != Kind.GAP:
        raise InputError(
            f"the metric '{mc.type}' reads more of each record than one number (its "
            "texts, or fairtrace's legacy formula): a sufficient-statistics table cannot "
            "evaluate it; evaluate the records instead.",
            file=where[0],
            field=where[1],
        )
    cells = _cells(definition.name, stats, design)
    has = cells.counts > 0
    v = np.flatnonzero(has)
    seed, group = design.seed[v], design.group[v]
    counts, totals = cells.counts[v], cells.totals[v]
    estimate = centred_estimate(seed, group, counts, totals, design.n_seeds, design.n_groups)
    grid = np.zeros((design.n_seeds, design.n_groups))
    grid[seed, group] = counts
    used = grid[grid.sum(axis=1) > 0]
    is_balanced = bool(np.all(used == used[:, :1])) if used.size else True
    exact = [cells.exact[i] for i in v.tolist()]
    pooled = _pooled(group, counts, exact, design.group_labels)
    width = totals.shape[1]
    if is_balanced:
        score = max((spread([m[c] for m in pooled.values()]) for c in range(width)), default=0.0)
    else:
        score = estimate.gap
    details = _details(definition, cells, pooled, counts, exact, design, stats.traceless)
    details["estimator"] = "pooled group means" if is_balanced else "within-seed contrasts"
    marginals = _attribute_gaps(design, seed, group, counts, totals)
    if marginals:
        details["attribute_gaps"] = marginals
    one = bool(np.all(counts == 1.0))
    units = inference.Units(
        totals if one else totals / counts[:, None],
        seed,
        group,
        counts.astype(np.int64),
        design.n_seeds,
        design.n_groups,
    )
    empty = MetricValues(np.zeros((0, width)), np.zeros(0, dtype=bool), cells.columns)
    return GapPrepared(
        config=mc,
        definition=definition,
        score=score,
        details=details,
        values=empty,
        estimate=estimate,
        covered=design.expected.covered(design.variant[v]),
        units=units,
    )


def _pooled(
    group: NDArray[np.int64],
    counts: NDArray[np.float64],
    exact: list[list[Fraction]],
    labels: list[str],
) -> dict[str, list[float]]:
    """Each group's plain mean per column over its records, groups with data."""
    out: dict[str, list[float]] = {}
    width = len(exact[0]) if exact else 0
    for g, label in enumerate(labels):
        rows = np.flatnonzero(group == g).tolist()
        if rows:
            n = float(counts[rows].sum())
            out[label] = [_exact_mean([exact[i][c] for i in rows], n) for c in range(width)]
    return out


def _details(
    d: MetricDefinition,
    cells: _Cells,
    pooled: Mapping[str, list[float]],
    counts: NDArray[np.float64],
    exact: list[list[Fraction]],
    design: TableIndex,
    traceless: int,
) -> dict[str, Any]:
    """:func:`~.kinds.details.metric_details` without its per-record maps."""
    out: dict[str, Any] = {}
    columns = cells.columns
    if d.name == "escalation_reason_parity":
        rates = {r: {g: m[c] for g, m in pooled.items()} for c, r in enumerate(columns)}
        out["reason_rates"] = rates
        out["reason_gaps"] = {r: spread(list(g.values())) for r, g in rates.items()}
    elif d.detail_key in ("tool_name_rates", "tool_sequence_rates"):
        out[d.detail_key] = {c: {g: m[j] for g, m in pooled.items()} for j, c in enumerate(columns)}
        out[d.detail_key.replace("_rates", "_gaps")] = {
            c: spread(list(g.values())) for c, g in out[d.detail_key].items()
        }
    elif d.name == "retrieval_exposure_gap":
        nested = {doc: {g: m[c] for g, m in pooled.items()} for c, doc in enumerate(columns)}
        n = float(counts.sum())
        out["exposure_by_group"] = {
            c: _exact_mean([row[j] for row in exact], n) for j, c in enumerate(columns)
        }
        out["exposure_by_document_group"] = nested
        out["exposure_gaps"] = {doc: spread(list(g.values())) for doc, g in nested.items()}
    else:
        out[d.detail_key] = {g: m[0] for g, m in pooled.items()}
        if cells.score_source is not None:
            out["score_source"] = cells.score_source
    if d.missing_key is not None:
        records = np.bincount(
            design.group,
            weights=np.asarray(design.variant_records, dtype=np.float64),
            minlength=design.n_groups,
        )
        out["group_counts"] = {
            label: int(records[g]) for g, label in enumerate(design.group_labels)
        }
        out["missing_trace_records"] = traceless
        out[d.missing_key] = cells.missing_field_records
    return out


def _attribute_gaps(
    design: TableIndex,
    seed: NDArray[np.int64],
    group: NDArray[np.int64],
    counts: NDArray[np.float64],
    totals: NDArray[np.float64],
) -> dict[str, float]:
    """With several attributes, the within-seed gap along each one alone (its marginal)."""
    attrs = design.attributes
    if attrs is None or not counts.size:
        return {}
    out = {}
    for a, name in enumerate(attrs.names):
        labels, level = index_labels([attrs.values[a][attrs.levels[g, a]] for g in group.tolist()])
        out[name] = centred_estimate(seed, level, counts, totals, design.n_seeds, len(labels)).gap
    return out


def _with_signal(
    result: MetricResult,
    definition: MetricDefinition,
    signals: Mapping[str, SignalRecords],
    design: TableIndex,
) -> MetricResult:
    """The records carrying the metric's signal, when the table counts them."""
    name = definition.signal
    counted = signals.get(definition.name)
    if name not in SIGNALS or counted is None:
        return result
    why = counted.diagnosis or f"{SIGNALS[name].missing} in {design.record_count} record(s)."
    return replace(
        result,
        signal=name,
        signal_records=counted.records,
        diagnosis=why if not counted.records else "",
    )
