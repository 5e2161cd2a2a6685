"""What an evaluation returns: per-metric results and the run as a whole."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..stats.groups import GroupStat
from ..vocabulary import Direction

if TYPE_CHECKING:
    from ..records import Observation
    from .config import GateConfig

__all__ = [
    "CounterfactualPair",
    "Evaluation",
    "MetricResult",
    "RecordMap",
    "Variant",
    "Verdict",
]


class Verdict(StrEnum):
    """A metric's outcome (docs/fairness.md, "what PASS means"); the JSON value is the string.

    PASS: the data show the gap within the threshold (one-sided upper bound below it).
    FAIL: the data show the gap beyond the threshold.  INCONCLUSIVE: neither.
    NO_SIGNAL: no record carries what the metric reads.  PENDING: not yet decided.
    REPORT_ONLY: shown, never gating (counterfactual stability has no noise model).
    """

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    NO_SIGNAL = "no_signal"
    PENDING = "pending"
    REPORT_ONLY = "report_only"


class RecordMap(Mapping[str, float]):
    """A read-only ``{record id: value}`` map backed by arrays (built into a dict only when a
    report is written), so a million-record evaluation does not hold a dict per metric."""

    __slots__ = ("_ids", "_index", "_keep", "_values")

    def __init__(
        self, ids: list[str], values: NDArray[np.float64], valid: NDArray[np.bool_]
    ) -> None:
        self._ids = ids
        self._values = values
        self._keep = None if bool(valid.all()) else np.flatnonzero(valid)
        self._index: dict[str, int] | None = None

    def _rows(self) -> Iterator[int]:
        return iter(range(len(self._ids)) if self._keep is None else self._keep.tolist())

    def __iter__(self) -> Iterator[str]:
        return (self._ids[i] for i in self._rows())

    def __len__(self) -> int:
        return len(self._ids) if self._keep is None else int(self._keep.shape[0])

    def __getitem__(self, key: str) -> float:
        if self._index is None:
            self._index = {self._ids[i]: i for i in self._rows()}
        return float(self._values[self._index[key]])

    def to_dict(self) -> dict[str, float]:
        if self._keep is None:
            return dict(zip(self._ids, self._values.tolist(), strict=True))
        rows = self._keep
        return dict(zip([self._ids[i] for i in rows], self._values[rows].tolist(), strict=True))


@dataclass(frozen=True)
class Variant:
    """One side of a pair: a record, its group, its value of the metric and what it did.

    ``prompt``/``response`` are None when the record was recorded with content capture off;
    ``signals`` is None when the record has no process trace.
    """

    record_id: str
    variant_id: str
    group: str
    assignments: Mapping[str, str]
    value: float
    trace_id: str | None
    prompt: str | None
    response: str | None
    signals: Mapping[str, Any] | None


@dataclass(frozen=True)
class CounterfactualPair:
    """Two variants of one seed: ``high`` from the group at the top of the gap, ``low`` from
    the one at the bottom; ``difference`` is their groups' within-seed difference of means."""

    seed_id: str
    column: str | None
    difference: float
    high: Variant
    low: Variant
    differing: tuple[str, ...]
    summary: str

    @property
    def headline(self) -> str:
        """One line for a console: ``seed q03: female escalated (...), male not``."""
        return f"seed {self.seed_id}: {self.summary}"


@dataclass(frozen=True)
class MetricResult:
    """One metric's estimate, uncertainty and verdict.

    ``confidence_interval`` is the simultaneous interval at ``GateConfig.level`` of the named
    ``estimand`` (the largest difference between true group means); ``p_value`` the
    within-seed permutation p-value of "no group difference at all" (information);
    ``p_threshold`` the p-value of the gate's hypothesis "gap ≤ threshold"; ``p_holm`` the
    gate's p-value Holm-adjusted across the run's metrics, ``p_bh`` the Benjamini–Hochberg
    q-value of ``p_value``. ``verdict`` is a :class:`Verdict` value and
    ``reason``/``reason_text`` say why. ``coverage`` maps every expected group to the share
    of its variants holding a valid record. With several protected attributes, ``attributes``
    holds one result per attribute (its within-seed contrast; ``attribute`` names it), every
    one in the gate's Holm family, and the metric's interval, p-values and verdict are those
    of the attribute that decides it (docs/fairness.md, "several protected attributes");
    ``score`` and ``groups`` stay the combined groups' (fairtrace's score, cells as evidence).
    """

    metric: str
    score: float
    threshold: float
    direction: Direction
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
    verdict: Verdict = Verdict.PENDING
    p_holm: float | None = None
    p_bh: float | None = None
    warnings: tuple[str, ...] = ()
    evidence: tuple[CounterfactualPair, ...] = ()  # the seeds behind the gap, largest first
    estimand: str | None = None
    p_threshold: float | None = None
    units: int = 0
    worst_case_variance: bool = False
    coverage: dict[str, float] = field(default_factory=dict)
    p_missing: float | None = None
    reason: str = ""
    reason_text: str = ""
    optional: bool = False  # the suite marked it `optional: true`: NO_SIGNAL does not gate
    signal: str = ""  # what the metric reads (e.g. "tool calls", "output text")
    signal_records: int | None = None  # records carrying that signal (None: not counted)
    diagnosis: str = ""  # with NO_SIGNAL: what was seen that might hold the signal
    seeds_needed: int | None = None  # with INCONCLUSIVE: seeds for the MDE to reach the threshold
    # with several protected attributes: each one's own contrast and verdict (the metric's
    # verdict follows from them), and on such a result the attribute it is about
    attributes: tuple[MetricResult, ...] = ()
    attribute: str = ""

    @property
    def gating(self) -> bool:
        """Whether this result decides the gate (an optional metric without signal does not,
        nor a report-only one)."""
        if self.verdict == Verdict.REPORT_ONLY:
            return False
        return not (self.optional and self.verdict == Verdict.NO_SIGNAL)

    @property
    def severity(self) -> float:
        """How far the score is past the threshold (0 when on the right side)."""
        if self.direction == Direction.HIGHER:
            return max(0.0, self.threshold - self.score)
        return max(0.0, self.score - self.threshold)


#: the reason of an INCONCLUSIVE metric whose point estimate and shown interval lie beyond
#: the threshold: ``allow_inconclusive`` never lets it through
LEANS_FAIL = "leans_fail"


def tolerable(r: MetricResult) -> bool:
    """An INCONCLUSIVE metric ``allow_inconclusive`` may let through (not one leaning FAIL)."""
    return r.verdict == Verdict.INCONCLUSIVE and r.reason != LEANS_FAIL


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
    # the records evaluated when ``observations`` does not hold them (a sufficient-statistics
    # table: :func:`~..evaluate_table.evaluate_sufficient`); None: ``len(observations)``
    records: int | None = None

    @property
    def record_count(self) -> int:
        """How many records the evaluation read."""
        return len(self.observations) if self.records is None else self.records

    @property
    def passed(self) -> bool:
        """True when every gating metric passes (INCONCLUSIVE too with ``allow_inconclusive``)
        and the app raised no error."""
        return not self.failed_metrics and not self.errors

    @property
    def failed_metrics(self) -> list[str]:
        """The gating metrics that keep the gate from passing."""
        allow = getattr(self.config, "allow_inconclusive", False)
        return [
            r.metric
            for r in self.results
            if r.gating and not r.passed and not (allow and tolerable(r))
        ]
