"""The logs receivers' smaller cases (issue 49 item 4, issue 48 item 5): deep OTLP-JSON bodies,
records without ``event_name``, and what conversion keeps of a record."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..reliability.servers import running

pytestmark = pytest.mark.integration
JSON = {"content-type": "application/json"}


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def _dumps(doc: object) -> bytes:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return json.dumps(doc).encode()
    finally:
        sys.setrecursionlimit(limit)


def test_deep_json_logs_are_answered_like_deep_json_traces(tmp_path: Path) -> None:
    ids = {"traceId": "01" * 16, "spanId": "02" * 8}
    with running(tmp_path / "spans.db") as server:
        url = f"http://127.0.0.1:{server.http_port}"
        for depth in (95, 150, 300):
            value = _deep(depth)
            record = {**ids, "eventName": "e", "body": value}
            record["attributes"] = [{"key": "k", "value": value}]
            span = {**ids, "name": "s", "attributes": [{"key": "k", "value": value}]}
            logs = httpx.post(
                url + "/v1/logs",
                content=_dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}),
                headers=JSON,
            )
            traces = httpx.post(
                url + "/v1/traces",
                content=_dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}),
                headers=JSON,
            )
            assert logs.status_code == traces.status_code, (depth, logs.text, traces.text)
            assert logs.status_code < 500, (depth, logs.text)


def _record(trace: int, span: int, name: str = "gen_ai.client.inference.operation.details") -> Any:
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

    return LogRecord(
        trace_id=trace.to_bytes(16, "big"),
        span_id=span.to_bytes(8, "big"),
        event_name=name,
        time_unix_nano=1_700_000_000_000_000_000 + trace,
    )


def test_log_records_whose_spans_never_arrive_are_counted_not_exported(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from spanguard_processor.cli import cli

    from ..reliability.servers import PROTO, request_bytes, spans_of_one_trace

    request = ExportLogsServiceRequest()
    request.resource_logs.add().scope_logs.add().log_records.extend(
        _record(trace, 1) for trace in range(1, 11)
    )
    store = tmp_path / "spans.db"
    with running(store) as server:
        url = f"http://127.0.0.1:{server.http_port}"
        body = request.SerializeToString()
        assert httpx.post(url + "/v1/logs", content=body, headers=PROTO).status_code == 200
        spans = request_bytes(spans_of_one_trace(2, text="a real request"))
        assert httpx.post(url + "/v1/traces", content=spans, headers=PROTO).status_code == 200
    out = tmp_path / "traces.jsonl"
    result = CliRunner().invoke(cli, ["traces", "export", "--store", str(store), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 1  # not 11: no empty partial traces
    assert "left out 10 trace(s) of log records only" in result.output


def test_records_without_an_event_name_are_named_by_what_they_hold(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
        ExportLogsServiceRequest,
        ExportLogsServiceResponse,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList

    from spanguard_processor.store.span_store import SpanStore

    from ..reliability.servers import PROTO

    def text(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    details = _record(1, 1, name="")
    details.attributes.append(text("gen_ai.output.messages", '[{"role": "assistant"}]'))
    details.severity_text, details.severity_number = "INFO", 9
    message = _record(1, 1, name="")
    message.body.kvlist_value.CopyFrom(
        KeyValueList(values=[text("role", "user"), text("content", "hi")])
    )
    plain = _record(1, 1, name="")
    plain.body.string_value = "a line of the app's own log"
    records.extend([details, message, plain])
    store = tmp_path / "spans.db"
    with running(store) as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/logs",
            content=request.SerializeToString(),
            headers=PROTO,
        )
    assert reply.status_code == 200
    answer = ExportLogsServiceResponse.FromString(reply.content).partial_success
    assert answer.rejected_log_records == 1
    assert answer.error_message.startswith("1 log record(s) say not what they are")
    assert "name no span" not in answer.error_message
    with SpanStore(store, readonly=True) as reader:
        spans = [
            span for _, _, trace in reader.trace_records(include_pending=True) for span in trace
        ]
    events = {event.name: event for span in spans for event in span.events}
    assert set(events) == {"gen_ai.client.inference.operation.details", "gen_ai.user.message"}
    kept = events["gen_ai.client.inference.operation.details"].attributes
    assert kept["spanguard.log.severity_text"] == "INFO"
    assert kept["spanguard.log.severity_number"] == 9


def test_a_request_that_finds_a_bug_is_answered_500_and_its_traceback_rate_limited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from spanguard_processor.ingest.codec_json import JsonCodec

    def bug(self: object, body: bytes) -> object:
        raise RuntimeError("an injected bug")

    monkeypatch.setattr(JsonCodec, "logs_as_spans", bug)
    doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "01" * 16}]}]}]}
    with running(tmp_path / "spans.db") as server:
        codes = [
            httpx.post(
                f"http://127.0.0.1:{server.http_port}/v1/logs", content=_dumps(doc), headers=JSON
            ).status_code
            for _ in range(20)
        ]
    assert codes == [500] * 20
    assert caplog.text.count("Traceback") == 1, caplog.text[-2000:]
    assert "RuntimeError: an injected bug" in caplog.text


def test_the_span_form_keeps_the_records_resource_and_scope() -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    from spanguard_processor.ingest.otlp_logs import events_from_document, logs_as_spans
    from spanguard_processor.ingest.otlp_logs_proto import request_as_spans

    request = ExportLogsServiceRequest()
    resource = request.resource_logs.add()
    resource.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value="support-agent"))
    )
    scope = resource.scope_logs.add()
    scope.scope.name, scope.scope.version = "opentelemetry.instrumentation.genai.openai", "1.3b0"
    scope.log_records.append(_record(1, 1))
    document = MessageToDict(request)
    for record in document["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        record["traceId"], record["spanId"] = "0" * 31 + "1", "0" * 15 + "1"
    for spans in (
        request_as_spans(request)[0],
        logs_as_spans(events_from_document(document)),
    ):
        [kept] = spans.resource_spans
        assert kept.resource.attributes[0].value.string_value == "support-agent"
        assert kept.scope_spans[0].scope.name == "opentelemetry.instrumentation.genai.openai"
        assert kept.scope_spans[0].scope.version == "1.3b0"
        assert len(kept.scope_spans[0].spans) == 1
