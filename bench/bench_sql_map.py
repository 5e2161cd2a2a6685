"""The fairness statistics over N spans: DuckDB over Parquet and chDB over the Collector
ClickHouse exporter's schema, against the Python path, in one run.

Traffic: agent traces of 5 spans each (a spanguard request root with identity, question,
answer and metadata; a model call with usage and cost; a retrieval with a document; a tool
call; a plan span whose events are two plan steps and, for 20% of one group and 10% of the
other, an escalation), written by DuckDB straight into Parquet with the exporter's columns
(``Events.*`` flattened, as ClickHouse writes them). Each engine runs in its own process
(peak RSS is that process's):

* ``duckdb``: the SQL map over the Parquet, reduced in the engine to the gate's
  sufficient-statistics table for 6 built-in metrics (fairness/stats/sufficient_sql.py);
* ``chdb``: the same rows loaded into the exporter's DDL (load timed apart), the same query;
* ``python``: the span → agent-trace conversion, observations, the metrics' values and
  ``reduce_values`` on the first M spans (span records built before the clock starts; the
  store read the real Python path also pays is left out, so the ratio is a lower bound),
  scaled linearly to N.

Usage: ``nice -n 10 python bench/bench_sql_map.py --spans 10000000`` (``--quick``: 200,000;
``--parquet FILE``: generate the spans into FILE once and reuse them on the next runs;
``--seeds N``: N seeds, each (seed, group) variant repeated as the traffic grows, instead of a
seed per 4 traces; ``--duckdb-threads``, ``--duckdb-memory``: DuckDB's settings; ``--stage``
runs one stage alone). Each stage reports its wall and CPU seconds: on a loaded machine the
CPU seconds are the comparable figure.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

METRICS = (
    "escalation_parity",
    "tool_use_parity",
    "tool_count_gap",
    "plan_length_gap",
    "friction_point_gap",
    "llm_call_gap",
)

GENERATE = """
COPY (
SELECT
    make_timestamp_ns(1700000000000000000 + t * 1000000 + k * 1000) AS "Timestamp",
    lpad(format('{{:x}}', t + 1), 32, '0') AS TraceId,
    lpad(format('{{:x}}', i + 1), 16, '0') AS SpanId,
    CASE WHEN k = 0 THEN '' ELSE lpad(format('{{:x}}', t * 5 + 1), 16, '0') END AS ParentSpanId,
    '' AS TraceState,
    ['support_agent', 'chat', 'retrieval', 'execute_tool lookup_order', 'plan'][k + 1] AS SpanName,
    'SPAN_KIND_INTERNAL' AS SpanKind, 'support-agent' AS ServiceName,
    MAP {{'service.name': 'support-agent'}} AS ResourceAttributes,
    '' AS ScopeName, '' AS ScopeVersion,
    CASE k
      WHEN 0 THEN MAP {{'spanguard.request.id': 'v' || t, 'spanguard.seed_id': 's' || seed,
        'spanguard.variant_id': 'v' || (seed * 4 + t % 4),{repeat}
        'spanguard.assignment.gender': CASE WHEN t % 2 = 0 THEN 'female' ELSE 'male' END,
        'spanguard.assignment.age': CASE WHEN (t // 2) % 2 = 0 THEN '30' ELSE '60' END,
        'input.value': 'Where is my order ' || t || '?', 'output.value': 'It shipped.',
        'spanguard.metadata.helpfulness_score': '0.8'}}
      WHEN 1 THEN MAP {{'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'example',
        'gen_ai.request.model': 'support-rules-1',
        'gen_ai.usage.input_tokens': CAST(5 + t % 7 AS VARCHAR),
        'gen_ai.usage.output_tokens': '3', 'spanguard.cost_usd': '1.6e-05'}}
      WHEN 2 THEN MAP {{'gen_ai.operation.name': 'retrieval', 'gen_ai.retrieval.documents':
        '[{{"id":"kb-1","group":"official","rank":1,"score":1.0}}]'}}
      WHEN 3 THEN MAP {{'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'lookup_order'}}
      ELSE MAP {{'spanguard.plan.name': 'answer'}} END AS SpanAttributes,
    CAST(CASE WHEN k = 0 THEN 900000 ELSE 100000 END AS UBIGINT) AS Duration,
    'STATUS_CODE_UNSET' AS StatusCode, '' AS StatusMessage,
    CASE WHEN k <> 4 THEN []::TIMESTAMP_NS[]
         WHEN esc THEN [make_timestamp_ns(s + 10), make_timestamp_ns(s + 20),
                        make_timestamp_ns(s + 30)]
         ELSE [make_timestamp_ns(s + 10), make_timestamp_ns(s + 20)] END AS "Events.Timestamp",
    CASE WHEN k <> 4 THEN []::VARCHAR[]
         WHEN esc THEN ['spanguard.plan_step', 'spanguard.plan_step', 'spanguard.escalation']
         ELSE ['spanguard.plan_step', 'spanguard.plan_step'] END AS "Events.Name",
    CASE WHEN k <> 4 THEN []::MAP(VARCHAR, VARCHAR)[]
         WHEN esc THEN [MAP {{'spanguard.plan.step': 'classify'}},
                        MAP {{'spanguard.plan.step': 'reply'}},
                        MAP {{'spanguard.escalation.reason': 'needs a human'}}]
         ELSE [MAP {{'spanguard.plan.step': 'classify'}},
               MAP {{'spanguard.plan.step': 'reply'}}] END
      AS "Events.Attributes",
    []::VARCHAR[] AS "Links.TraceId", []::VARCHAR[] AS "Links.SpanId",
    []::VARCHAR[] AS "Links.TraceState", []::MAP(VARCHAR, VARCHAR)[] AS "Links.Attributes"
FROM (
    SELECT range AS i, range // 5 AS t, range % 5 AS k, (range // 5 // 4){seeds} AS seed,
        1700000000000000000 + (range // 5) * 1000000 + (range % 5) * 1000 AS s,
        hash(range // 5) % 10 < CASE WHEN (range // 5) % 2 = 0 THEN 2 ELSE 1 END AS esc
    FROM range({spans})
)) TO '{path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)
"""


def generate_sql(spans: int, path: Path, seeds: int | None) -> str:
    """The COPY writing ``spans`` spans into ``path``: one seed per 4 traces (each of its 4
    groups once), or with ``seeds`` that many seeds, each group's variant repeated
    (``spanguard.repeat``) as the traffic grows."""
    if seeds is None:
        return GENERATE.format(spans=spans, path=path, seeds="", repeat="")
    repeat = f"\n        'spanguard.repeat': CAST(t // {4 * seeds} AS VARCHAR),"
    return GENERATE.format(spans=spans, path=path, seeds=f" % {seeds}", repeat=repeat)


#: DuckDB's threads and memory limit in the bench (--duckdb-threads, --duckdb-memory)
DUCKDB: list[Any] = [2, "700MB"]


def _cpu() -> float:
    """This process's CPU seconds so far (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _stage_duckdb(path: Path, threads: int, memory: str) -> dict[str, Any]:
    from spanguard_processor.fairness.stats.sufficient_sql import cells_sql, read_cells
    from spanguard_processor.inputs.sql_source import open_engine, parse_source

    engine = open_engine(parse_source(f"parquet://{path}"))
    engine.run(f"SET memory_limit = '{memory}'; SET threads = {threads}")
    start, cpu = time.perf_counter(), _cpu()
    table, left = read_cells(
        engine.fetch, cells_sql("duckdb", engine.source, METRICS, since=None, until=None), METRICS
    )
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": _cpu() - cpu,
        "cells": len(table.cells),
        "left": left,
        "escalation": _rates(table),
    }


def _stage_chdb(path: Path, work: Path) -> dict[str, Any]:
    import chdb.session

    from spanguard_processor.fairness.stats.sufficient_sql import cells_sql, read_cells
    from spanguard_processor.inputs.sql_schema import logs_ddl, traces_ddl

    session = chdb.session.Session(str(work / "chdb"))
    session.query("CREATE DATABASE IF NOT EXISTS otel")
    session.query(traces_ddl("otel", "otel_traces"))
    session.query(logs_ddl("otel", "otel_logs"))
    start = time.perf_counter()
    session.query(f"INSERT INTO otel.otel_traces SELECT * FROM file('{path}', Parquet)")
    load = time.perf_counter() - start

    def run(sql: str) -> dict[str, list[Any]]:
        limited = sql.rstrip() + (
            ", max_threads = 2, max_memory_usage = 900000000,"
            " max_bytes_before_external_sort = 100000000,"
            " max_bytes_before_external_group_by = 100000000,"
            " aggregation_memory_efficient_merge_threads = 1,"
            " join_algorithm = 'partial_merge', max_bytes_in_join = 50000000"
        )
        table = session.query(limited, "ArrowTable")
        return {name: table.column(name).to_pylist() for name in table.column_names}

    start, cpu = time.perf_counter(), _cpu()
    table, left = read_cells(
        run, cells_sql("clickhouse", "otel.otel_traces", METRICS, since=None, until=None), METRICS
    )
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": _cpu() - cpu,
        "load_seconds": load,
        "cells": len(table.cells),
        "left": left,
        "escalation": _rates(table),
    }


def _rates(table: Any) -> dict[str, float]:
    """The escalation rate per gender, from the table (a check that both agree)."""
    out: dict[str, list[float]] = {}
    for c in table.cells:
        if c.metric == "escalation_parity":
            gender = c.group.split("gender=")[-1]
            acc = out.setdefault(gender, [0.0, 0.0])
            acc[0] += c.total
            acc[1] += c.count
    return {g: round(t / n, 4) for g, (t, n) in sorted(out.items())}


def _stage_python(path: Path, spans: int) -> dict[str, Any]:
    import duckdb

    from spanguard_processor.fairness.metrics.registry import get_metric
    from spanguard_processor.fairness.records import observations_of
    from spanguard_processor.fairness.stats.sufficient import reduce_values
    from spanguard_processor.traces.convert import traces_from_records
    from spanguard_processor.traces.sqlmap import typed_span

    cursor = duckdb.execute(
        "SELECT TraceId, SpanId, ParentSpanId, SpanName, epoch_ns(Timestamp) AS start_ns, "
        'Duration, SpanAttributes, list_transform("Events.Timestamp", lambda t: epoch_ns(t)) '
        'AS ev_t, "Events.Name" AS ev_n, "Events.Attributes" AS ev_a '
        f"FROM read_parquet('{path}') LIMIT {spans}"
    )
    names = [d[0] for d in cursor.description]
    records = [typed_span(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]
    start, cpu = time.perf_counter(), _cpu()
    observations = observations_of(traces_from_records(records))
    cells = 0
    for name in METRICS:
        definition = get_metric(name)
        assert definition is not None
        values = definition.compute(observations, {})
        cells += len(
            reduce_values(
                name,
                [o.seed_id for o in observations],
                [o.group for o in observations],
                [o.variant_id for o in observations],
                values.values,
                values.valid,
            ).cells
        )
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": _cpu() - cpu,
        "traces": len(observations),
        "cells": cells,
    }


def _child(stage: str, path: Path, work: Path, spans: int) -> dict[str, Any]:
    if stage == "duckdb":
        result = _stage_duckdb(path, DUCKDB[0], DUCKDB[1])
    elif stage == "chdb":
        result = _stage_chdb(path, work)
    else:
        result = _stage_python(path, spans)
    result["peak_rss_mb"] = round(_peak_mb(), 1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["process_cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 2)
    return result


def _run_child(stage: str, path: Path, work: Path, spans: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--stage",
            stage,
            "--parquet",
            str(path),
            "--work",
            str(work),
            "--spans",
            str(spans),
            "--duckdb-threads",
            str(DUCKDB[0]),
            "--duckdb-memory",
            str(DUCKDB[1]),
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if out.returncode:  # reported, not fatal: the other engines' figures still count
        return {"failed": out.stderr.strip().splitlines()[-1][:300]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--python-spans", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="200,000 spans, 20,000 in Python")
    parser.add_argument("--stage", choices=("duckdb", "chdb", "python"))
    parser.add_argument("--parquet", type=Path)
    parser.add_argument(
        "--seeds",
        type=int,
        help="generate this many seeds (each group's variant repeated as the traffic grows; "
        "default: one seed per 4 traces)",
    )
    parser.add_argument("--work", type=Path)
    parser.add_argument("--duckdb-threads", type=int, default=2)
    parser.add_argument("--duckdb-memory", default="700MB")
    args = parser.parse_args()
    DUCKDB[:] = [args.duckdb_threads, args.duckdb_memory]
    if args.stage:
        print(json.dumps(_child(args.stage, args.parquet, args.work, args.spans)))
        return
    spans, py_spans = (200_000, 20_000) if args.quick else (args.spans, args.python_spans)
    import duckdb

    with tempfile.TemporaryDirectory(prefix="bench-sql-map-") as tmp:
        work = Path(tmp)
        path = args.parquet or work / "spans.parquet"
        start = time.perf_counter()
        if not (args.parquet and args.parquet.exists()):  # --parquet: made once, kept
            duckdb.execute(generate_sql(spans, path, args.seeds))
        made = time.perf_counter() - start
        results = {
            name: _run_child(name, path, work, n)
            for name, n in (("duckdb", spans), ("chdb", spans), ("python", py_spans))
        }
    python = results["python"]
    projected = python["seconds"] / python["traces"] * spans / 5
    report: dict[str, Any] = {
        "spans": spans,
        "traces": spans // 5,
        "generate_seconds": made,
        **results,
        "python_projected_seconds": projected,
    }
    for engine in ("duckdb", "chdb"):
        if "seconds" in results[engine]:
            report[f"speedup_{engine}"] = projected / results[engine]["seconds"]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
