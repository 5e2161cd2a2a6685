"""Span files of every supported shape, detected by content; bad lines named by file and line."""

from __future__ import annotations

import gzip
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from spanguard.exceptions import TraceFormatError
from spanguard_processor.cli import cli
from spanguard_processor.convert import traces_from_readable_spans
from spanguard_processor.jsonio import write_jsonl
from spanguard_processor.readers import (
    KIND_AGENT_JSONL,
    KIND_OTLP_JSON,
    KIND_OTLP_JSONL,
    KIND_OTLP_PROTO,
    KIND_STORE,
    detect_kind,
    read_agent_traces_any,
)
from spanguard_processor.store import SpanStore

from .agent_app import in_memory_spans

DATA = Path(__file__).parent / "data"
PY_EXPORTER = DATA / "python_otlp_json_file_exporter.jsonl"


def proto_file(path: Path, spans: Sequence[ReadableSpan] | None = None) -> Path:
    spans = spans if spans is not None else in_memory_spans(3).get_finished_spans()
    with path.open("wb") as out:
        for start in range(0, len(spans), 4):  # several messages, traces split across them
            body = encode_spans(spans[start:start + 4]).SerializeToString()
            out.write(struct.pack(">I", len(body)) + body)
    return path


def test_python_otlp_json_file_exporter_output_is_read() -> None:
    assert detect_kind(PY_EXPORTER) == KIND_OTLP_JSONL
    (trace,) = read_agent_traces_any([PY_EXPORTER])
    assert trace.request_id == "req-1" and trace.trace.plan_steps == ("look up account", "answer")
    assert trace.trace.escalation_reason == "angry customer"


def test_every_shape_gives_the_same_traces(tmp_path: Path) -> None:
    spans = in_memory_spans(3).get_finished_spans()
    expected = traces_from_readable_spans(spans)
    proto = proto_file(tmp_path / "spans.binpb", spans)
    gz = tmp_path / "spans.binpb.gz"
    gz.write_bytes(gzip.compress(proto.read_bytes()))
    whole = tmp_path / "doc.json"
    doc = json.loads(PY_EXPORTER.read_text().splitlines()[0])
    whole.write_text(json.dumps(doc, indent=2))
    agent = tmp_path / "agent.jsonl"
    write_jsonl(agent, [t.to_dict() for t in expected])
    assert detect_kind(proto) == detect_kind(gz) == KIND_OTLP_PROTO
    assert detect_kind(whole) == KIND_OTLP_JSON
    assert detect_kind(agent) == KIND_AGENT_JSONL
    assert list(read_agent_traces_any([proto])) == expected
    assert list(read_agent_traces_any([gz])) == expected
    assert list(read_agent_traces_any([agent])) == expected
    store = tmp_path / "s.db"
    result = CliRunner().invoke(cli, ["ingest", str(gz), str(PY_EXPORTER), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "ingested 19 span(s)" in result.output and "holds 4 trace(s)" in result.output
    assert detect_kind(store) == KIND_STORE
    assert len(list(read_agent_traces_any([store]))) == 4
    assert len(list(read_agent_traces_any([whole]))) == 1  # the plan span alone: partial
    assert next(iter(read_agent_traces_any([whole]))).partial is True


def test_ingest_twice_stores_spans_once(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    for _ in range(2):
        assert CliRunner().invoke(cli, ["ingest", str(PY_EXPORTER), "--store", str(store)]
                                  ).exit_code == 0
    with SpanStore(store, readonly=True) as db:
        assert db.span_count() == 4


def _bad_jsonl(tmp_path: Path) -> Path:
    lines = PY_EXPORTER.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    no_id = json.loads(lines[1])
    del no_id["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
    bad.write_bytes("\n".join([lines[0], json.dumps(no_id), "{oops"]).encode() + b"\n\xff\xfe\n"
                    + "\n".join(lines[2:]).encode() + b"\n")
    return bad


def test_bad_line_is_named_by_file_and_line_with_exit_2(tmp_path: Path) -> None:
    bad = _bad_jsonl(tmp_path)
    result = CliRunner().invoke(cli, ["ingest", str(bad), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2
    assert f"Error: {bad}:2: 1 span(s) have invalid ids" in result.output
    assert "spans[0].spanId" in result.output
    with pytest.raises(TraceFormatError, match=r"bad\.jsonl:2"):
        list(read_agent_traces_any([bad]))


def test_skip_bad_counts_the_skipped_lines(tmp_path: Path) -> None:
    bad = _bad_jsonl(tmp_path)
    result = CliRunner().invoke(cli, ["ingest", str(bad), "--store", str(tmp_path / "s.db"),
                                      "--skip-bad"])
    assert result.exit_code == 0, result.output
    assert "skipped 3 bad line(s)" in result.output
    assert f"{bad}:2, {bad}:3, {bad}:4" in result.output
    assert "ingested 3 span(s)" in result.output


def test_truncated_protobuf_file_names_the_message(tmp_path: Path) -> None:
    proto = proto_file(tmp_path / "spans.binpb")
    data = proto.read_bytes()
    proto.write_bytes(data[:-7])
    with pytest.raises(TraceFormatError, match=r"spans\.binpb:4: message 4: truncated"):
        list(read_agent_traces_any([proto]))


def test_export_writes_all_three_formats_and_counts_traces_without_input(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with SpanStore(store) as db:
        from spanguard_processor.ingest.otlp_proto import decode_request

        with_text = in_memory_spans(2).get_finished_spans()
        db.put_spans(list(decode_request(encode_spans(with_text)).spans))
        without = in_memory_spans(1, content=False).get_finished_spans()
        db.put_spans(list(decode_request(encode_spans(without)).spans))
        db.release_all()
    runner = CliRunner()
    out = tmp_path / "rows.jsonl"
    result = runner.invoke(cli, ["traces", "export", "--store", str(store), "--format",
                                 "trace2eval", "-o", str(out)])
    assert result.exit_code == 0
    assert "wrote 2 trace2eval record(s)" in result.output
    assert "left out 1 trace(s) without input text" in result.output
    result = runner.invoke(cli, ["traces", "export", "--store", str(tmp_path / "nope.db"),
                                 "-o", str(out)])
    assert result.exit_code == 2 and "nope.db: does not exist." in result.output
