"""A suite's sufficient-statistics table filled in the engine, as :mod:`.stream` fills it.

When every metric of a suite is one the engine can reduce (:data:`.stats.sufficient_sql.SQL_VALUES`:
a flag or count of what the SQL map computes), the engine groups the mapped agent traces by
variant — records, sums and sums of squares of each metric's value, records whose value is
empty (0), records carrying each metric's signal, the smallest record id and its trace — and
only that table (one row per variant in the traffic) leaves it. :func:`suite_table` then matches
the variants to the suite and writes the rows :class:`~.stream.TableBuilder` writes from the
same records: cells, discordance, evidence, observed cells, column labels, signal counts,
records matching no variant. :func:`~.evaluate_table.evaluate_sufficient` evaluates it.

Records the map cannot finish alone (``python_rules``), and those whose signal depends on a
rule the query does not copy (a fairtrace ``spanguard_stated`` note; documents as the only
process signal, which Python parses), are counted apart: with any, :func:`suite_table` returns
no table and says why, and the caller evaluates the records instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..traces.sqlmap import expand_sql, map_sql
from .design.suite import Suite
from .records import group_label
from .stats.sufficient import (
    CellStats,
    EvidencePointer,
    MetricColumns,
    ObservedCell,
    SignalRecords,
    SufficientStatistics,
    seed_discordance,
)
from .stats.sufficient_sql import SQL_VALUES

__all__ = ["EngineTable", "suite_table", "suite_table_sql"]

#: per metric: the SQL flag of a record carrying its signal (metrics/diagnosis.SIGNALS) and
#: whether a value of 0 counts as an empty field (metrics/builtin's ``empty``)
_PROCESS = "(n_tools > 0 OR n_documents > 0 OR n_plan > 0 OR escalated = 1 OR n_friction > 0)"
_SIGNAL: Mapping[str, tuple[str, bool]] = {
    "escalation_parity": (_PROCESS, False),
    "tool_use_parity": ("n_tools > 0", True),
    "tool_count_gap": ("n_tools > 0", True),
    "plan_length_gap": ("n_plan > 0", True),
    "friction_point_gap": (_PROCESS, True),
    "llm_call_gap": ("n_llm > 0", False),
}
#: records the query cannot judge alone: a stated-keys note, or documents as the only
#: process signal (Python parses the documents; a value may hold none)
_UNSURE = (
    "python_rules = 1 OR @contains(metadata; '\"spanguard.metadata.spanguard_stated\"')"
    " OR (n_documents > 0 AND n_tools = 0 AND n_plan = 0 AND escalated = 0 AND n_friction = 0)"
)


def suite_table_sql(
    dialect: str, source: str, metrics: Sequence[str], *, since: int | None, until: int | None
) -> str:
    """One row per variant of the mapped traffic (``variant`` NULL: the records left out),
    with ``n``, ``first_record``, ``first_trace`` and per metric ``i``: ``t{i}`` (sum),
    ``q{i}`` (sum of squares), ``z{i}`` (records valued 0), ``s{i}`` (records carrying its
    signal). Ordered by variant."""
    inner = map_sql(dialect, source, since=since, until=until, inner=True)
    values = ", ".join(f"{SQL_VALUES[name]} AS v{i}" for i, name in enumerate(metrics))
    flags = ", ".join(
        f"CASE WHEN {_SIGNAL[name][0]} THEN 1 ELSE 0 END AS c{i}" for i, name in enumerate(metrics)
    )
    sums = ", ".join(
        f"SUM(v{i}) AS t{i}, SUM(v{i} * v{i}) AS q{i}, "
        f"SUM(CASE WHEN v{i} = 0 THEN 1 ELSE 0 END) AS z{i}, SUM(c{i}) AS s{i}"
        for i in range(len(metrics))
    )
    settings = "SETTINGS join_use_nulls = 1" if dialect == "clickhouse" else ""
    body = f"""WITH m AS (
    SELECT *, CASE WHEN {_UNSURE} THEN 1 ELSE 0 END AS unsure,
        COALESCE(variant_id, request_id, trace_id) AS variant,
        CASE WHEN repeat > 0
             THEN COALESCE(variant_id, request_id, trace_id) || '#' || CAST(repeat AS VARCHAR)
             ELSE COALESCE(variant_id, request_id, trace_id) END AS record_id
    FROM ({inner}) AS mapped
)
SELECT variant, n, first_record, first_trace, {
        ", ".join(f"t{i}, q{i}, z{i}, s{i}" for i in range(len(metrics)))
    } FROM (
    SELECT variant, COUNT(*) AS n, MIN(record_id) AS first_record,
        @first(trace_id; record_id; TRUE) AS first_trace, {sums}
    FROM (SELECT variant, record_id, trace_id, {values}, {flags} FROM m WHERE unsure = 0) AS x
    GROUP BY variant
    UNION ALL
    SELECT NULL AS variant, COUNT(*) AS n, '' AS first_record, '' AS first_trace, {sums}
    FROM (SELECT 0 AS variant, 0 AS record_id, '' AS trace_id, {values}, {flags}
          FROM m WHERE unsure = 1) AS y
) AS out ORDER BY variant
{settings}
"""
    return expand_sql(dialect, body)


@dataclass(frozen=True)
class EngineTable:
    """The engine's table of a suite (None when records were left out: ``left`` of them,
    and ``reason``)."""

    table: SufficientStatistics | None
    left: int
    reason: str = ""


@dataclass
class _Acc:
    count: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    variants: int = 0
    first: tuple[str, str | None] | None = None


def suite_table(
    fetch: Callable[[str], Mapping[str, list[Any]]], sql: str, suite: Suite
) -> EngineTable:
    """Run :func:`suite_table_sql` (``fetch``: columns as lists) and match its variants to
    ``suite``: the table :class:`~..stream.TableBuilder` makes of the same records."""
    names = [mc.type for mc in suite.metrics]
    c = fetch(sql)
    cell_of = {v.id: (v.seed_id, group_label(v.assignments)) for v in suite.variants}
    observed: dict[tuple[str, str], int] = {}
    accs: list[dict[tuple[str, str], _Acc]] = [{} for _ in names]
    signals, missing, unmatched, left = [0] * len(names), [0] * len(names), 0, 0
    for r, variant in enumerate(c["variant"]):
        n = int(c["n"][r])
        if variant is None:
            left += n
            continue
        key = cell_of.get(str(variant))
        if key is None:
            unmatched += n
            continue
        observed[key] = observed.get(key, 0) + n
        first = (str(c["first_record"][r]), c["first_trace"][r] or None)
        for i in range(len(names)):
            acc = accs[i].setdefault(key, _Acc())
            acc.count += n
            acc.total += float(c[f"t{i}"][r])
            acc.total_sq += float(c[f"q{i}"][r])
            acc.variants += 1
            acc.first = first if acc.first is None or first[0] < acc.first[0] else acc.first
            signals[i] += int(c[f"s{i}"][r])
            missing[i] += int(c[f"z{i}"][r]) if _SIGNAL[names[i]][1] else 0
    if left:
        why = f"{left} record(s) need the Python conversion or its signal rules"
        return EngineTable(None, left, why)
    return EngineTable(_table(names, accs, observed, signals, missing, unmatched), 0)


def _table(
    names: Sequence[str],
    accs: Sequence[dict[tuple[str, str], _Acc]],
    observed: Mapping[tuple[str, str], int],
    signals: Sequence[int],
    missing: Sequence[int],
    unmatched: int,
) -> SufficientStatistics:
    cells: list[CellStats] = []
    evidence: list[EvidencePointer] = []
    for name, by_cell in zip(names, accs, strict=True):
        for (seed, group), a in sorted(by_cell.items()):
            # every value is a count or flag: the sum is an integer, exact as (n, 0)
            exact = (int(a.total), 0)
            cells.append(
                CellStats(name, 0, seed, group, a.count, a.total, a.total_sq, a.variants, exact)
            )
            if a.first is not None:
                evidence.append(EvidencePointer(name, seed, group, *a.first))
    return SufficientStatistics(
        cells=tuple(cells),
        discordance=seed_discordance(cells),
        evidence=tuple(evidence),
        observed=tuple(ObservedCell(s, g, n) for (s, g), n in sorted(observed.items())),
        columns=tuple(
            MetricColumns(name, ("value",), m) for name, m in zip(names, missing, strict=True)
        ),
        signals=tuple(SignalRecords(n, s) for n, s in zip(names, signals, strict=True)),
        unmatched=unmatched,
    )
