"""Observations reduced to the sufficient-statistics table as they are read: memory flat in
the number of records.

:class:`TableBuilder` takes observations in batches (any order, any number of passes over
several inputs), matches each to its suite variant as :func:`~.pipeline.match_to_suite` does,
computes every metric's values for the batch and adds them to one accumulator per (metric,
seed, group) cell: the count, the exact sums of the values and of their squares per column
(integers over a power of two, rounded once at the end, so the table does not depend on the
order the records came in), the distinct variants, and the smallest record id with its trace
id (the cell's evidence pointer). What it keeps grows with the suite's cells, never with the
records. :func:`reduce_observations` is the one-call form; :func:`~.evaluate_table.
evaluate_sufficient` evaluates the table.

Metrics are computed a batch at a time: a metric whose value for one record depends on the
other records cannot stream. Every built-in gap metric is per record; the two that are not
gap metrics (counterfactual stability, which compares each seed's texts, and the legacy
exposure formula) are refused, and so is a custom metric of another kind. A custom gap metric
(``register_metric``) streams as long as its values are per record. Duplicate record ids are not
detected here (that would keep every id).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from spanguard.exceptions import InputError

from .design.suite import Suite
from .metrics import MetricDefinition, get_metric
from .metrics.diagnosis import (
    SIGNALS,
    diagnosis_text,
    from_spans,
    ungrouped_documents,
    unread_notes,
)
from .records import Observation
from .stats.sufficient import (
    CellStats,
    EvidencePointer,
    MetricColumns,
    ObservedCell,
    SeedDiscordance,
    SignalRecords,
    SufficientStatistics,
    seed_discordance,
)
from .vocabulary import Kind

__all__ = ["BATCH", "ExactSum", "TableBuilder", "reduce_observations"]

#: observations per metric computation
BATCH = 2048


class ExactSum:
    """A sum of floats kept exactly (an integer over a power of two), rounded once."""

    __slots__ = ("num", "shift")

    def __init__(self) -> None:
        self.num = 0
        self.shift = 0

    def add(self, x: float) -> None:
        p, q = x.as_integer_ratio()
        k = q.bit_length() - 1
        if k > self.shift:
            self.num <<= k - self.shift
            self.shift = k
        self.num += p << (self.shift - k)

    def value(self) -> float:
        return self.num / (1 << self.shift)  # int / int: correctly rounded


@dataclass
class _Cell:
    count: int = 0
    sums: dict[str, ExactSum] = field(default_factory=dict)
    squares: dict[str, ExactSum] = field(default_factory=dict)
    variants: set[str] = field(default_factory=set)
    first: tuple[str, str | None] | None = None


@dataclass
class _Metric:
    name: str
    definition: MetricDefinition
    options: dict[str, object]
    cells: dict[tuple[str, str], _Cell] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None  # the first batch's column labels
    varied: bool = False  # a later batch had other labels: the table's are their sorted union
    labels: set[str] = field(default_factory=set)
    missing: int = 0
    sources: set[str] = field(default_factory=set)
    carrying: int = 0


class TableBuilder:
    """Accumulates a suite's sufficient-statistics table from observations (see the module)."""

    def __init__(self, suite: Suite, batch: int = BATCH) -> None:
        self._suite = suite
        self._batch = batch
        self._variants = {v.id: v for v in suite.variants}
        self._assigned: dict[str, dict[str, str]] = {}
        self._metrics = [
            _metric(mc.type, dict(mc.options), suite.source, f"metrics[{i}].type")
            for i, mc in enumerate(suite.metrics)
        ]
        self._observed: dict[tuple[str, str], int] = {}
        self._pending: list[Observation] = []
        self.unmatched = 0
        self.traceless = 0
        self._from_spans = 0
        self._ungrouped = 0
        self._unread: Counter[tuple[str, str]] = Counter()
        self.assigned = False  # an unmatched record assigns a group (pipeline's error hint)

    def add(self, observations: Iterable[Observation]) -> None:
        """Match and reduce ``observations`` (a batch at a time; the rest waits for more)."""
        for o in observations:
            v = self._variants.get(o.variant_id)
            if v is None:
                self.unmatched += 1
                self.assigned = self.assigned or bool(o.assignments)
                continue
            assignments = self._assigned.get(v.id)
            if assignments is None:
                assignments = self._assigned[v.id] = dict(v.assignments)
            self._pending.append(
                replace(o, seed_id=v.seed_id, assignments=assignments, prompt=o.prompt or v.prompt)
            )
            if len(self._pending) >= self._batch:
                self._flush()

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        keys = [(o.seed_id, o.group) for o in batch]
        for key in keys:
            self._observed[key] = self._observed.get(key, 0) + 1
        self.traceless += sum(1 for o in batch if o.trace is None)
        self._from_spans += from_spans(batch)
        self._ungrouped += ungrouped_documents(batch)
        self._unread.update(unread_notes(batch))
        for m in self._metrics:
            _reduce_batch(m, batch, keys)

    def table(self) -> SufficientStatistics:
        """The table of everything added so far (rows in the table's order)."""
        self._flush()
        cells: list[CellStats] = []
        discordance: list[SeedDiscordance] = []
        evidence: list[EvidencePointer] = []
        columns: list[MetricColumns] = []
        for m in self._metrics:
            labels = tuple(sorted(m.labels)) if m.varied else m.columns or ()
            _rows(m, labels or ("",), cells, discordance)
            for (seed, group), cell in sorted(m.cells.items()):
                if cell.first is not None:
                    evidence.append(EvidencePointer(m.name, seed, group, *cell.first))
            source = _source(m.sources)
            columns.append(MetricColumns(m.name, labels, m.missing, source))
        return SufficientStatistics(
            cells=tuple(cells),
            discordance=tuple(discordance),
            evidence=tuple(evidence),
            observed=tuple(ObservedCell(s, g, n) for (s, g), n in sorted(self._observed.items())),
            columns=tuple(columns),
            signals=tuple(self._signal(m) for m in self._metrics if m.definition.signal in SIGNALS),
            unmatched=self.unmatched,
            traceless=self.traceless,
        )

    def _signal(self, m: _Metric) -> SignalRecords:
        if m.carrying:
            return SignalRecords(m.name, m.carrying)
        why = diagnosis_text(
            m.definition.signal,
            sum(self._observed.values()),
            self._unread,
            lambda: self._from_spans,
            lambda: self._ungrouped,
        )
        return SignalRecords(m.name, 0, why)


def reduce_observations(
    suite: Suite, observations: Iterable[Observation], batch: int = BATCH
) -> SufficientStatistics:
    """The sufficient-statistics table of ``suite``'s metrics over ``observations``."""
    builder = TableBuilder(suite, batch)
    builder.add(observations)
    return builder.table()


def _metric(kind: str, options: dict[str, object], source: str, where: str) -> _Metric:
    definition = get_metric(kind)
    if definition is None:
        raise InputError(f"unknown metric type '{kind}'.", file=source, field=where)
    if definition.kind != Kind.GAP:
        raise InputError(
            f"the metric '{kind}' compares records with each other (texts, or fairtrace's "
            "legacy formula): it cannot be reduced as records stream; evaluate without "
            "streaming.",
            file=source,
            field=where,
        )
    return _Metric(definition.name, definition, options)


def _reduce_batch(m: _Metric, batch: Sequence[Observation], keys: list[tuple[str, str]]) -> None:
    values = m.definition.compute(batch, m.options)
    labels = values.columns
    if m.columns is None:
        m.columns = labels
    elif m.columns != labels:
        m.varied = True
    m.labels.update(labels)
    m.missing += values.missing_field_records
    if values.score_source is not None:
        m.sources.add(values.score_source)
    signal = SIGNALS.get(m.definition.signal)
    if signal is not None:
        m.carrying += sum(1 for o in batch if signal.carries(o))
    matrix = values.values.reshape(len(batch), -1)
    names = labels or ("",)
    for i in np.flatnonzero(values.valid).tolist():
        o = batch[i]
        cell = m.cells.get(keys[i])
        if cell is None:
            cell = m.cells[keys[i]] = _Cell()
        cell.count += 1
        cell.variants.add(o.variant_id)
        if cell.first is None or o.id < cell.first[0]:
            cell.first = (o.id, o.trace_id)
        for j, x in enumerate(matrix[i].tolist()):
            if not math.isfinite(x):
                raise InputError(
                    f"the metric '{m.name}' gave {x} for record '{o.id}'; values must be finite."
                )
            label = names[j]
            total = cell.sums.get(label)
            if total is None:
                total = cell.sums[label] = ExactSum()
                cell.squares[label] = ExactSum()
            total.add(x)
            cell.squares[label].add(x * x)


def _source(sources: set[str]) -> str | None:
    """A scored metric's source over every batch, as one computation over all would say."""
    if not sources:
        return None
    if len(sources) == 1:
        return next(iter(sources))
    return "mixed"


def _rows(
    m: _Metric,
    labels: tuple[str, ...],
    cells: list[CellStats],
    discordance: list[SeedDiscordance],
) -> None:
    rows: list[CellStats] = []
    for column, label in enumerate(labels):
        for (seed, group), cell in sorted(m.cells.items()):
            exact = cell.sums.get(label, ExactSum())
            square = cell.squares[label].value() if label in cell.squares else 0.0
            row = (cell.count, exact.value(), square, len(cell.variants), (exact.num, exact.shift))
            rows.append(CellStats(m.name, column, seed, group, *row))
    cells.extend(rows)
    discordance.extend(seed_discordance(rows))
