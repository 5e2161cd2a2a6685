"""serve's OTLP logs receiver (issue 39): ``POST /v1/logs`` and ``LogsService/Export``, fed by
the real OTel SDK's log exporters, with the traces' auth, redaction and acknowledgement."""

from __future__ import annotations

import base64
import gzip
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.collector.redaction import Redactor
from spanguard_processor.collector.security import Security
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.store.span_store import SpanStore

from ..reliability.servers import running

pytestmark = pytest.mark.integration
PROTO = {"content-type": "application/x-protobuf"}
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
EMAIL = re.compile(r"[\w.+-]+@example\.com")


def _output(text: str) -> str:
    return json.dumps(
        [
            {
                "role": "assistant",
                "finish_reason": "stop",
                "parts": [{"type": "text", "content": text}],
            }
        ]
    )


def _app(requests: int) -> tuple[list[Any], list[Any]]:
    """``requests`` agent requests whose answers only log events hold (EVENT_ONLY)."""
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracing, logging = TracerProvider(), LoggerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    logging.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer, logger = tracing.get_tracer("app"), logging.get_logger("app")
    for index in range(requests):
        with (
            tracer.start_as_current_span(
                "invoke_agent support",
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "spanguard.seed_id": f"s{index}",
                },
            ),
            tracer.start_as_current_span(
                "chat gpt-4o-mini",
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"},
            ),
        ):
            logger.emit(
                event_name="gen_ai.client.inference.operation.details",
                attributes={
                    "gen_ai.input.messages": json.dumps(
                        [
                            {
                                "role": "user",
                                "parts": [
                                    {
                                        "type": "text",
                                        "content": f"question {index} from ann@example.com",
                                    }
                                ],
                            }
                        ]
                    ),
                    "gen_ai.output.messages": _output(f"answer {index}"),
                },
                body={"note": f"mail bob@example.com about {index}"},
            )
    tracing.shutdown()
    logging.shutdown()
    return list(spans.get_finished_spans()), list(logs.get_finished_logs())


def _outputs(store: Path) -> list[str | None]:
    return sorted((t.output for t in read_agent_traces_any([store])), key=str)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_log_records_exported_by_the_sdk_reach_their_spans_in_either_order(
    tmp_path: Path, transport: str
) -> None:
    spans, logs = _app(3)
    store = tmp_path / "spans.db"
    with running(store, wait_duration=0.3) as server:
        if transport == "http":
            base = f"http://127.0.0.1:{server.http_port}"
            span_out: Any = HttpSpans(endpoint=base + "/v1/traces")
            log_out: Any = HttpLogs(endpoint=base + "/v1/logs")
        else:
            target = f"127.0.0.1:{server.grpc_port}"
            span_out, log_out = (
                GrpcSpans(endpoint=target, insecure=True),
                GrpcLogs(endpoint=target, insecure=True),
            )
        assert log_out.export(logs[:2]).name == "SUCCESS"  # before their spans
        assert span_out.export(spans).name == "SUCCESS"
        assert log_out.export(logs[2:]).name == "SUCCESS"  # after
        assert log_out.export(logs[:1]).name == "SUCCESS"  # an exporter's retry
        span_out.shutdown()
        log_out.shutdown()
    assert _outputs(store) == ["answer 0", "answer 1", "answer 2"]
    with SpanStore(store, readonly=True) as held:
        assert len(list(held.span_ids())) == len(spans) + 3  # the retried record once


def _logs_json(logs: list[Any]) -> dict[str, Any]:
    doc = MessageToDict(encode_logs(logs))
    for resource in doc["resourceLogs"]:  # OTLP-JSON writes ids in hex, not base64
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    record[key] = base64.b64decode(record[key]).hex()
    return doc


def test_json_and_gzip_bodies_are_received_and_records_naming_no_span_are_reported(
    tmp_path: Path,
) -> None:
    spans, logs = _app(2)
    doc = _logs_json(logs)
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"].append(
        {"timeUnixNano": "1", "body": {"stringValue": "an app log line, no span"}}
    )
    store = tmp_path / "spans.db"
    with running(store) as server:
        base = f"http://127.0.0.1:{server.http_port}"
        traces = httpx.post(
            base + "/v1/traces", content=encode_spans(spans).SerializeToString(), headers=PROTO
        )
        assert traces.status_code == 200
        reply = httpx.post(
            base + "/v1/logs",
            content=gzip.compress(json.dumps(doc).encode()),
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
        assert reply.status_code == 200, reply.text
        assert reply.json() == {
            "partialSuccess": {
                "rejectedLogRecords": "1",
                "errorMessage": "1 log record(s) name no span (a valid trace_id and "
                "span_id); spanguard keeps only GenAI event records it can join to a span.",
            }
        }
        garbage = httpx.post(base + "/v1/logs", content=b"\xff\x00garbage", headers=PROTO)
        assert garbage.status_code == 400
        not_logs = httpx.post(
            base + "/v1/logs",
            content=b'{"resourceLogs": 3}',
            headers={"content-type": "application/json"},
        )
        assert not_logs.status_code == 400
        assert "'resourceLogs' is a list" in not_logs.json()["message"]
        assert httpx.get(base + "/v1/logs").status_code == 405
    assert _outputs(store) == ["answer 0", "answer 1"]


def test_a_protobuf_reply_is_an_export_logs_service_response(tmp_path: Path) -> None:
    _, logs = _app(1)
    request = encode_logs(logs)
    request.resource_logs[0].scope_logs[0].log_records.add(time_unix_nano=1)  # no span
    with running(tmp_path / "spans.db") as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/logs",
            content=request.SerializeToString(),
            headers=PROTO,
        )
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            answer = channel.unary_unary(LOGS_EXPORT)(request.SerializeToString(), timeout=10)
    assert reply.status_code == 200
    for body in (reply.content, answer):
        parsed = ExportLogsServiceResponse.FromString(body)
        assert parsed.partial_success.rejected_log_records == 1


def test_logs_need_the_token_as_traces_do(tmp_path: Path) -> None:
    _, logs = _app(1)
    body = encode_logs(logs).SerializeToString()
    with running(tmp_path / "spans.db", security=Security(token=b"s3cret")) as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/logs", content=body, headers=PROTO
        )
        assert reply.status_code == 401
        with (
            grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
            pytest.raises(grpc.RpcError) as refused,
        ):
            channel.unary_unary(LOGS_EXPORT)(body, timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        ok = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/logs",
            content=body,
            headers={**PROTO, "authorization": "Bearer s3cret"},
        )
        assert ok.status_code == 200


def _stored_text(store: Path) -> Iterator[str]:
    for path in sorted(store.parent.iterdir()):
        if path.is_file():
            yield path.read_bytes().decode("latin-1")


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_redaction_reaches_the_records_attributes_and_body(tmp_path: Path, transport: str) -> None:
    _, logs = _app(2)
    folder = tmp_path / "store"
    folder.mkdir()
    store = folder / "spans.db"
    seen: list[str] = []

    def mask(key: str, text: str) -> str:
        seen.append(key)
        return EMAIL.sub("<email>", text)

    body = encode_logs(logs).SerializeToString()
    with running(store, redactor=Redactor(hook=mask)) as server:
        if transport == "http":
            assert (
                httpx.post(
                    f"http://127.0.0.1:{server.http_port}/v1/logs", content=body, headers=PROTO
                ).status_code
                == 200
            )
        else:
            with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                channel.unary_unary(LOGS_EXPORT)(body, timeout=10)
    assert "gen_ai.input.messages" in seen and "spanguard.log.body.note" in seen
    assert [line for line in _stored_text(store) if EMAIL.search(line)] == []
    assert "<email>" in "".join(_stored_text(store))


def test_redact_content_drops_the_records_content_and_body(tmp_path: Path) -> None:
    spans, logs = _app(1)
    store = tmp_path / "spans.db"
    with running(store, redactor=Redactor(drop_content=True)) as server:
        base = f"http://127.0.0.1:{server.http_port}"
        httpx.post(
            base + "/v1/traces", content=encode_spans(spans).SerializeToString(), headers=PROTO
        )
        assert (
            httpx.post(
                base + "/v1/logs", content=encode_logs(logs).SerializeToString(), headers=PROTO
            ).status_code
            == 200
        )
    text = "".join(_stored_text(store))
    assert "answer 0" not in text and "question 0" not in text and "bob@" not in text
    [trace] = read_agent_traces_any([store])
    assert trace.output is None


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_evaluation_results_sent_back_are_on_their_trace_in_traces_export(
    tmp_path: Path, protocol: str
) -> None:
    from click.testing import CliRunner

    from spanguard_processor.cli import cli
    from spanguard_processor.emit.events import EvaluationEvent
    from spanguard_processor.emit.otlp import emit_events, parse_endpoint

    spans, _ = _app(2)
    roots = {s.context.trace_id: s for s in spans if s.parent is None}
    (first, root), (second, root2) = sorted(roots.items())
    store = tmp_path / "spans.db"
    with running(store) as server:
        httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/traces",
            content=encode_spans(spans).SerializeToString(),
            headers=PROTO,
        )
        url = (
            f"http://127.0.0.1:{server.http_port}"
            if protocol == "http"
            else f"grpc://127.0.0.1:{server.grpc_port}"
        )
        events = [
            EvaluationEvent(
                "spanguard.case",
                0.0,
                "fail",
                "the answer changed",
                trace_id=f"{first:032x}",
                span_id=f"{root.context.span_id:016x}",
                extra={"spanguard.case.id": "case-1"},
            ),
            EvaluationEvent("refusal_gap", 1.0, "fail", trace_id=f"{second:032x}"),  # trace only
            EvaluationEvent("refusal_gap", 0.5, "fail"),  # no trace: not kept
        ]
        result = emit_events(events, parse_endpoint(url))
        assert result.error is None, result.error
    out = tmp_path / "traces.jsonl"
    export = CliRunner().invoke(cli, ["traces", "export", "--store", str(store), "-o", str(out)])
    assert export.exit_code == 0, export.output
    exported = {t["trace_id"]: t for t in map(json.loads, out.read_text().splitlines())}
    assert exported[f"{first:032x}"]["evaluations"] == [
        {
            "name": "spanguard.case",
            "score": 0.0,
            "label": "fail",
            "explanation": "the answer changed",
            "response_id": None,
            "span_id": f"{root.context.span_id:016x}",
            "attributes": {"spanguard.case.id": "case-1"},
        }
    ]
    [pair] = exported[f"{second:032x}"]["evaluations"]
    assert (pair["name"], pair["score"], pair["label"]) == ("refusal_gap", 1.0, "fail")
    assert pair["span_id"] == f"{root2.context.span_id:016x}"  # on the trace's root
    reread = {t.trace_id: t for t in read_agent_traces_any([out])}  # the JSONL reads back
    assert [e.to_dict() for e in reread[f"{second:032x}"].evaluations] == [pair]


def test_the_protobuf_path_makes_the_same_log_spans_as_the_json_path() -> None:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    from spanguard_processor.ingest.otlp_logs import events_from_request, logs_as_spans
    from spanguard_processor.ingest.otlp_logs_proto import request_as_spans

    _, logs = _app(3)
    request = encode_logs(logs)
    records = request.resource_logs[0].scope_logs[0].log_records
    trace_id = records[0].trace_id
    records.add(
        time_unix_nano=5,
        trace_id=trace_id,
        span_id=records[0].span_id,  # old API
        body=AnyValue(string_value="hello"),
        attributes=[
            KeyValue(key="event.name", value=AnyValue(string_value="gen_ai.choice")),
            KeyValue(key="n", value=AnyValue(int_value=3)),
        ],
    )
    records.add(time_unix_nano=6, trace_id=trace_id, event_name="gen_ai.evaluation.result")
    records.add(time_unix_nano=7, trace_id=trace_id, event_name="app.note")  # no span: left out
    records.add(time_unix_nano=8, event_name="gen_ai.evaluation.result")  # no trace: left out
    fast, kept = request_as_spans(request, trace_level=True)
    slow = logs_as_spans(events_from_request(request, trace_level=True))
    assert kept == len(logs) + 2
    fast_spans = fast.resource_spans[0].scope_spans[0].spans
    slow_spans = slow.resource_spans[0].scope_spans[0].spans
    assert len(fast_spans) == len(slow_spans) == kept
    for a, b in zip(fast_spans, slow_spans, strict=True):
        assert len(a.span_id) == 8 and any(a.span_id)
        a.span_id = b.span_id = b""
        assert a == b
    ids = [
        [
            s.span_id
            for s in request_as_spans(r, trace_level=True)[0].resource_spans[0].scope_spans[0].spans
        ]
        for r in (request, encode_logs(logs[1:]))
    ]
    assert ids[1] == ids[0][1 : len(logs)]  # a record re-sent in another batch: the same span


_T, _S = "0" * 31 + "1", "0" * 15 + "1"
HOSTILE_LOGS: list[Any] = [
    {"resourceLogs": [{"scopeLogs": 5}]},
    {"resourceLogs": [{"scopeLogs": [{"logRecords": 7}]}, 5, "x", None]},
    {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "traceId": _T,
                                "spanId": _S,
                                "eventName": "e",
                                "timeUnixNano": "9" * 30,
                            }
                        ]
                    }
                ]
            }
        ]
    },
    {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "traceId": _T,
                                "spanId": _S,
                                "eventName": "e",
                                "timeUnixNano": -5,
                                "attributes": [
                                    {"key": "a", "value": {"intValue": [1]}},
                                    {"key": 5},
                                    3,
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    },
    {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "traceId": _T,
                                "spanId": _S,
                                "eventName": 5,
                                "body": {"kvlistValue": 3},
                            }
                        ]
                    }
                ]
            }
        ]
    },
    [],
    "x",
    {"resourceLogs": None},
]


def test_hostile_json_logs_are_answered_200_or_400_never_a_crash(tmp_path: Path) -> None:
    with running(tmp_path / "spans.db") as server:
        for doc in HOSTILE_LOGS:
            reply = httpx.post(
                f"http://127.0.0.1:{server.http_port}/v1/logs",
                content=json.dumps(doc),
                headers={"content-type": "application/json"},
            )
            assert reply.status_code in (200, 400), (doc, reply.status_code, reply.text)
            assert reply.headers["content-type"] == "application/json"


def test_logs_calls_count_against_the_traces_per_connection_cap(tmp_path: Path) -> None:
    _, logs = _app(1)
    body = encode_logs(logs).SerializeToString()
    trace_export = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
    with (
        running(tmp_path / "spans.db", grpc_calls_per_connection=2) as server,
        grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
    ):
        release = threading.Event()

        def never() -> Iterator[bytes]:
            release.wait(30)
            return
            yield b""

        hanging = [
            channel.stream_unary(path).future(never(), timeout=30)
            for path in (trace_export, LOGS_EXPORT)
        ]
        try:
            time.sleep(0.3)
            with pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary(LOGS_EXPORT)(body, timeout=5)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        finally:
            release.set()
            for call in hanging:
                call.cancel()
        deadline = (
            time.monotonic() + 60
        )  # a hang guard: the cap frees as the server sees the calls end
        while True:
            try:
                answer = channel.unary_unary(LOGS_EXPORT)(body, timeout=5)
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert ExportLogsServiceResponse.FromString(answer) == ExportLogsServiceResponse()


def test_a_logs_call_without_a_message_is_invalid_argument_naming_the_logs_request(
    tmp_path: Path,
) -> None:
    with (
        running(tmp_path / "spans.db") as server,
        grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
        pytest.raises(grpc.RpcError) as refused,
    ):
        channel.stream_unary(LOGS_EXPORT)(iter(()), timeout=5)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == "the call carried no ExportLogsServiceRequest."
