"""`traces export/convert -f parquet`: one row per agent trace that DuckDB and ClickHouse's engine
(chDB, in process) read back without spanguard, equal to the JSONL export field for field;
byte-identical files for identical traces; a one-line install hint without pyarrow."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.traces import parquet
from spanguard_processor.traces.model import AgentTrace

from .test_model import full_trace

ROOT = Path(__file__).resolve().parents[2]
SPAN_FILE = Path(__file__).parents[1] / "data" / "otel" / "python_otlp_json_file_exporter.jsonl"

duckdb = pytest.importorskip("duckdb")


def _traces() -> list[AgentTrace]:
    """Every field of the agent format, with known and unknown values, scalars of each type."""
    rich = full_trace().to_dict() | {
        "trace_id": "b" * 32,
        "feedback": True,
        "input": "Ça coûte combien à 東京 ?",
        "input_source": "gen_ai.input.messages",
        "output_source": "openinference",
        "llm_calls": [
            {
                "provider": "openai",
                "request_model": "gpt-4o",
                "response_model": "gpt-4o-2024-08-06",
                "input_tokens": 120,
                "output_tokens": None,
                "finish_reasons": ["tool_calls"],
                "tool_calls": ["kb_search", "credit_check"],
                "duration_ms": 412.25,
                "cost_usd": None,
            },
            {"provider": None, "input_tokens": 3, "output_tokens": 4, "cost_usd": 0.5},
        ],
        "unread": [{"key": "llm.token_count.total", "span": "chat", "count": 2}],
        "evaluations": [
            {
                "name": "fairness/refusal_rate",
                "score": 0.25,
                "label": "FAIL",
                "explanation": "gap 0.25 > 0.1",
                "response_id": "resp-1",
                "span_id": "00f067aa0ba902b7",
                "attributes": {"spanguard.seed.id": "loan", "spanguard.n": 3},
            }
        ],
        "user_id": "u-7",
        "session_id": "s-1",
        "root_span_id": "00f067aa0ba902b7",
    }
    rich["trace"]["tool_calls"].append({"name": "transfer", "id": "call_9", "requested": True})
    bare = {
        "trace_id": "c" * 32,
        "partial": True,
        "feedback": 3,
        "metadata": {"k": [1, {"a": None}]},
    }
    halves = {"trace_id": "d" * 32, "feedback": 0.5, "latency_ms": 12, "expect": {"json": True}}
    return [full_trace()] + [AgentTrace.from_dict(d) for d in (rich, bare, halves)]


def _agent_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """The agent-format object a Parquet row stands for (what a reader without spanguard can
    rebuild from the documented columns)."""

    def loads(text: str | None) -> Any:
        return None if text is None else json.loads(text)

    out = {key: row[key] for key in ("trace_id", "request_id", "seed_id", "variant_id")}
    out["assignments"] = dict(sorted(row["assignments"].items()))
    out |= {key: row[key] for key in ("repeat", "input", "output", "latency_ms", "cost_usd")}
    out |= {"feedback": loads(row["feedback_json"]), "retried": row["retried"]}
    out |= {"expect": loads(row["expect_json"]), "metadata": loads(row["metadata_json"])}
    tools = [
        {"name": t["name"]}
        | ({"id": t["id"]} if t["id"] is not None else {})
        | ({"requested": True} if t["requested"] else {})
        for t in row["tool_calls"]
    ]
    out["trace"] = {"tool_calls": tools} | {
        key: row[key]
        for key in ("retrieved_documents", "plan_steps", "escalated", "escalation_reason")
    }
    out["trace"]["friction_points"] = row["friction_points"]
    out |= {"partial": row["partial"], "source": row["source"]}
    out |= {k: row[k] for k in ("input_source", "output_source") if row[k] is not None}
    if row["llm_calls"]:
        out["llm_calls"] = row["llm_calls"]
        usage = ("input_tokens", "output_tokens", "total_tokens", "cost_usd")
        out["usage"] = {"llm_calls": row["usage_llm_calls"]} | {
            key: row[f"usage_{key}"] for key in usage
        }
        out["usage"]["models"] = row["usage_models"]
    if row["unread"]:
        out["unread"] = row["unread"]
    if row["evaluations"]:
        out["evaluations"] = [
            {k: v for k, v in e.items() if k != "attributes_json"}
            | {"attributes": json.loads(e["attributes_json"])}
            for e in row["evaluations"]
        ]
    out |= {k: row[k] for k in ("user_id", "session_id", "root_span_id") if row[k] is not None}
    return out


def _duckdb_rows(path: Path) -> list[dict[str, Any]]:
    relation = duckdb.sql(f"SELECT * FROM read_parquet('{path}')")
    return [dict(zip(relation.columns, values, strict=True)) for values in relation.fetchall()]


def _export(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The traces as agent JSONL, converted to Parquet by the command; the JSONL objects."""
    source = tmp_path / "traces.jsonl"
    source.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in _traces()))
    jsonl, table = tmp_path / "agent.jsonl", tmp_path / "traces.parquet"
    _export(["traces", "convert", str(source), "-o", str(jsonl)])
    _export(["traces", "convert", str(source), "-f", "parquet", "-o", str(table)])
    return table, [json.loads(line) for line in jsonl.read_text().splitlines()]


def test_duckdb_reads_every_field_of_the_jsonl_export(
    exported: tuple[Path, list[dict[str, Any]]],
) -> None:
    table, expected = exported
    assert [_agent_dict(row) for row in _duckdb_rows(table)] == expected
    # the typed columns answer SQL directly: no JSON parsing for the process signals
    tools = duckdb.sql(
        f"SELECT trace_id, len(tool_calls), usage_input_tokens, escalated "
        f"FROM '{table}' ORDER BY trace_id"
    ).fetchall()
    assert tools[:2] == [
        ("0af7651916cd43dd8448eb211c80319c", 2, None, True),
        ("b" * 32, 3, 123, True),
    ]


def test_clickhouse_reads_every_field_of_the_jsonl_export(
    exported: tuple[Path, list[dict[str, Any]]],
) -> None:
    chdb = pytest.importorskip("chdb")
    table, expected = exported
    text = chdb.query(
        f"SELECT * FROM file('{table}', Parquet) "
        "SETTINGS output_format_json_quote_64bit_integers = 0",
        "JSONEachRow",
    ).bytes()
    rows = [json.loads(line) for line in text.decode().splitlines()]
    assert [_agent_dict(row) for row in rows] == expected


def test_the_store_export_matches_its_jsonl_export(tmp_path: Path) -> None:
    jsonl, table = tmp_path / "agent.jsonl", tmp_path / "traces.parquet"
    _export(["traces", "export", "--store", str(SPAN_FILE), "-o", str(jsonl)])
    _export(["traces", "export", "--store", str(SPAN_FILE), "-f", "parquet", "-o", str(table)])
    expected = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert expected and [_agent_dict(row) for row in _duckdb_rows(table)] == expected


def test_identical_traces_give_byte_identical_files_whatever_the_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquet, "ROW_GROUP_TRACES", 3)
    traces = _traces() * 2  # 8 rows: row groups of 3, 3 and 2
    one, other = tmp_path / "one.parquet", tmp_path / "other.parquet"
    with parquet.ParquetSink(one) as sink:
        for trace in traces:
            sink.add(trace)
        assert sink.close() == 8
    with parquet.ParquetSink(other) as sink:  # closed by leaving the block
        sink.add_many(traces[:5])
        sink.add_many(traces[5:])
    assert one.read_bytes() == other.read_bytes()
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(one).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [3, 3, 2]
    assert meta.metadata[b"spanguard.schema_version"] == parquet.SCHEMA_VERSION.encode()
    assert [_agent_dict(row)["trace_id"] for row in _duckdb_rows(one)] == [
        t.trace_id for t in traces
    ]


def test_the_schema_is_the_documented_one() -> None:
    schema = parquet.arrow_schema()
    assert schema.names == [name for name, _ in parquet.COLUMNS]
    page = (ROOT / "docs" / "scale.md").read_text(encoding="utf-8")
    assert f"schema version {parquet.SCHEMA_VERSION}" in page
    undocumented = [name for name in schema.names if f"| `{name}` |" not in page]
    assert undocumented == []


def test_without_pyarrow_one_line_says_what_to_install_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    out = tmp_path / "traces.parquet"
    result = CliRunner().invoke(
        cli, ["traces", "export", "--store", str(SPAN_FILE), "-f", "parquet", "-o", str(out)]
    )
    assert result.exit_code == 2
    assert result.output == (
        "Error: writing Parquet needs pyarrow, which is not installed; install it with: "
        "pip install 'spanguard[warehouse]'\n"
    )
    assert not out.exists()


def test_a_bad_input_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    source = tmp_path / "traces.jsonl"
    source.write_text(json.dumps(full_trace().to_dict()) + '\n{"trace_id": ""}\n')
    out = tmp_path / "traces.parquet"
    out.write_bytes(b"old")
    result = CliRunner().invoke(
        cli, ["traces", "convert", str(source), "-f", "parquet", "-o", str(out)]
    )
    assert result.exit_code == 2
    assert result.output == f"Error: {source}:2: field 'trace_id': must not be empty.\n"
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.jsonl", "traces.parquet"]


def test_a_store_without_traces_is_refused_unless_allowed(tmp_path: Path) -> None:
    from spanguard_processor.store.span_store import SpanStore

    store, out = tmp_path / "spans.db", tmp_path / "traces.parquet"
    SpanStore(store).close()  # a real store, holding no trace
    args = ["traces", "export", "--store", str(store), "-f", "parquet", "-o", str(out)]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2 and "it holds no agent traces" in refused.output
    assert not out.exists() and not list(tmp_path.glob(".traces.parquet*"))
    _export([*args, "--allow-empty"])
    assert _duckdb_rows(out) == []
    import pyarrow.parquet as pq

    assert parquet.arrow_schema().equals(pq.read_schema(out))


def test_a_full_device_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("/dev/full is not a character device here")
    source = tmp_path / "traces.jsonl"
    source.write_text(json.dumps(full_trace().to_dict()) + "\n")
    result = CliRunner().invoke(
        cli, ["traces", "convert", str(source), "-f", "parquet", "-o", str(full)]
    )
    assert result.exit_code == 2
    assert result.output == "Error: could not write /dev/full: no space left on device.\n"
