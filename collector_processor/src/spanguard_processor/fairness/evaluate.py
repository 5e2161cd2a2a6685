"""Evaluate a suite's metrics over observations: estimates, intervals, p-values, verdicts.

One pass computes every metric's per-record values (hooks run once per record). A variant's
repeats are averaged into one unit before any statistic (:mod:`.stats.inference`): intervals, the
threshold test and the MDE come from the seeds' within-seed contrasts of variant means, and the
"any difference" p-value from permuting variants (with their repeats) within seeds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from spanguard.exceptions import InputError

from .design.suite import MetricConfig
from .gate.config import GateConfig
from .gate.decide import apply_gate
from .gate.results import Evaluation, MetricResult
from .kinds import Prepared, RecordIndex, strategy
from .kinds.evidence import PAIRS
from .metrics import MetricDefinition, get_metric
from .metrics.diagnosis import SIGNALS, SignalCounts
from .metrics.signals import ObservationList
from .records import Observation
from .vocabulary import Kind

__all__ = ["evaluate"]


def _generated_at() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        datetime.fromtimestamp(int(epoch), UTC) if epoch and epoch.isdigit() else datetime.now(UTC)
    )
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
        raise InputError(
            "there are no records to evaluate; run the app or pass trace files "
            "that hold the suite's variants."
        )
    seen: set[str] = set()
    for o in observations:
        if o.id in seen:
            raise InputError(
                f"the record id '{o.id}' appears twice; every record needs a unique id.", field="id"
            )
        seen.add(o.id)
    observations = ObservationList(observations)
    design = RecordIndex.build(observations, expected)
    prepared = []
    for mc in metrics:
        definition = get_metric(mc.type)
        if definition is None:
            raise InputError(f"unknown metric type '{mc.type}'.", field="type")
        prepared.append(strategy(definition.kind).prepare(mc, definition, design))
    prepared = _bootstrap(prepared, design, cfg)
    p_missing = design.expected.missingness(
        [p.covered for p in prepared if p.covered is not None], cfg
    )
    counts = SignalCounts(observations)  # what each metric reads, and who carries it
    results = []
    for p in prepared:
        kind = strategy(p.definition.kind)
        result = kind.result(p, design, cfg, p_missing)
        result = kind.evidence(result, p, design, evidence_pairs)
        results.append(with_signal(result, p.definition, counts))
    return Evaluation(
        generated_at=generated_at or _generated_at(),
        variant_count=variant_count
        if variant_count is not None
        else len({o.variant_id for o in observations}),
        results=tuple(apply_gate(results, cfg)),
        observations=tuple(observations),
        config=cfg,
        suite_digest=suite_digest,
        seeds=design.n_seeds,
    )


def _bootstrap(
    prepared: Sequence[Prepared], design: RecordIndex, cfg: GateConfig
) -> list[Prepared]:
    """Each kind resamples its metrics together (one stream of seed draws per kind); the
    metrics keep their order."""
    rows: dict[Kind, list[int]] = {}
    for i, p in enumerate(prepared):
        rows.setdefault(p.definition.kind, []).append(i)
    out = list(prepared)
    for kind, at in rows.items():
        drawn = strategy(kind).bootstrap([prepared[i] for i in at], design, cfg)
        for i, p in zip(at, drawn, strict=True):
            out[i] = p
    return out


def with_signal(
    result: MetricResult, definition: MetricDefinition, counts: SignalCounts
) -> MetricResult:
    """``result`` with its signal, the records carrying it and, when none, the diagnosis
    (unchanged for a metric that names no signal: a custom metric)."""
    name = definition.signal
    if name not in SIGNALS:
        return result
    carrying = counts.count(name)
    return replace(
        result,
        signal=name,
        signal_records=carrying,
        diagnosis=counts.diagnosis(name) if carrying == 0 else "",
    )
