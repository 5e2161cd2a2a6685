"""The sufficient-statistics table (:mod:`.sufficient`) filled by the engine, from the SQL map.

For the built-in metrics whose per-record value is a count or flag of what the SQL map computes
(:data:`SQL_VALUES`, each the same quantity as :mod:`..metrics.signals` reads), the engine
reduces the agent traces to one row per (metric, seed, group): count, sum, sum of squares,
distinct variants; then per seed whether its groups disagree; and the evidence pointer of each
cell (its smallest record id). Only those small tables leave the engine. Traces the map leaves
to Python (``python_rules``) are not in these cells: :func:`cells_sql` counts them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...traces.sqlmap import expand_sql, map_sql
from .sufficient import CellStats, EvidencePointer, SufficientStatistics, seed_discordance

__all__ = ["SQL_VALUES", "cells_sql", "read_cells"]

#: per-record values in SQL over the map's columns: the quantities metrics/signals.py reads
SQL_VALUES: Mapping[str, str] = {  # the map's counts: the lengths of its lists
    "escalation_parity": "CAST(escalated AS DOUBLE)",
    "tool_use_parity": "CASE WHEN n_tools > 0 THEN 1.0 ELSE 0.0 END",
    "tool_count_gap": "CAST(n_tools AS DOUBLE)",
    "plan_length_gap": "CAST(n_plan AS DOUBLE)",
    "friction_point_gap": "CAST(n_friction AS DOUBLE)",
    "llm_call_gap": "CAST(n_llm AS DOUBLE)",
}


def cells_sql(
    dialect: str, source: str, metrics: Sequence[str], *, since: int | None, until: int | None
) -> str:
    """One query: the cells of ``metrics`` (each in :data:`SQL_VALUES`) in the table's order
    (metric in ``metrics`` order, then seed, group) and, per metric, the records the map left
    to Python (a row with an empty seed and group and ``n`` = that number). Every metric is
    summed in one pass over the records per (seed, group), then spread to one row per metric."""
    inner = map_sql(dialect, source, since=since, until=until, inner=True)
    names = " UNION ALL ".join(
        f"SELECT {i} AS mi, '{name}' AS metric" for i, name in enumerate(metrics)
    )
    values = ", ".join(f"{SQL_VALUES[name]} AS v{i}" for i, name in enumerate(metrics))
    sums = ", ".join(f"SUM(v{i}) AS t{i}, SUM(v{i} * v{i}) AS q{i}" for i in range(len(metrics)))
    total = " ".join(f"WHEN {i} THEN t{i}" for i in range(len(metrics)))
    total_sq = " ".join(f"WHEN {i} THEN q{i}" for i in range(len(metrics)))
    settings = "SETTINGS join_use_nulls = 1" if dialect == "clickhouse" else ""
    body = f"""WITH m AS (
    SELECT *, COALESCE(variant_id, request_id, trace_id) AS variant,
        COALESCE(seed_id, variant_id, request_id, trace_id) AS seed, group_label AS grp,
        CASE WHEN repeat > 0
             THEN COALESCE(variant_id, request_id, trace_id) || '#' || CAST(repeat AS VARCHAR)
             ELSE COALESCE(variant_id, request_id, trace_id) END AS record_id
    FROM ({inner}) AS mapped
),
cells AS (
    SELECT seed, grp, COUNT(*) AS n, COUNT(DISTINCT variant) AS variants,
        MIN(record_id) AS first_record, @first(trace_id; record_id; TRUE) AS first_trace, {sums}
    FROM (SELECT seed, grp, variant, record_id, trace_id, {values}
          FROM m WHERE python_rules = 0) AS x
    GROUP BY seed, grp
),
k AS ({names})
SELECT metric, seed, grp, n, total, total_sq, variants, first_record, first_trace FROM (
    SELECT k.mi AS mi, k.metric AS metric, seed, grp, n, CASE k.mi {total} END AS total,
        CASE k.mi {total_sq} END AS total_sq, variants, first_record, first_trace
    FROM cells CROSS JOIN k
    UNION ALL
    SELECT k.mi AS mi, k.metric AS metric, '' AS seed, '' AS grp, left_n AS n, 0.0 AS total,
        0.0 AS total_sq, 0 AS variants, '' AS first_record, '' AS first_trace
    FROM (SELECT COUNT(*) AS left_n FROM m WHERE python_rules = 1) AS l CROSS JOIN k
    WHERE left_n > 0
) AS out ORDER BY mi, seed, grp
{settings}
"""
    return expand_sql(dialect, body)


def read_cells(
    fetch: Callable[[str], Mapping[str, list[Any]]], sql: str, metrics: Sequence[str]
) -> tuple[SufficientStatistics, int]:
    """The table from the columns of :func:`cells_sql` (``fetch`` runs it and returns one
    list per column), in the query's order; and the records left to Python."""
    c = fetch(sql)
    cells, evidence, left = [], [], 0
    rows = zip(
        c["metric"],
        c["seed"],
        c["grp"],
        c["n"],
        c["total"],
        c["total_sq"],
        c["variants"],
        c["first_record"],
        c["first_trace"],
        strict=True,
    )
    for metric, seed, grp, n, total, total_sq, variants, first_record, first_trace in rows:
        if seed == "" and grp == "":
            left = max(left, int(n))
            continue
        cells.append(
            CellStats(metric, 0, seed, grp, int(n), float(total), float(total_sq), int(variants))
        )
        evidence.append(EvidencePointer(metric, seed, grp, first_record, first_trace or None))
    return SufficientStatistics(tuple(cells), seed_discordance(cells), tuple(evidence)), left
