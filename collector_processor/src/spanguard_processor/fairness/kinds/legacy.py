"""The legacy exposure kind (``retrieval_exposure_gap_legacy``): fairtrace 0.1.0's formula,
kept for parity (:func:`..metrics.compat.legacy_exposure`); no interval, no p-value, no evidence."""

from __future__ import annotations

from ..design.suite import MetricConfig
from ..gate.config import GateConfig
from ..gate.results import MetricResult
from ..metrics import MetricDefinition
from ..metrics.compat import legacy_exposure
from .base import KindStrategy, Prepared, RecordIndex
from .details import counters

__all__ = ["LegacyExposureStrategy"]


class LegacyExposureStrategy(KindStrategy[Prepared]):
    def prepare(
        self, config: MetricConfig, definition: MetricDefinition, design: RecordIndex
    ) -> Prepared:
        obs = design.observations
        score, details, empty = legacy_exposure(obs)
        return Prepared(
            config=config,
            definition=definition,
            score=score,
            details={
                **details,
                **counters(definition, obs, design.group_labels, design.group, empty),
            },
        )

    def result(
        self, prepared: Prepared, design: RecordIndex, cfg: GateConfig, p_missing: float | None
    ) -> MetricResult:
        return MetricResult(
            score=prepared.score,
            confidence_interval=None,
            p_value=None,
            details=prepared.details,
            groups_with_data=2,
            seeds=0,
            p_method="none (legacy formula)",
            **prepared.base(design),
        )
