"""What an evaluation returns: per-metric results and the run as a whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .gate import GateConfig
    from .records import Observation

__all__ = ["Evaluation", "GroupStat", "MetricResult"]


@dataclass(frozen=True)
class GroupStat:
    """One group's mean (adjusted for seeds) with its bootstrap interval, for charts."""

    label: str
    mean: float
    low: float
    high: float
    records: int


@dataclass(frozen=True)
class MetricResult:
    """One metric's estimate, uncertainty and verdict.

    ``confidence_interval`` is a seed-cluster bootstrap interval at ``GateConfig.level``;
    ``p_value`` the within-seed permutation p-value of the gap; ``p_holm``/``p_bh`` the same
    adjusted across the run's metrics. ``verdict`` is "pass", "fail" or "insufficient_data".
    """

    metric: str
    score: float
    threshold: float
    direction: str
    category: str
    records: int
    confidence_interval: tuple[float, float] | None
    p_value: float | None
    details: dict[str, Any]
    groups_with_data: int
    seeds: int
    p_method: str | None
    mde: float | None = None
    groups: tuple[GroupStat, ...] = ()
    passed: bool = False
    verdict: str = "pending"
    p_holm: float | None = None
    p_bh: float | None = None
    warnings: tuple[str, ...] = ()

    @property
    def severity(self) -> float:
        """How far the score is past the threshold (0 when on the right side)."""
        if self.direction == "higher":
            return max(0.0, self.threshold - self.score)
        return max(0.0, self.score - self.threshold)


@dataclass(frozen=True)
class Evaluation:
    """A whole run: results sorted failed-first, then by severity, then by name."""

    generated_at: str
    variant_count: int
    results: tuple[MetricResult, ...]
    observations: tuple[Observation, ...]
    config: GateConfig
    suite_digest: str = ""
    seeds: int = 0
    errors: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results) and not self.errors

    @property
    def failed_metrics(self) -> list[str]:
        return [r.metric for r in self.results if not r.passed]
