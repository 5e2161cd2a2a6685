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
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from spanguard.exceptions import TraceFormatError
from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import write_jsonl
from spanguard_processor.inputs.files import InputKind
from spanguard_processor.inputs.readers import (
    detect_kind,
    read_agent_traces_any,
)
from spanguard_processor.store.span_store import SpanStore
from spanguard_processor.traces.convert import traces_from_readable_spans
from tests.agent_app import in_memory_spans

DATA = Path(__file__).parents[1] / "data" / "otel"
PY_EXPORTER = DATA / "python_otlp_json_file_exporter.jsonl"


def proto_file(path: Path, spans: Sequence[ReadableSpan] | None = None) -> Path:
    spans = spans if spans is not None else in_memory_spans(3).get_finished_spans()
    with path.open("wb") as out:
        for start in range(0, len(spans), 4):  # several messages, traces split across them
            body = encode_spans(spans[start : start + 4]).SerializeToString()
            out.write(struct.pack(">I", len(body)) + body)
    return path


def test_python_otlp_json_file_exporter_output_is_read() -> None:
    assert detect_kind(PY_EXPORTER) == InputKind.OTLP_JSONL
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
    assert detect_kind(proto) == detect_kind(gz) == InputKind.OTLP_PROTO
    assert detect_kind(whole) == InputKind.OTLP_JSON
    assert detect_kind(agent) == InputKind.AGENT_JSONL
    assert list(read_agent_traces_any([proto])) == expected
    assert list(read_agent_traces_any([gz])) == expected
    assert list(read_agent_traces_any([agent])) == expected
    store = tmp_path / "s.db"
    result = CliRunner().invoke(cli, ["ingest", str(gz), str(PY_EXPORTER), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "ingested 19 span(s)" in result.output and "holds 4 trace(s)" in result.output
    assert detect_kind(store) == InputKind.STORE
    assert len(list(read_agent_traces_any([store]))) == 4
    assert len(list(read_agent_traces_any([whole]))) == 1  # the plan span alone: partial
    assert next(iter(read_agent_traces_any([whole]))).partial is True


def test_ingest_twice_stores_spans_once(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    for _ in range(2):
        assert (
            CliRunner().invoke(cli, ["ingest", str(PY_EXPORTER), "--store", str(store)]).exit_code
            == 0
        )
    with SpanStore(store, readonly=True) as db:
        assert db.span_count() == 4


def _bad_jsonl(tmp_path: Path) -> Path:
    lines = PY_EXPORTER.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    no_id = json.loads(lines[1])
    del no_id["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
    bad.write_bytes(
        "\n".join([lines[0], json.dumps(no_id), "{oops"]).encode()
        + b"\n\xff\xfe\n"
        + "\n".join(lines[2:]).encode()
        + b"\n"
    )
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
    result = CliRunner().invoke(
        cli, ["ingest", str(bad), "--store", str(tmp_path / "s.db"), "--skip-bad"]
    )
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
        db.put_batches([decode_request(encode_spans(with_text))])
        without = in_memory_spans(1, content=False).get_finished_spans()
        db.put_batches([decode_request(encode_spans(without))])
        db.release_all()
    runner = CliRunner()
    out = tmp_path / "rows.jsonl"
    result = runner.invoke(
        cli, ["traces", "export", "--store", str(store), "--format", "trace2eval", "-o", str(out)]
    )
    assert result.exit_code == 0
    assert "wrote 2 trace2eval record(s)" in result.output
    assert "left out 1 trace(s) without input text" in result.output
    result = runner.invoke(
        cli, ["traces", "export", "--store", str(tmp_path / "nope.db"), "-o", str(out)]
    )
    assert result.exit_code == 2 and "nope.db: does not exist." in result.output


def test_annotations_merge_across_store_partitions(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from spanguard.semconv import FEEDBACK
    from spanguard_processor.ingest.otlp_proto import decode_request
    from tests.agent_app import annotate, run_request

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    request_id = run_request(tracer, 1)
    request_spans = exporter.get_finished_spans()
    exporter.clear()
    annotate(tracer, request_id, **{FEEDBACK: 5})
    for name, spans in (("a.db", request_spans), ("b.db", exporter.get_finished_spans())):
        with SpanStore(tmp_path / name) as db:
            db.put_batches([decode_request(encode_spans(spans))])
            db.release_all()
    (trace,) = read_agent_traces_any([tmp_path / "a.db", tmp_path / "b.db"])
    assert trace.request_id == request_id and trace.feedback == 5


def test_a_directory_of_rotated_span_files_is_read_as_one(tmp_path: Path) -> None:
    lines = PY_EXPORTER.read_text().splitlines()
    folder = tmp_path / "spans"
    folder.mkdir()
    (folder / "spans-1.jsonl").write_text("\n".join(lines[:2]) + "\n")
    (folder / "spans-2.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines[2:]) + "\n").encode()))
    (trace,) = read_agent_traces_any([folder])
    assert trace.request_id == "req-1" and not trace.partial and trace.trace.plan_steps


def test_exports_are_byte_identical_for_identical_input(tmp_path: Path) -> None:
    spans = in_memory_spans(4).get_finished_spans()
    proto = proto_file(tmp_path / "spans.binpb", spans)
    outputs = []
    for run in ("a", "b"):
        store = tmp_path / f"{run}.db"
        runner = CliRunner()
        assert (
            runner.invoke(
                cli, ["ingest", str(proto), str(PY_EXPORTER), "--store", str(store)]
            ).exit_code
            == 0
        )
        out = tmp_path / f"{run}.jsonl"
        assert (
            runner.invoke(
                cli, ["traces", "export", "--store", str(store), "-f", "fairtrace", "-o", str(out)]
            ).exit_code
            == 0
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") == 5


def _otlp_json_messages() -> list[bytes]:
    return [line.encode() for line in PY_EXPORTER.read_text().splitlines() if line.strip()]


def _otlp_proto_messages(spans: Sequence[ReadableSpan]) -> list[bytes]:
    return [
        encode_spans(spans[start : start + 4]).SerializeToString()
        for start in range(0, len(spans), 4)
    ]


def test_zstd_span_files_in_every_layout_the_file_exporter_writes(tmp_path: Path) -> None:
    """The Collector file exporter's ``compression: zstd`` (its only compression): by default
    each message is one zstd frame behind a 4-byte length, for JSON and protobuf alike; with its
    native-compression gate the file is a zstd stream — one frame per write when rotating (the
    JSON line and its newline are two writes), or one frame for the whole file."""
    import zstandard

    zstd = zstandard.ZstdCompressor()
    spans = in_memory_spans(3).get_finished_spans()
    expected_proto = traces_from_readable_spans(spans)
    expected_json = list(read_agent_traces_any([PY_EXPORTER]))
    layouts: dict[str, tuple[bytes, list[object]]] = {}
    framed = b"".join(
        struct.pack(">I", len(f)) + f for f in map(zstd.compress, _otlp_json_messages())
    )
    layouts["json-per-message"] = (framed, expected_json)
    framed = b"".join(
        struct.pack(">I", len(f)) + f for f in map(zstd.compress, _otlp_proto_messages(spans))
    )
    layouts["proto-per-message"] = (framed, expected_proto)
    per_write = b"".join(zstd.compress(m) + zstd.compress(b"\n") for m in _otlp_json_messages())
    layouts["json-stream-per-write"] = (per_write, expected_json)
    layouts["json-one-stream"] = (
        zstd.compress(b"\n".join(_otlp_json_messages()) + b"\n"),
        expected_json,
    )
    proto = b"".join(struct.pack(">I", len(m)) + m for m in _otlp_proto_messages(spans))
    layouts["proto-one-stream"] = (zstd.compress(proto), expected_proto)
    for name, (data, expected) in layouts.items():
        path = tmp_path / f"spans-{name}.jsonl.zst"
        path.write_bytes(data)
        assert list(read_agent_traces_any([path])) == expected, name


def test_zstd_span_file_ingests_like_gzip(tmp_path: Path) -> None:
    import zstandard

    raw = PY_EXPORTER.read_bytes()
    zst, gz = tmp_path / "spans.jsonl.zst", tmp_path / "spans.jsonl.gz"
    zst.write_bytes(zstandard.ZstdCompressor().compress(raw))
    gz.write_bytes(gzip.compress(raw))
    outputs = []
    for path in (zst, gz):
        store = tmp_path / f"{path.suffix}.db"
        result = CliRunner().invoke(cli, ["ingest", str(path), "--store", str(store)])
        assert result.exit_code == 0, result.output
        outputs.append(result.output.replace(str(store), "S").replace(str(path), "F"))
        assert [t.to_dict() for t in read_agent_traces_any([store])] == [
            t.to_dict() for t in read_agent_traces_any([PY_EXPORTER])
        ]
    assert outputs[0] == outputs[1]


def test_a_damaged_zstd_file_is_named_not_a_traceback(tmp_path: Path) -> None:
    import zstandard

    data = zstandard.ZstdCompressor().compress(PY_EXPORTER.read_bytes())
    bad = tmp_path / "spans.jsonl.zst"
    bad.write_bytes(data[:8] + bytes(64) + data[72:])
    result = CliRunner().invoke(cli, ["ingest", str(bad), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2, result.output
    assert str(bad) in result.output and "Traceback" not in result.output
