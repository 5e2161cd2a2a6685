"""``--source`` on ``cases build``, ``cases run``, ``suite mine`` (and ``--observe``) and
``fairness``: the same files from the spans where they live as from their export.

The demo's agent answers a fairness suite and requests that mention a gender from several
users, with feedback, expectations and retry marks sent later, through the OTLP codec into
spanguard's store. The store's spans are loaded into chDB through the Collector ClickHouse
exporter's DDL and into Parquet read by DuckDB; every command must write byte for byte what it
writes from the store (or the store's JSONL export).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from spanguard_processor.cli import cli
from spanguard_processor.ingest.spans import SpanRecord
from spanguard_processor.inputs import sql_source
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.inputs.sql_load import load_clickhouse, spans_of, write_parquet
from spanguard_processor.inputs.sql_source import (
    Engine,
    clickhouse_engine,
    open_engine,
    parse_source,
    read_source,
)
from spanguard_processor.traces.convert import traces_from_records
from spanguard_processor.traces.model import AgentTrace
from spanguard_processor.traces.sqlmap import MAPPED_FIELDS

from .recorded import MENTIONS, record_traffic, write_store
from .traffic import variants

chdb_session = pytest.importorskip("chdb.session")
pytest.importorskip("duckdb")
pytest.importorskip("clickhouse_connect")

#: what case mining and ``cases run`` read beyond the map's fields
_OUTCOME = ("feedback", "retried", "expect", "response_id")
_CLICKHOUSE = "clickhouse://localhost/recorded"
_WINDOW = ["--since", "2000-01-01", "--until", "2100-01-01"]
_FAST = ["--bootstrap", "100", "--permutations", "49"]


@pytest.fixture(scope="module")
def session() -> Iterator[Any]:
    session = chdb_session.Session()
    yield session
    session.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, session: Any) -> dict[str, Any]:
    """The traffic in a store, its JSONL export, its Parquet and its chDB table."""
    folder = tmp_path_factory.mktemp("recorded")
    requests, annotations = record_traffic()
    store = write_store(folder / "spans.db", requests, annotations)
    spans = list(spans_of([store]))
    (folder / "parquet").mkdir()
    write_parquet(spans, folder / "parquet" / "spans.parquet")
    engine = _chdb(session, spans, "recorded")
    exported = folder / "traces.jsonl"
    result = CliRunner().invoke(
        cli, ["traces", "export", "--store", str(store), "-o", str(exported)]
    )
    assert result.exit_code == 0, result.output
    return {"folder": folder, "store": store, "jsonl": exported, "engine": engine}


def _chdb(session: Any, spans: Sequence[SpanRecord], database: str) -> Engine:
    session.query(f"DROP DATABASE IF EXISTS {database}")
    load_clickhouse(session.query, spans, database=database)
    source = parse_source(f"clickhouse://localhost/{database}")
    return clickhouse_engine(source, lambda sql: session.query(sql, "ArrowTable"))


def _duckdb(spans: Sequence[SpanRecord], folder: Path) -> Engine:
    folder.mkdir()
    write_parquet(spans, folder / "spans.parquet")
    return open_engine(parse_source(f"parquet://{folder}"))


def _sources(recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """``--source`` arguments for each engine; the ClickHouse URL reaches the chDB session
    (the same engine and SQL; only clickhouse-connect's network client is left out)."""
    engine = recorded["engine"]
    real = sql_source.open_engine
    monkeypatch.setattr(
        sql_source,
        "open_engine",
        lambda spec: engine if spec.kind == "clickhouse" else real(spec),
    )
    return {
        "clickhouse": ["--source", _CLICKHOUSE, *_WINDOW],
        "parquet": ["--source", f"parquet://{recorded['folder'] / 'parquet'}"],
    }


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _fields(trace: AgentTrace) -> dict[str, Any]:
    return {name: getattr(trace, name) for name in (*MAPPED_FIELDS, *_OUTCOME)}


def test_traces_left_to_python_keep_their_place_in_the_span_paths_order(
    session: Any, tmp_path: Path
) -> None:
    """A trace the map leaves to the span conversion (a lone model call: its root is no
    spanguard request) that starts first comes first, as the span path orders them (root
    start, then trace id), not after the traces the map finished."""
    spans = [
        SpanRecord("a" * 32, "1" * 16, "", "req", 200, 260, {"spanguard.request.id": "r-a"}),
        SpanRecord("b" * 32, "2" * 16, "", "chat", 100, 150, {"gen_ai.operation.name": "chat"}),
        SpanRecord("c" * 32, "3" * 16, "", "req", 300, 320, {"spanguard.request.id": "r-c"}),
    ]
    expected = traces_from_records(spans)
    assert [t.trace_id[0] for t in expected] == ["b", "a", "c"]
    for engine in (_chdb(session, spans, "order"), _duckdb(spans, tmp_path / "parquet")):
        read = read_source(engine, outcomes=True)
        assert (read.mapped, read.converted) == (2, 1)
        assert [_fields(t) for t in read.traces] == [_fields(t) for t in expected]


def test_the_recorded_outcomes_come_through_both_engines(recorded: dict[str, Any]) -> None:
    expected = list(read_agent_traces_any([recorded["store"]]))
    assert sum(t.feedback is not None for t in expected) >= 10
    assert sum(t.retried for t in expected) >= 4 and sum(bool(t.expect) for t in expected) >= 3
    parquet = open_engine(parse_source(f"parquet://{recorded['folder'] / 'parquet'}"))
    for engine in (recorded["engine"], parquet):
        read = read_source(engine, outcomes=True)
        assert read.converted == 0  # every trace mapped in SQL, its outcome read apart
        assert [_fields(t) for t in read.traces] == [_fields(t) for t in expected]
    plain = read_source(parquet)  # fairness reads no outcome: not scanned for
    assert all(t.feedback is None and not t.retried for t in plain.traces)


def test_cases_build_through_source_writes_the_exports_cases(
    recorded: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = tmp_path / "file"
    result = _invoke("cases", "build", str(recorded["jsonl"]), "-o", str(want))
    assert result.exit_code == 0, result.output
    cases = (want / "cases.jsonl").read_bytes()
    assert cases.count(b"\n") >= 5 and b"negative_feedback" in cases and b"user_retried" in cases
    for name, source in _sources(recorded, monkeypatch).items():
        got = tmp_path / name
        result = _invoke("cases", "build", *source, "-o", str(got))
        assert result.exit_code == 0, result.output
        assert (got / "cases.jsonl").read_bytes() == cases, name


@pytest.mark.slow
def test_cases_run_through_source_writes_the_exports_run_file(
    recorded: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = tmp_path / "evalset"
    assert _invoke("cases", "build", str(recorded["jsonl"]), "-o", str(built)).exit_code == 0
    cases = str(built / "cases.jsonl")
    want = tmp_path / "file.json"
    result = _invoke(
        "cases", "run", "--cases", cases, "--traces", str(recorded["jsonl"]), "-o", str(want)
    )
    assert result.exit_code == 0, result.output
    for name, source in _sources(recorded, monkeypatch).items():
        got = tmp_path / f"{name}.json"
        result = _invoke("cases", "run", "--cases", cases, *source, "-o", str(got))
        assert result.exit_code == 0, result.output
        assert got.read_bytes() == want.read_bytes(), name
    # `check` on recorded traffic: the baseline from the export, the current run via --source
    check = _invoke("check", "--baseline", str(want), "--current", str(tmp_path / "parquet.json"))
    assert check.exit_code in (0, 1) and "| missing | PASS | 12 |" in check.output, check.output


def test_suite_mine_and_observe_through_source_write_the_stores_seeds_and_rates(
    recorded: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flags = ["--observe"]
    want = tmp_path / "store.yaml"
    result = _invoke("suite", "mine", "--store", str(recorded["store"]), "-o", str(want), *flags)
    assert result.exit_code == 0, result.output
    assert f"read {len(variants()) + len(MENTIONS)} request(s)" in result.output
    assert "wrote 1 seed(s)" in result.stdout and "not a fairness verdict" in result.stdout
    printed = result.stdout.replace(str(want), "OUT")
    for name, source in _sources(recorded, monkeypatch).items():
        got = tmp_path / f"{name}.yaml"
        result = _invoke("suite", "mine", *source, "-o", str(got), *flags)
        assert result.exit_code == 0, result.output
        assert got.read_bytes() == want.read_bytes(), name
        assert result.stdout.replace(str(got), "OUT") == printed, name


def test_fairness_through_source_gives_the_store_paths_metric_results(
    recorded: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = tmp_path / "suite.json"
    metrics = [{"type": t} for t in ("escalation_parity", "tool_use_parity", "refusal_gap")]
    metrics += [{"type": "plan_length_gap"}, {"type": "helpfulness_gap"}]
    suite.write_text(json.dumps({"dataset": {"variants": variants()}, "metrics": metrics}))

    def verdicts(*where: str, out: Path) -> tuple[int, Any]:
        result = _invoke("fairness", str(suite), *where, *_FAST, "-o", str(out))
        assert result.exit_code in (0, 1), result.output
        report = json.loads((out / "report.json").read_text("utf-8"))
        return result.exit_code, report["metric_results"]

    want = verdicts(str(recorded["store"]), out=tmp_path / "store")
    assert want[0] == 1  # the biased agent fails the gate
    for name, source in _sources(recorded, monkeypatch).items():
        assert verdicts(*source, out=tmp_path / name) == want, name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cases", "build", "x.jsonl", "--source", "parquet://p"], "give INPUTS... or --source"),
        (["cases", "build"], "give INPUTS... or --source URL"),
        (
            ["cases", "build", "x.jsonl", "--since", "2026-01-01"],
            "--since, --until and --explain go with --source",
        ),
        (
            ["suite", "mine", "--store", "s.db", "--source", "parquet://p", "-o", "m.yaml"],
            "give TRACES/--store or --source, not both",
        ),
        (["suite", "mine", "-o", "m.yaml"], "give trace files, --store or --source"),
        (
            ["suite", "mine", "--store", "s.db", "--until", "2026-01-01", "-o", "m.yaml"],
            "--since, --until and --explain go with --source",
        ),
        (
            [
                "cases",
                "run",
                "--cases",
                "c.jsonl",
                "--traces",
                "t.jsonl",
                "--source",
                "parquet://p",
            ],
            "give --traces FILE or --source, not both",
        ),
        (
            [
                "cases",
                "run",
                "--cases",
                "c.jsonl",
                "--outputs",
                "o.jsonl",
                "--source",
                "parquet://p",
            ],
            "give exactly one of --outputs, --traces, --source or --app",
        ),
        (
            ["cases", "run", "--cases", "c.jsonl", "--outputs", "o.jsonl", "--explain"],
            "--since, --until and --explain go with --source",
        ),
    ],
)
def test_source_with_other_inputs_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("x.jsonl", "s.db", "c.jsonl", "t.jsonl", "o.jsonl"):
        (tmp_path / name).write_text("not what the command reads\n")  # usage is checked first
    result = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_a_missing_column_is_named_by_every_source_command(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    import duckdb

    renamed = tmp_path / "renamed.parquet"
    original = recorded["folder"] / "parquet" / "spans.parquet"
    duckdb.sql(
        f"COPY (SELECT * RENAME (\"Events.Name\" AS EventNames) FROM '{original}') "
        f"TO '{renamed}' (FORMAT parquet)"
    )
    source = ["--source", f"parquet://{renamed}"]
    cases = tmp_path / "cases"
    assert _invoke("cases", "build", str(recorded["jsonl"]), "-o", str(cases)).exit_code == 0
    for args in (
        ["cases", "build", *source, "-o", str(tmp_path / "evalset")],
        ["suite", "mine", *source, "-o", str(tmp_path / "m.yaml")],
        ["cases", "run", "--cases", str(cases / "cases.jsonl"), *source],
    ):
        result = _invoke(*args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "no column Events.Name" in lines[0], (args, result.output)
    assert not (tmp_path / "evalset").exists() and not (tmp_path / "m.yaml").exists()


def test_a_missing_table_is_named_as_missing(
    recorded: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: Any
) -> None:
    source = parse_source("clickhouse://localhost/recorded?traces=otel_spans")
    engine = clickhouse_engine(source, lambda sql: session.query(sql, "ArrowTable"))
    monkeypatch.setattr(sql_source, "open_engine", lambda spec: engine)
    url = "clickhouse://localhost/recorded?traces=otel_spans"
    result = _invoke("cases", "build", "--source", url, *_WINDOW, "-o", str(tmp_path / "e"))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines == [
        "Error: recorded.otel_spans: there is no such table (or it has no columns); the "
        "Collector ClickHouse exporter writes spans to otel_traces unless configured otherwise "
        "(traces=NAME in the URL)."
    ], result.output


def test_explain_prints_every_query_a_command_runs(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    parquet = f"parquet://{recorded['folder'] / 'parquet'}"
    result = _invoke("cases", "build", "--source", parquet, "--explain")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("WITH raw AS")
    assert "-- the outcome: feedback, retry marks, expectations, response ids" in result.output
    assert "map_contains(SpanAttributes, 'spanguard.feedback')" in result.output
    assert "SpanName = 'spanguard.annotate'" in result.output
    suite = tmp_path / "suite.json"
    metrics = [{"type": "escalation_parity"}]
    suite.write_text(json.dumps({"dataset": {"variants": variants()}, "metrics": metrics}))
    fairness = _invoke("fairness", str(suite), "--source", parquet, "--explain")
    assert fairness.exit_code == 0, fairness.output
    assert fairness.output.startswith("WITH raw AS") and "-- the outcome" not in fairness.output
