"""The fairness gate's input reduced to sufficient statistics: the table any map fills.

A gap metric's estimate, contrasts and permutations read per-record values only through their
sums per (seed, group) cell (:func:`.seeds.seed_aggregates`); the four-outcome gate's variance
bounds read the sums of squares; a rate metric's exact bound reads, per seed, whether its groups
disagree. So the per-record map (spans → agent trace → observation → metric value) can run
anywhere — in Python, streamed, here; as SQL in DuckDB or ClickHouse — as long as it hands back
these rows:

* :class:`CellStats`: one row per (metric, column, seed, group): ``count`` valid records,
  ``total`` and ``total_sq`` of their values, ``variants`` distinct variants among them (1 in a
  counterfactual suite: a seed instantiates each group once; repeats share the variant);
* :class:`SeedDiscordance`: one row per (metric, column, seed) with two or more groups: whether
  the groups' cell means differ (a rate metric's discordant seeds);
* :class:`EvidencePointer`: per (metric, seed, group) the record that stands for the cell in the
  reports (the smallest record id, deterministic): where a reader finds the trace;
* :class:`ObservedCell` (optional): per (seed, group) the records matched to the suite, valid
  for a metric or not (the run's seeds and groups; without it, those of ``cells``);
* :class:`MetricColumns` (optional): a multi-column metric's column labels, by column index;
* :class:`SignalRecords` (optional): per metric, the records carrying what it reads (without
  it the evaluation does not count them and cannot say NO_SIGNAL from that count).

:class:`SufficientStatistics` is the whole table, in a stable order (metric in suite order,
then column, seed, group, by label), so two maps that agree write identical tables.
:func:`reduce_values` is the Python map's reducer, from one metric's per-record values.
:data:`TABLE_VERSION` changes when a field does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "TABLE_VERSION",
    "CellStats",
    "EvidencePointer",
    "MetricColumns",
    "ObservedCell",
    "SeedDiscordance",
    "SignalRecords",
    "SufficientStatistics",
    "cell_arrays",
    "reduce_values",
    "seed_discordance",
]

#: the version of the table's shape (fields, meaning, order)
TABLE_VERSION = 2


@dataclass(frozen=True, slots=True)
class CellStats:
    """One metric column's valid records of one (seed, group) cell."""

    metric: str  # the suite's metric name
    column: int  # 0 for a one-column metric; else the index into the metric's columns
    seed_id: str
    group: str  # fairtrace's group label: sorted "k=v" pairs joined by ", ", or "base"
    count: int  # valid records (repeats included)
    total: float  # sum of their values
    total_sq: float  # sum of their squared values
    variants: int  # distinct variant ids among them
    # ``total`` exactly, as (n, k): the integer n over 2**k (None: the map did not keep it);
    # pooled group means are then exact, as the records path computes them
    exact_total: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class SeedDiscordance:
    """Whether a seed's groups disagree on a metric column (seeds with >= 2 groups only)."""

    metric: str
    column: int
    seed_id: str
    groups: int  # groups with a valid record in the seed
    discordant: bool  # the groups' cell means are not all equal


@dataclass(frozen=True, slots=True)
class EvidencePointer:
    """The record standing for one (seed, group) cell in the reports: where to read it."""

    metric: str
    seed_id: str
    group: str
    record_id: str  # the smallest record id of the cell
    trace_id: str | None  # its OpenTelemetry trace id, when it came from spans


@dataclass(frozen=True, slots=True)
class ObservedCell:
    """The records of one (seed, group) cell matched to the suite, valid for any metric or not."""

    seed_id: str
    group: str
    records: int


@dataclass(frozen=True, slots=True)
class MetricColumns:
    """A metric's column labels (``labels[column]``), e.g. a document group per column."""

    metric: str
    labels: tuple[str, ...]
    missing_field_records: int = 0  # records valid for it with the field it reads empty
    score_source: str | None = None  # where a scored metric's values came from (fairtrace's)


@dataclass(frozen=True, slots=True)
class SignalRecords:
    """How many of the run's records carry what a metric reads (its ``signal``)."""

    metric: str
    records: int
    diagnosis: str = ""  # with no record carrying it: what was seen that might hold it


@dataclass(frozen=True)
class SufficientStatistics:
    """Everything the gate reads of the records, for every metric of a suite."""

    cells: tuple[CellStats, ...]
    discordance: tuple[SeedDiscordance, ...]
    evidence: tuple[EvidencePointer, ...]
    version: int = TABLE_VERSION
    observed: tuple[ObservedCell, ...] = ()
    columns: tuple[MetricColumns, ...] = ()
    signals: tuple[SignalRecords, ...] = ()
    unmatched: int = 0  # records that match no variant of the suite
    traceless: int = 0  # matched records without a process trace (fairtrace records)


def reduce_values(
    metric: str,
    seed_ids: Sequence[str],
    groups: Sequence[str],
    variant_ids: Sequence[str],
    values: NDArray[np.float64],
    valid: NDArray[np.bool_],
) -> SufficientStatistics:
    """The table of one metric from its per-record values ``(n, C)`` and validity ``(n,)``,
    with each record's seed id, group label and variant id; evidence pointers are the caller's
    (they need record ids). Rows sorted by column, seed id, group label."""
    keep = np.flatnonzero(valid)
    cells: dict[tuple[str, str], list[int]] = {}
    for i in keep.tolist():
        cells.setdefault((seed_ids[i], groups[i]), []).append(i)
    out: list[CellStats] = []
    columns = values.shape[1] if values.ndim == 2 else 1
    matrix = values.reshape(len(valid), columns)
    for column in range(columns):
        for (seed, group), rows in sorted(cells.items()):
            x = matrix[rows, column]
            out.append(
                CellStats(
                    metric,
                    column,
                    seed,
                    group,
                    len(rows),
                    float(x.sum()),
                    float(np.dot(x, x)),
                    len({variant_ids[i] for i in rows}),
                )
            )
    return SufficientStatistics(tuple(out), seed_discordance(out), ())


def seed_discordance(cells: Sequence[CellStats]) -> tuple[SeedDiscordance, ...]:
    """Per (metric, column, seed) of two or more groups, whether their cell means differ: the
    discordance rows of ``cells`` in the table's order (each seed's cells consecutive, as the
    table orders them)."""
    out: list[SeedDiscordance] = []
    start = 0
    for end in range(1, len(cells) + 1):
        first = cells[start]
        if end < len(cells) and (cells[end].metric, cells[end].column, cells[end].seed_id) == (
            first.metric,
            first.column,
            first.seed_id,
        ):
            continue
        if end - start >= 2:
            differ = len({c.total / c.count for c in cells[start:end]}) > 1
            out.append(
                SeedDiscordance(first.metric, first.column, first.seed_id, end - start, differ)
            )
        start = end
    return tuple(out)


def cell_arrays(
    cells: Sequence[CellStats], seed_labels: Sequence[str], group_labels: Sequence[str]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """One metric's cells as arrays indexed like the gate's: counts ``(S, G)`` (of column 0),
    sums and sums of squares ``(S, G, C)``; seeds and groups absent from the labels are an
    error (``KeyError``)."""
    seed_at = {label: i for i, label in enumerate(seed_labels)}
    group_at = {label: i for i, label in enumerate(group_labels)}
    columns = 1 + max((c.column for c in cells), default=0)
    shape = (len(seed_labels), len(group_labels))
    counts = np.zeros(shape)
    sums = np.zeros((*shape, columns))
    squares = np.zeros((*shape, columns))
    for c in cells:
        s, g = seed_at[c.seed_id], group_at[c.group]
        if c.column == 0:
            counts[s, g] = c.count
        sums[s, g, c.column] = c.total
        squares[s, g, c.column] = c.total_sq
    return counts, sums, squares
