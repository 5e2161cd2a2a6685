"""Metric kinds as strategies: each :class:`~.registry.Kind` names the
:class:`~.base.KindStrategy` that evaluates its metrics (prepare, bootstrap, result,
evidence: fairtrace-shaped details in :mod:`.details`, the counterfactual pairs behind a gap in
:mod:`.evidence`), so :func:`..evaluate.evaluate` orchestrates without asking which kind it has."""

from __future__ import annotations

from typing import Any

from ..vocabulary import Kind
from .base import KindStrategy, Prepared, RecordIndex
from .gap import GapStrategy
from .legacy import LegacyExposureStrategy
from .stable import StabilityStrategy

__all__ = ["STRATEGIES", "KindStrategy", "Prepared", "RecordIndex", "strategy"]

STRATEGIES: dict[Kind, KindStrategy[Any]] = {
    Kind.GAP: GapStrategy(),
    Kind.STABILITY: StabilityStrategy(),
    Kind.LEGACY_EXPOSURE: LegacyExposureStrategy(),
}


def strategy(kind: Kind) -> KindStrategy[Any]:
    """The strategy that evaluates metrics of ``kind`` (a kind it does not know is a gap, as
    before kinds were strategies: a plugin's metric is evaluated like every built-in gap)."""
    return STRATEGIES.get(kind, STRATEGIES[Kind.GAP])
