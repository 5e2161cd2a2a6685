"""The span → agent-trace map in SQL gives what the Python conversion gives.

Every span fixture of the tests and the example agent's traffic go through both paths: the
one conversion (``traces/convert.py``), and the exporter's ``otel_traces`` schema loaded into
chDB (ClickHouse's engine, the exporter's DDL) and into Parquet read by DuckDB, mapped by
``traces/agent_map.sql``. The agent traces (the fields the map computes) and the fairness
verdicts must be identical; a renamed column is refused naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard.exceptions import InputError
from spanguard_processor.cli import cli
from spanguard_processor.fairness.design.suite import parse_suite
from spanguard_processor.fairness.evaluate_table import evaluate_sufficient
from spanguard_processor.fairness.metrics.registry import get_metric
from spanguard_processor.fairness.records import observations_of
from spanguard_processor.fairness.stats.sufficient import reduce_values
from spanguard_processor.fairness.stats.sufficient_sql import SQL_VALUES, cells_sql, read_cells
from spanguard_processor.fairness.stream import reduce_observations
from spanguard_processor.fairness.table_sql import suite_table, suite_table_sql
from spanguard_processor.ingest.spans import SpanEvent, SpanRecord
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.inputs.sql_load import load_clickhouse, spans_of, write_parquet
from spanguard_processor.inputs.sql_schema import traces_ddl
from spanguard_processor.inputs.sql_source import (
    Engine,
    SourceRead,
    clickhouse_engine,
    open_engine,
    parse_source,
    read_source,
)
from spanguard_processor.traces.convert import traces_from_records
from spanguard_processor.traces.model import AgentTrace
from spanguard_processor.traces.sqlmap import MAPPED_FIELDS, map_sql

from .traffic import demo_spans, span_fixtures, variants

chdb_session = pytest.importorskip("chdb.session")
pytest.importorskip("duckdb")

_COMPARED = (*MAPPED_FIELDS, "unread", "evaluations")
_WINDOW = ["--since", "2026-01-01", "--until", "2026-01-02"]
_EXPLAIN = ["--since", "2023-11-14T22:00:00Z", "--explain"]
_FAST = ["--bootstrap", "100", "--permutations", "49"]
_METRICS = [
    {"type": "escalation_parity"},
    {"type": "tool_use_parity"},
    {"type": "refusal_gap"},
    {"type": "plan_length_gap"},
    {"type": "friction_point_gap", "max_difference": 2},
    {"type": "retrieval_exposure_gap"},
    {"type": "llm_call_gap"},
    {"type": "helpfulness_gap"},
]


@pytest.fixture(scope="module")
def session() -> Iterator[Any]:
    """One chDB session for the module (chDB keeps one per process)."""
    session = chdb_session.Session()
    yield session
    session.close()


@pytest.fixture(scope="module")
def demo() -> list[SpanRecord]:
    return demo_spans()


def _chdb(session: Any, spans: Sequence[SpanRecord], database: str) -> Engine:
    session.query(f"DROP DATABASE IF EXISTS {database}")
    load_clickhouse(session.query, spans, database=database)
    source = parse_source(f"clickhouse://localhost/{database}")
    return clickhouse_engine(source, lambda sql: session.query(sql, "ArrowTable"))


def _duckdb(spans: Sequence[SpanRecord], folder: Path) -> Engine:
    folder.mkdir()
    write_parquet(spans, folder / "spans.parquet")
    return open_engine(parse_source(f"parquet://{folder}"))


def _fields(trace: AgentTrace) -> dict[str, Any]:
    return {name: getattr(trace, name) for name in _COMPARED}


def _same(read: SourceRead, expected: Sequence[AgentTrace]) -> None:
    got = {t.trace_id: _fields(t) for t in read.traces}
    want = {t.trace_id: _fields(t) for t in expected}
    assert sorted(got) == sorted(want)
    for trace_id, fields in want.items():
        assert got[trace_id] == fields, trace_id


@pytest.mark.parametrize("fixture", span_fixtures(), ids=lambda p: p.name)
def test_every_span_fixture_maps_to_the_same_agent_traces(
    fixture: Path, session: Any, tmp_path: Path
) -> None:
    expected = list(read_agent_traces_any([fixture]))
    spans = list(spans_of([fixture]))
    assert expected and spans
    for read in (
        read_source(_chdb(session, spans, "fixture")),
        read_source(_duckdb(spans, tmp_path / "parquet")),
    ):
        _same(read, expected)
        assert read.mapped + read.converted == len(expected)


@pytest.mark.slow  # 3.1 s on a loaded run (load ~7)
def test_the_agents_traffic_is_mapped_in_sql_to_the_same_traces(
    demo: list[SpanRecord], session: Any, tmp_path: Path
) -> None:
    expected = traces_from_records(demo)
    assert len(expected) == len(variants())
    for read in (
        read_source(_chdb(session, demo, "demo")),
        read_source(_duckdb(demo, tmp_path / "parquet")),
    ):
        _same(read, expected)
        assert (read.mapped, read.converted) == (len(expected), 0)  # no trace left to Python


def _rule_cases() -> list[SpanRecord]:
    """Spans that exercise the map's rules: a partial trace (its root's parent never came),
    identity carried by a child span (baggage), and one conversation of parentless calls."""

    def span(trace: str, ident: str, parent: str, start: int, **attrs: Any) -> SpanRecord:
        return SpanRecord(trace * 32, ident * 16, parent, "s" + ident, start, start + 5, attrs)

    chat = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "c-1"}
    return [
        span("a", "1", "f" * 16, 100, **{"spanguard.request.id": "r-a", "output.value": "hi"}),
        span("a", "2", "1" * 16, 101, **{"gen_ai.operation.name": "execute_tool"}),
        span("b", "3", "", 200, **{"spanguard.request.id": "r-b", "input.value": "q"}),
        span("b", "4", "3" * 16, 201, **{"spanguard.seed_id": "s9", "spanguard.repeat": 2}),
        span("b", "5", "3" * 16, 202, **{"spanguard.assignment.gender": "woman"}),
        span("c", "6", "", 300, **chat, **{"gen_ai.usage.input_tokens": 4}),
        span("d", "7", "", 400, **chat, **{"gen_ai.usage.input_tokens": 6}),
    ]


def test_partial_traces_child_identity_and_conversations_follow_the_python_rules(
    session: Any, tmp_path: Path
) -> None:
    spans = _rule_cases()
    expected = traces_from_records(spans)
    assert [t.partial for t in expected] == [True, False, False]  # a, b, then c+d merged
    assert expected[1].seed_id == "s9" and expected[1].repeat == 2
    for read in (
        read_source(_chdb(session, spans, "rules")),
        read_source(_duckdb(spans, tmp_path / "parquet")),
    ):
        _same(read, expected)


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.json"
    dataset = {"variants": variants()}
    path.write_text(json.dumps({"dataset": dataset, "metrics": _METRICS}), "utf-8")
    return path


def _metric_results(folder: Path) -> Any:
    return json.loads((folder / "report.json").read_text("utf-8"))["metric_results"]


@pytest.mark.slow  # 3.3 s on a loaded run (load ~9)
def test_fairness_through_source_gives_the_store_paths_verdicts(
    demo: list[SpanRecord], session: Any, tmp_path: Path
) -> None:
    suite = _suite(tmp_path)
    traces = tmp_path / "traces.jsonl"
    lines = [json.dumps(t.to_dict()) for t in traces_from_records(demo)]
    traces.write_text("\n".join(lines) + "\n", "utf-8")
    (tmp_path / "parquet").mkdir()
    write_parquet(demo, tmp_path / "parquet" / "spans.parquet")
    runs = {}
    for name, where in (
        ("files", [str(traces)]),
        ("parquet", ["--source", f"parquet://{tmp_path / 'parquet'}"]),
    ):
        result = CliRunner().invoke(
            cli, ["fairness", str(suite), *where, *_FAST, "-o", str(tmp_path / name)]
        )
        assert result.exit_code in (0, 1), result.output
        runs[name] = (result.exit_code, _metric_results(tmp_path / name))
    assert runs["parquet"] == runs["files"]
    assert runs["files"][0] == 1  # the biased agent fails the gate both ways


def test_a_renamed_exporter_column_is_refused_naming_it(
    demo: list[SpanRecord], session: Any, tmp_path: Path
) -> None:
    engine = _chdb(session, demo[:10], "renamed")
    session.query("ALTER TABLE renamed.otel_traces RENAME COLUMN SpanAttributes TO Attributes")
    with pytest.raises(InputError, match="no column SpanAttributes"):
        read_source(engine)
    (tmp_path / "p").mkdir()
    write_parquet(demo[:10], tmp_path / "p" / "a.parquet")
    import duckdb

    renamed = tmp_path / "renamed.parquet"
    duckdb.sql(
        f"COPY (SELECT * RENAME (SpanName AS Name) FROM '{tmp_path / 'p' / 'a.parquet'}') "
        f"TO '{renamed}' (FORMAT parquet)"
    )
    result = CliRunner().invoke(
        cli, ["fairness", str(_suite(tmp_path)), "--source", f"parquet://{renamed}"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "no column SpanName" in lines[0], result.output


def test_source_usage_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    suite = str(_suite(tmp_path))
    runner = CliRunner()
    no_window = runner.invoke(cli, ["fairness", suite, "--source", "clickhouse://h/otel"])
    assert no_window.exit_code == 2 and "--since and --until" in no_window.output
    unreachable = runner.invoke(
        cli,
        ["fairness", suite, "--source", "clickhouse://127.0.0.1:9/otel", *_WINDOW],
    )
    assert unreachable.exit_code == 2, unreachable.output
    assert "cannot connect to clickhouse://127.0.0.1:9/otel" in unreachable.output
    missing = runner.invoke(cli, ["fairness", suite, "--source", f"parquet://{tmp_path}/none"])
    assert missing.exit_code == 2 and "no Parquet file there" in missing.output


def test_explain_prints_the_sql_without_running_it(demo: list[SpanRecord], tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    write_parquet(demo[:5], tmp_path / "p" / "a.parquet")
    result = CliRunner().invoke(
        cli,
        ["fairness", str(_suite(tmp_path)), "--source", f"parquet://{tmp_path / 'p'}", *_EXPLAIN],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("WITH raw AS")
    assert "epoch_ns(Timestamp) >= 1699999200000000000" in result.output
    assert not (tmp_path / "report.json").exists()


@pytest.mark.slow  # 3.2-4.1 s on loaded runs (load 7-10)
def test_the_engine_fills_the_gates_sufficient_statistics_as_python_does(
    demo: list[SpanRecord], session: Any, tmp_path: Path
) -> None:
    observations = observations_of(traces_from_records(demo))
    names = list(SQL_VALUES)
    cells, discordance = [], []
    for name in names:
        definition = get_metric(name)
        assert definition is not None
        computed = definition.compute(observations, {})
        table = reduce_values(
            name,
            [o.seed_id for o in observations],
            [o.group for o in observations],
            [o.variant_id for o in observations],
            computed.values,
            computed.valid,
        )
        cells.extend(table.cells)
        discordance.extend(table.discordance)
    assert any(c.total for c in cells) and any(d.discordant for d in discordance)
    for engine in (_chdb(session, demo, "cells"), _duckdb(demo, tmp_path / "parquet")):
        sql = cells_sql(engine.dialect, engine.source, names, since=None, until=None)
        got, left_to_python = read_cells(engine.fetch, sql, names)
        assert (got.cells, got.discordance, left_to_python) == (tuple(cells), tuple(discordance), 0)
        first = got.evidence[0]
        assert (first.record_id, first.trace_id) == ("s0::0", observations[0].trace_id)


def _ranking_cases() -> list[SpanRecord]:
    """Spans where the map's aggregates (not window ranks) must pick what Python picks: an
    orphan agent span that outranks a parentless one, identity on the earliest non-root span,
    plan steps from two spans interleaved in time, and a conversation whose earliest call is
    in the second trace id."""

    def span(trace: str, ident: str, parent: str, start: int, *events: Any, **attrs: Any) -> Any:
        return SpanRecord(
            trace * 32, ident * 16, parent, "s" + ident, start, start + 50, attrs, events
        )

    def step(at: int, name: str) -> SpanEvent:
        return SpanEvent("spanguard.plan_step", at, {"spanguard.plan.step": name})

    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "spanguard.request.id": "r-agent",
        "spanguard.seed_id": "s1",
    }
    chat = {"gen_ai.operation.name": "chat", "session.id": "c-2"}
    return [
        span("e", "1", "", 500, **{"spanguard.request.id": "r-plain", "spanguard.seed_id": "s0"}),
        span("e", "2", "9" * 16, 501, **agent),
        span(
            "e",
            "3",
            "1" * 16,
            503,
            step(510, "b"),
            step(530, "d"),
            **{"spanguard.variant_id": "v3"},
        ),
        span(
            "e",
            "4",
            "2" * 16,
            502,
            step(520, "c"),
            step(505, "a"),
            **{"spanguard.variant_id": "v4"},
        ),
        span("g", "5", "", 160, **chat, **{"gen_ai.usage.input_tokens": 4}),
        span("h", "6", "", 150, **chat, **{"gen_ai.usage.input_tokens": 6}),
    ]


@pytest.mark.slow  # 2.7-3.8 s on loaded runs (load 7-10)
def test_root_ranking_identity_order_events_and_merged_roots_follow_the_python_rules(
    session: Any, tmp_path: Path
) -> None:
    spans = _ranking_cases()
    expected = traces_from_records(spans)
    first = next(t for t in expected if t.trace_id == "e" * 32)
    assert (first.root_span_id, first.request_id, first.partial) == ("2" * 16, "r-agent", True)
    assert (first.seed_id, first.variant_id) == ("s1", "v4")  # the root's, then the earliest
    assert first.trace.plan_steps == ("a", "b", "c", "d")
    assert any(t.trace_id == "h" * 32 for t in expected)  # the earliest call roots the turn
    for read in (
        read_source(_chdb(session, spans, "ranking")),
        read_source(_duckdb(spans, tmp_path / "parquet")),
    ):
        _same(read, expected)


def test_the_loaders_table_has_the_exporters_columns(session: Any) -> None:
    """The table spanguard loads spans into (``inputs/sql_schema.traces_ddl``, product code) and
    the exporter's own DDL (``tests/data/clickhouse/otel_traces.sql``, vendored with its origin,
    the table the real ClickHouse leg writes into) declare the same columns, in order, with the
    same types: the product's copy cannot drift from the exporter's without this failing."""
    vendored = Path(__file__).resolve().parents[1] / "data" / "clickhouse" / "otel_traces.sql"
    session.query("DROP DATABASE IF EXISTS ddl")
    session.query("CREATE DATABASE ddl")
    session.query(traces_ddl("ddl", "ours"))
    session.query(vendored.read_text() % ("ddl.exporters", "", "MergeTree()", ""))

    def columns(table: str) -> str:
        return str(
            session.query(
                "SELECT name, type FROM system.columns WHERE database = 'ddl' "
                f"AND table = '{table}' ORDER BY position",
                "CSV",
            )
        )

    assert "SpanAttributes" in columns("ours")
    assert columns("ours") == columns("exporters")


def _redelivered_cases() -> list[SpanRecord]:
    """A trace whose root and plan span were delivered twice (a Collector retry): the Python
    conversion counts a re-delivered span once (``traces_from_records``); the SQL map must not
    see two roots, two plans or a doubled tool call. A second trace is delivered once."""

    def span(trace: str, ident: str, parent: str, start: int, *events: Any, **attrs: Any) -> Any:
        return SpanRecord(
            trace * 32, ident * 16, parent, "s" + ident, start, start + 50, attrs, events
        )

    plan = (
        SpanEvent("spanguard.plan_step", 110, {"spanguard.plan.step": "look"}),
        SpanEvent("spanguard.escalation", 120, {"spanguard.escalation.reason": "human"}),
    )
    root = {"spanguard.request.id": "r-1", "spanguard.seed_id": "s1", "output.value": "ok"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
    once = [
        span("a", "1", "", 100, **root),
        span("a", "2", "1" * 16, 105, *plan, **{"spanguard.plan.name": "p"}),
        span("a", "3", "1" * 16, 107, **tool),
    ]
    other = span("b", "4", "", 300, **{"spanguard.request.id": "r-2", "output.value": "no"})
    return [*once, once[0], once[1], once[2], other]


def test_a_redelivered_span_counts_once_in_sql_as_in_python(session: Any, tmp_path: Path) -> None:
    spans = _redelivered_cases()
    expected = traces_from_records(spans)
    first = next(t for t in expected if t.trace_id == "a" * 32)
    assert first.trace.plan_steps == ("look",) and len(first.trace.tool_calls) == 1
    for read in (
        read_source(_chdb(session, spans, "redelivered")),
        read_source(_duckdb(spans, tmp_path / "parquet")),
    ):
        _same(read, expected)


def test_a_root_without_metadata_maps_to_an_empty_object_not_null(
    session: Any, tmp_path: Path
) -> None:
    spans = _rule_cases()
    expected = {t.trace_id: t.metadata for t in traces_from_records(spans)}
    assert set(map(len, expected.values())) == {0}
    for engine in (_chdb(session, spans, "nometa"), _duckdb(spans, tmp_path / "parquet")):
        rows = engine.run(map_sql(engine.dialect, engine.source))
        assert {r["trace_id"]: json.loads(r["metadata"]) for r in rows} == expected
        assert all(r["metadata"] == "{}" for r in rows)


def test_the_engine_fills_the_suites_table_as_the_stream_does_and_the_gate_agrees(
    demo: list[SpanRecord], session: Any, tmp_path: Path
) -> None:
    """The suite-matched table the engine fills (``table_sql``) equals the one
    ``stream.reduce_observations`` makes of the Python path's records, row for row, on both
    engines; so the gate fed by either gives the same metric results."""
    metrics = [{"type": n} for n in SQL_VALUES]
    suite = parse_suite({"dataset": {"variants": variants()[4:]}, "metrics": metrics})
    python = reduce_observations(suite, observations_of(traces_from_records(demo)))
    assert python.unmatched == 4 and python.signals and any(c.total for c in python.cells)
    want = evaluate_sufficient(python, suite, generated_at="t")
    for engine in (_chdb(session, demo, "suite"), _duckdb(demo, tmp_path / "parquet")):
        sql = suite_table_sql(
            engine.dialect, engine.source, list(SQL_VALUES), since=None, until=None
        )
        got = suite_table(engine.fetch, sql, suite)
        assert got.left == 0 and got.table == python
        assert repr(evaluate_sufficient(got.table, suite, generated_at="t")) == repr(want)


def test_fairness_through_source_feeds_the_gate_the_engines_table(
    demo: list[SpanRecord], tmp_path: Path
) -> None:
    """``--source --stream`` with every metric of the suite reduced in SQL evaluates the
    engine's table (a note says so): the same metric_results as ``--stream`` over the JSONL of
    the Python path's traces; a suite with a metric SQL does not reduce streams the agent
    traces instead, with a note."""
    metrics = [{"type": n} for n in SQL_VALUES]
    suite_path = tmp_path / "suite.json"
    suite_path.write_text(json.dumps({"dataset": {"variants": variants()}, "metrics": metrics}))
    traces = tmp_path / "traces.jsonl"
    lines = [json.dumps(t.to_dict()) for t in traces_from_records(demo)]
    traces.write_text("\n".join(lines) + "\n", "utf-8")
    (tmp_path / "parquet").mkdir()
    write_parquet(demo, tmp_path / "parquet" / "spans.parquet")
    source = ["--source", f"parquet://{tmp_path / 'parquet'}"]
    runs = {}
    for name, where in (("files", [str(traces)]), ("sql", source)):
        result = CliRunner().invoke(
            cli,
            ["fairness", str(suite_path), *where, "--stream", *_FAST, "-o", str(tmp_path / name)],
        )
        assert result.exit_code in (0, 1), result.output
        runs[name] = (result.exit_code, _metric_results(tmp_path / name), result.output)
    assert "reduced in duckdb to the gate's table" in runs["sql"][2]
    assert runs["sql"][:2] == runs["files"][:2]
    assert len(runs["sql"][1]) == len(SQL_VALUES)
    suite_path.write_text(
        json.dumps({"dataset": {"variants": variants()}, "metrics": [*metrics, _METRICS[2]]})
    )
    fallback = CliRunner().invoke(cli, ["fairness", str(suite_path), *source, "--stream"])
    assert "refusal_gap not reduced in SQL" in fallback.output, fallback.output


def test_a_parquet_url_sets_duckdbs_threads_and_memory_limit(
    demo: list[SpanRecord], tmp_path: Path
) -> None:
    (tmp_path / "p").mkdir()
    write_parquet(demo[:5], tmp_path / "p" / "a.parquet")
    url = f"parquet://{tmp_path / 'p'}?threads=1&memory_limit=300MB"
    engine = open_engine(parse_source(url))
    rows = engine.run(
        "SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m"
    )
    assert rows[0]["t"] == 1 and rows[0]["m"].startswith("286.1 MiB"), rows
    with pytest.raises(InputError, match="threads=N and memory_limit=SIZE"):
        parse_source(f"parquet://{tmp_path / 'p'}?threads=two")
    with pytest.raises(InputError, match="threads=N and memory_limit=SIZE"):
        parse_source(f"parquet://{tmp_path / 'p'}?memory_limit=1GB;DROP")
