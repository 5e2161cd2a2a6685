"""``check``'s typed results: the four outcomes per metric, the options, a case's change and
the verdict (decided in :mod:`.verdict`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from .measures import FLOORS, Tolerances
from .paired import PairedBound

__all__ = [
    "CaseChange",
    "MetricOutcome",
    "MetricVerdict",
    "RegressionOptions",
    "RegressionVerdict",
]


class MetricOutcome(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    NO_SIGNAL = "NO_SIGNAL"
    REPORT_ONLY = "REPORT_ONLY"


@dataclass(frozen=True)
class RegressionOptions:
    alpha: float = 0.05
    tolerance_scale: float = 1.0
    allow_inconclusive: bool = False
    allow_missing: bool = False
    same_machine: bool = False  # the runs were measured under the same load: gate overall latency
    tolerances: Tolerances = field(default_factory=Tolerances)
    #: a latency under this many ms is read as this (the machine's scheduling moves it more)
    min_latency_ms: float = FLOORS["latency_ms"]


@dataclass(frozen=True)
class CaseChange:
    """A case whose own test shows it worse (Holm-adjusted across cases and metrics)."""

    case_id: str
    metric: str
    p_value: float  # Holm-adjusted
    diff: str


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    outcome: MetricOutcome
    gating: bool
    tolerance: float  # on the change's scale (points, counts, log ratio)
    cases: int
    bound: PairedBound | None
    p_value: float | None  # Holm-adjusted p of the aggregate test of H0: D ≤ τ
    note: str
    evidence: tuple[str, ...] = ()
    kind: str = "rate"


@dataclass(frozen=True)
class RegressionVerdict:
    metrics: tuple[MetricVerdict, ...]
    changes: tuple[CaseChange, ...]
    cases: int
    repeats: tuple[float, float]  # mean repeats per case: baseline, current
    app_errors: tuple[int, int]
    allow_inconclusive: bool = False

    def blocking(self) -> list[MetricVerdict]:
        ok = {MetricOutcome.PASS}
        if self.allow_inconclusive:
            ok.add(MetricOutcome.INCONCLUSIVE)
        return [m for m in self.metrics if m.gating and m.outcome not in ok]

    @property
    def passed(self) -> bool:
        return not self.blocking()
