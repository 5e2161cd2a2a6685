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
from .sufficient import CellStats, EvidencePointer, SeedDiscordance, SufficientStatistics

__all__ = ["SQL_VALUES", "cells_sql", "read_cells"]

#: per-record values in SQL over the map's columns: the quantities metrics/signals.py reads
SQL_VALUES: Mapping[str, str] = {
    "escalation_parity": "CAST(escalated AS DOUBLE)",
    "tool_use_parity": "CASE WHEN @jlen(tools) > 0 THEN 1.0 ELSE 0.0 END",
    "tool_count_gap": "CAST(@jlen(tools) AS DOUBLE)",
    "plan_length_gap": "CAST(@jlen(plan_steps) AS DOUBLE)",
    "friction_point_gap": "CAST(@jlen(friction) AS DOUBLE)",
    "llm_call_gap": "CAST(@jlen(llm_calls) AS DOUBLE)",
}


def cells_sql(
    dialect: str, source: str, metrics: Sequence[str], *, since: int | None, until: int | None
) -> str:
    """One query: the cells of ``metrics`` (each in :data:`SQL_VALUES`) and, per metric, the
    records the map left to Python (a row with an empty seed and ``count`` = that number)."""
    inner = map_sql(dialect, source, since=since, until=until, inner=True)
    names = " UNION ALL ".join(f"SELECT '{name}' AS metric" for name in metrics)
    cases = " ".join(f"WHEN '{name}' THEN {SQL_VALUES[name]}" for name in metrics)
    settings = "SETTINGS join_use_nulls = 1" if dialect == "clickhouse" else ""
    body = f"""WITH m AS (
    SELECT *, COALESCE(variant_id, request_id, trace_id) AS variant,
        COALESCE(seed_id, variant_id, request_id, trace_id) AS seed, group_label AS grp,
        CASE WHEN repeat > 0
             THEN COALESCE(variant_id, request_id, trace_id) || '#' || CAST(repeat AS VARCHAR)
             ELSE COALESCE(variant_id, request_id, trace_id) END AS record_id
    FROM ({inner}) AS mapped
),
vals AS (
    SELECT k.metric AS metric, seed, grp, variant, record_id, trace_id, python_rules,
        CASE k.metric {cases} END AS v
    FROM m CROSS JOIN ({names}) AS k
)
SELECT metric, seed, grp, COUNT(*) AS n, SUM(v) AS total, SUM(v * v) AS total_sq,
    COUNT(DISTINCT variant) AS variants, MIN(record_id) AS first_record,
    @first(trace_id; record_id; TRUE) AS first_trace
FROM vals WHERE python_rules = 0 GROUP BY metric, seed, grp
UNION ALL
SELECT metric, '' AS seed, '' AS grp, COUNT(*) AS n, 0.0 AS total, 0.0 AS total_sq,
    0 AS variants, '' AS first_record, '' AS first_trace
FROM vals WHERE python_rules = 1 GROUP BY metric
{settings}
"""
    return expand_sql(dialect, body)


def read_cells(
    run: Callable[[str], list[dict[str, Any]]], sql: str, metrics: Sequence[str]
) -> tuple[SufficientStatistics, int]:
    """The table from the rows of :func:`cells_sql` (``run`` executes it), in the table's
    order (metric in ``metrics`` order, then seed, group); and the records left to Python."""
    order = {name: i for i, name in enumerate(metrics)}
    rows = sorted(run(sql), key=lambda r: (order[r["metric"]], r["seed"], r["grp"]))
    cells, evidence, left = [], [], 0
    for r in rows:
        if r["seed"] == "" and r["grp"] == "":
            left = max(left, int(r["n"]))
            continue
        cells.append(
            CellStats(
                r["metric"],
                0,
                r["seed"],
                r["grp"],
                int(r["n"]),
                float(r["total"]),
                float(r["total_sq"]),
                int(r["variants"]),
            )
        )
        pointer = EvidencePointer(
            r["metric"], r["seed"], r["grp"], r["first_record"], r["first_trace"] or None
        )
        evidence.append(pointer)
    return SufficientStatistics(tuple(cells), _discordance(cells), tuple(evidence)), left


def _discordance(cells: Sequence[CellStats]) -> tuple[SeedDiscordance, ...]:
    by_seed: dict[tuple[str, str], list[float]] = {}
    for c in cells:
        by_seed.setdefault((c.metric, c.seed_id), []).append(c.total / c.count)
    return tuple(
        SeedDiscordance(metric, 0, seed, len(means), len(set(means)) > 1)
        for (metric, seed), means in by_seed.items()
        if len(means) >= 2
    )
