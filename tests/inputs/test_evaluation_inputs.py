"""The evaluators' one reader: every input kind told by content, and every route to the same
traces gives the same fairness observations and regression rows."""

from __future__ import annotations

import gzip
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from spanguard.exceptions import TraceFormatError
from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import write_jsonl
from spanguard_processor.fairness.records import read_observations
from spanguard_processor.inputs.evaluation import (
    Entry,
    Origin,
    RowFormat,
    read_evaluation_inputs,
)
from spanguard_processor.inputs.files import InputKind, evaluation_kind
from spanguard_processor.regression.mine.loader import load_logs
from spanguard_processor.traces.convert import traces_from_readable_spans
from spanguard_processor.traces.formats import to_fairtrace_record, to_trace2eval_row
from tests.agent_app import in_memory_spans

DATA = Path(__file__).parents[1] / "data" / "otel"
PY_EXPORTER = DATA / "python_otlp_json_file_exporter.jsonl"


def _proto(path: Path, spans: Sequence[ReadableSpan] = ()) -> Path:
    spans = spans or in_memory_spans(4).get_finished_spans()
    with path.open("wb") as out:
        for start in range(0, len(spans), 4):
            body = encode_spans(spans[start : start + 4]).SerializeToString()
            out.write(struct.pack(">I", len(body)) + body)
    return path


def _record(i: int) -> dict[str, object]:
    return {
        "id": f"s{i}::a",
        "seed_id": f"s{i}",
        "prompt": "p",
        "assignments": {"g": "a"},
        "response": "fine",
        "response_metadata": {},
    }


def test_each_input_kind_is_told_by_content_whatever_its_name(tmp_path: Path) -> None:
    records = [_record(i) for i in range(2)]
    files = {
        "records.db": ("\n".join(map(json.dumps, records)) + "\n").encode(),  # not a store
        "records.jsonl.gz": gzip.compress(("\n".join(map(json.dumps, records)) + "\n").encode()),
        "records.json": ("\n".join(map(json.dumps, records)) + "\n").encode(),  # JSON lines
        "list.jsonl": json.dumps(records).encode(),
        "report.txt": json.dumps({"scenario_results": records}, indent=2).encode(),
        "spans.txt": PY_EXPORTER.read_bytes(),
        "spans.jsonl": _proto(tmp_path / "p").read_bytes(),
        "spans.zst": zstandard.ZstdCompressor().compress(PY_EXPORTER.read_bytes()),
        "pretty-spans.json": json.dumps(
            json.loads(PY_EXPORTER.read_text().splitlines()[0]), indent=2
        ).encode(),
        "garbage-first.pb": b"\x00\x01\x02garbage\n" + json.dumps(records[0]).encode() + b"\n",
    }
    expected = {
        "records.db": InputKind.JSON_LINES,
        "records.jsonl.gz": InputKind.JSON_LINES,
        "records.json": InputKind.JSON_LINES,
        "list.jsonl": InputKind.JSON_DOCUMENT,
        "report.txt": InputKind.JSON_DOCUMENT,
        "spans.txt": InputKind.OTLP_JSONL,
        "spans.jsonl": InputKind.OTLP_PROTO,
        "spans.zst": InputKind.OTLP_JSONL,
        "pretty-spans.json": InputKind.OTLP_JSON,
        "garbage-first.pb": InputKind.JSON_LINES,
    }
    kinds = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        kinds[name] = evaluation_kind(tmp_path / name)
    assert kinds == expected
    store = tmp_path / "spans.bin"
    assert (
        CliRunner().invoke(cli, ["ingest", str(PY_EXPORTER), "--store", str(store)]).exit_code == 0
    )
    assert evaluation_kind(store) == InputKind.STORE
    # trace2eval reads JSON lines only: a document is read line by line, as trace2eval does
    assert evaluation_kind(tmp_path / "report.txt", documents=False) == InputKind.JSON_LINES
    for name in ("records.db", "records.jsonl.gz", "records.json", "list.jsonl", "report.txt"):
        assert [o.id for o in read_observations([tmp_path / name])] == ["s0::a", "s1::a"], name


def test_every_route_to_the_same_traces_gives_the_same_observations_and_rows(
    tmp_path: Path,
) -> None:
    spans = in_memory_spans(5).get_finished_spans()
    traces = traces_from_readable_spans(spans)
    agent = tmp_path / "traces.jsonl"
    write_jsonl(agent, [t.to_dict() for t in traces])
    proto = _proto(tmp_path / "spans.binpb", spans)
    store = tmp_path / "spans.db"
    assert CliRunner().invoke(cli, ["ingest", str(proto), "--store", str(store)]).exit_code == 0
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "spans.binpb.gz").write_bytes(gzip.compress(proto.read_bytes()))
    routes = [agent, proto, store, folder]

    observations = [read_observations([path]) for path in routes]
    assert all(o == observations[0] for o in observations[1:])
    assert len(observations[0]) == 5

    def rows(path: Path) -> list[tuple[object, ...]]:
        loaded = load_logs([path])
        assert loaded.problems == [] and loaded.agent_traces == 5
        return [
            (r.id, r.input, r.output, r.latency_ms, r.cost_usd, r.feedback, r.process)
            for r in loaded.rows
        ]

    assert all(rows(path) == rows(agent) for path in (proto, store))  # cases build takes files
    # the rows the agent traces stand for, written as trace2eval rows, read the same
    rows_file = tmp_path / "rows.jsonl"
    write_jsonl(rows_file, [to_trace2eval_row(t) for t in traces])
    loaded = load_logs([rows_file])
    assert loaded.agent_traces == 0
    assert [
        (r.id, r.input, r.output, r.latency_ms, r.cost_usd, r.feedback, r.process)
        for r in loaded.rows
    ] == rows(agent)
    records = tmp_path / "records.jsonl"
    write_jsonl(records, [to_fairtrace_record(t) for t in traces])

    def summary(path: Path) -> list[tuple[object, ...]]:
        return [
            (
                o.id,
                o.response,
                o.group,
                o.trace and o.trace.escalated,
                o.trace and o.trace.plan_steps,
            )
            for o in read_observations([path])
        ]

    assert summary(records) == summary(agent)


def test_a_trace2eval_row_may_name_its_id_trace_id(tmp_path: Path) -> None:
    """trace2eval rows may carry ``trace_id`` as their id: only a line with an agent trace's
    process trace (and nothing else) is read as an agent trace there; fairtrace records never
    have a trace_id, so there any line with one is an agent trace."""
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"trace_id": "t1", "input": "q", "output": "a"}) + "\n")
    (entry,) = read_evaluation_inputs([log], rows=RowFormat.TRACE2EVAL)
    assert entry.row is not None and entry.trace is None
    (entry,) = read_evaluation_inputs([log], rows=RowFormat.FAIRTRACE)
    assert entry.trace is not None and entry.trace.trace_id == "t1"


def test_entries_say_where_they_were_read(tmp_path: Path) -> None:
    document = tmp_path / "records.json"
    document.write_text(json.dumps([_record(0), {"id": "x"}]))
    entries = list(read_evaluation_inputs([document], rows=RowFormat.FAIRTRACE))
    assert [(e.origin, e.line) for e in entries] == [(Origin.DOCUMENT, 0), (Origin.DOCUMENT, 1)]
    error = entries[1].locate(TraceFormatError("must be a string.", field="seed_id"))
    assert str(error) == f"{document}: field '[1].seed_id': must be a string."
    line = Entry(str(document), 3).locate(TraceFormatError("must be a string.", field="id"))
    assert str(line) == f"{document}:3: field 'id': must be a string."
    entries = list(read_evaluation_inputs([PY_EXPORTER], rows=RowFormat.FAIRTRACE))
    assert [(e.origin, e.line, e.trace is not None) for e in entries] == [(Origin.SPANS, 1, True)]
    with pytest.raises(ValueError, match="rows must be"):
        list(read_evaluation_inputs([document], rows="csv"))


def test_fairness_reads_compressed_records_and_names_a_bad_line(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {"id": "s0", "prompt": "A {g} asks.", "attributes": {"g": ["a", "b"]}}
                    ]
                },
                "metrics": [{"type": "counterfactual_stability"}],
            }
        )
    )
    records = [
        {
            "id": f"s0::{i}",
            "seed_id": "s0",
            "prompt": f"A {g} asks.",
            "assignments": {"g": g},
            "response": "fine",
            "response_metadata": {},
        }
        for i, g in enumerate("ab", 1)
    ]
    packed = tmp_path / "records.jsonl.gz"
    packed.write_bytes(gzip.compress(("\n".join(map(json.dumps, records)) + "\n").encode()))
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(packed)])
    assert result.exit_code in (0, 1), result.output
    assert "match no variant" not in result.output
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress((json.dumps(records[0]) + '\n{"id": 1}\n').encode()))
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(bad)])
    assert result.exit_code == 2
    assert result.output == f"Error: {bad}:2: field 'id': must be a string.\n"


def test_compressed_agent_traces_are_read_by_every_command(tmp_path: Path) -> None:
    traces = traces_from_readable_spans(in_memory_spans(3).get_finished_spans())
    plain = tmp_path / "plain.jsonl"
    write_jsonl(plain, [t.to_dict() for t in traces])
    packed = tmp_path / "traces.jsonl"  # zstd inside, whatever the name says
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["traces", "convert", str(packed), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == plain.read_bytes()
    assert read_observations([packed]) == read_observations([plain])
    assert [r.id for r in load_logs([packed]).rows] == [r.id for r in load_logs([plain]).rows]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(gzip.compress(plain.read_bytes() + b'{"trace_id": 5}\n'))
    result = CliRunner().invoke(cli, ["traces", "convert", str(bad), "-o", str(out)])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {bad}:4: field 'trace_id': ")
