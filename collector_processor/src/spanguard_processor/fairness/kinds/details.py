"""The details of a gap metric's result, in fairtrace's shape.

fairtrace reports, beside a metric's score, each group's rate (or score, length, count) under
a per-metric key, per-column rates and gaps for the multi-column metrics (escalation reasons,
tool names and sequences, document groups), each record's value and counters of records with
a missing field. :func:`metric_details` builds that dict from the metric's per-record values;
the statistics (:mod:`..stats.inference`) never read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..gate.results import RecordMap
from ..metrics import MetricDefinition, MetricValues
from ..metrics.compat import exact_mean
from ..metrics.signals import ObservationList
from ..records import Observation
from ..stats import seeds

__all__ = ["balanced", "counters", "metric_details", "pooled_means", "spread"]


def spread(values: list[float]) -> float:
    """max − min of the groups' values (0 with fewer than two)."""
    return max(values) - min(values) if len(values) >= 2 else 0.0


def balanced(design: seeds.Design) -> bool:
    """Whether every seed holds every group it holds equally often (then pooled means are
    fairtrace's estimate)."""
    cells = np.zeros((design.n_seeds, design.n_groups))
    np.add.at(cells, (design.seed, design.group), 1.0)
    used = cells[cells.sum(axis=1) > 0]
    return bool(np.all(used == used[:, :1])) if used.size else True


def pooled_means(
    x: NDArray[np.float64], design: seeds.Design, labels: list[str]
) -> dict[str, list[float]]:
    """Each group's plain mean per column (fairtrace's exact summation), groups with data."""
    order = np.argsort(design.group, kind="stable")
    bounds = np.searchsorted(design.group[order], np.arange(design.n_groups + 1))
    out: dict[str, list[float]] = {}
    for g, label in enumerate(labels):
        rows = order[bounds[g] : bounds[g + 1]]
        if rows.shape[0]:
            out[label] = [exact_mean(x[rows, c]) for c in range(x.shape[1])]
    return out


def counters(
    definition: MetricDefinition,
    obs: Sequence[Observation],
    labels: list[str],
    group_idx: NDArray[np.int64],
    empty: int,
) -> dict[str, Any]:
    """fairtrace's record counters: per group, without a trace, with the field missing."""
    if definition.missing_key is None:
        return {}
    counts = np.bincount(group_idx, minlength=len(labels))
    return {
        "group_counts": {label: int(counts[g]) for g, label in enumerate(labels)},
        "missing_trace_records": sum(1 for o in obs if o.trace is None),
        definition.missing_key: empty,
    }


def metric_details(
    d: MetricDefinition,
    v: MetricValues,
    obs: Sequence[Observation],
    pooled: Mapping[str, list[float]],
    labels: list[str],
    group_idx: NDArray[np.int64],
) -> dict[str, Any]:
    """A gap metric's details in fairtrace's shape: each group's rate (or score, count…)
    under the metric's ``detail_key``, per-column gaps for multi-column metrics, each record's
    value, and the counters of records with a missing field."""
    ids = obs.ids() if isinstance(obs, ObservationList) else [o.id for o in obs]
    out: dict[str, Any] = {}
    if d.name == "escalation_reason_parity":
        rates = {r: {g: m[c] for g, m in pooled.items()} for c, r in enumerate(v.columns)}
        out["reason_rates"] = rates
        gaps = {r: spread(list(g.values())) for r, g in out["reason_rates"].items()}
        out["reason_gaps"] = gaps
        reasons = [o.trace.escalation_reason if o.trace is not None else None for o in obs]
        out["scenario_reasons"] = dict(zip(ids, reasons, strict=True))
        out["scenario_reason_gaps"] = {
            i: float(gaps.get(r, 0.0)) if r else 0.0 for i, r in zip(ids, reasons, strict=True)
        }
    elif d.detail_key in ("tool_name_rates", "tool_sequence_rates"):
        # per column (a tool name, a tool sequence): each group's rate and the gap of rates
        out[d.detail_key] = {
            c: {g: m[j] for g, m in pooled.items()} for j, c in enumerate(v.columns)
        }
        out[d.detail_key.replace("_rates", "_gaps")] = {
            c: spread(list(g.values())) for c, g in out[d.detail_key].items()
        }
    elif d.name == "retrieval_exposure_gap":
        # fairtrace's key keeps fairtrace's flat shape (document group → exposure), which
        # `fairtrace compare` reads: here each document group's mean exposure per record over
        # every user group; what the gap compares (per document group, each user group's
        # mean) sits under a key of its own
        nested = {doc: {g: m[c] for g, m in pooled.items()} for c, doc in enumerate(v.columns)}
        out["exposure_by_group"] = _column_means(v)
        out["exposure_by_document_group"] = nested
        out["exposure_gaps"] = {doc: spread(list(g.values())) for doc, g in nested.items()}
        out["scenario_exposures"] = _per_record(ids, v.values.sum(axis=1), v.valid)
    else:
        out[d.detail_key] = {g: m[0] for g, m in pooled.items()}
        out["scenario_scores"] = _per_record(ids, v.values[:, 0], v.valid)
        if v.score_source is not None:
            out["score_source"] = v.score_source
    out.update(counters(d, obs, labels, group_idx, v.missing_field_records))
    return out


def _column_means(v: MetricValues) -> dict[str, float]:
    """Each column's mean over the valid records (fairtrace's exact summation)."""
    rows = v.values[v.valid]
    return {c: exact_mean(rows[:, j]) if rows.shape[0] else 0.0 for j, c in enumerate(v.columns)}


def _per_record(ids: list[str], values: NDArray[np.float64], valid: NDArray[np.bool_]) -> RecordMap:
    return RecordMap(ids, values, valid)
