"""Safe defaults: loopback only, bearer token, TLS, size limits, attribute and trace limits,
content redaction before storage, and no code from configuration but named hooks."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import grpc
import httpx
import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from spanguard.exceptions import SuiteError
from spanguard_processor.cli import cli
from spanguard_processor.cli.serve import serve
from spanguard_processor.collector.limits import Limits
from spanguard_processor.collector.redaction import Redactor
from spanguard_processor.collector.security import Security, token_matches
from spanguard_processor.collector.server import ServerConfig
from spanguard_processor.fairness.design.suite import load_suite
from spanguard_processor.store.span_store import SpanStore

from .corpus import hex_ids
from .servers import (
    EXPORT,
    PROTO,
    listening_addresses,
    request_bytes,
    running,
    self_signed_certificate,
    spans_of_one_trace,
)

pytestmark = pytest.mark.integration
TOKEN = b"s3cret-token-0123456789"
# 127.0.0.1, and 127.0.0.1 as an IPv4-mapped IPv6 address, as /proc/net/tcp{,6} print them
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F"}


def test_defaults_listen_on_loopback_only(tmp_path: Path) -> None:
    assert ServerConfig(store=tmp_path / "x.db").host == "127.0.0.1"
    host_option = next(p for p in serve.params if p.name == "host")
    assert host_option.default == "127.0.0.1"
    with running(tmp_path / "spans.db") as server:
        for port in (server.grpc_port, server.http_port):
            assert port is not None
            addresses = listening_addresses(port)
            assert addresses and addresses <= LOOPBACK, addresses


def test_bearer_token_guards_both_receivers_and_health_stays_open(tmp_path: Path) -> None:
    spans = spans_of_one_trace(3)
    with running(tmp_path / "spans.db", security=Security(token=TOKEN)) as server:
        base = f"http://127.0.0.1:{server.http_port}"
        endpoint = base + "/v1/traces"
        body = request_bytes(spans)
        no_token = httpx.post(endpoint, content=body, headers=PROTO)
        assert no_token.status_code == 401
        assert no_token.headers["www-authenticate"] == "Bearer"
        wrong = httpx.post(
            endpoint,
            content=body,
            headers={**PROTO, "authorization": "Bearer s3cret-token-0123456780"},
        )
        assert wrong.status_code == 401
        assert httpx.get(base + "/health").status_code == 200
        with_token = HttpExporter(
            endpoint=endpoint, headers={"authorization": "Bearer " + TOKEN.decode()}
        )
        assert with_token.export(spans) == SpanExportResult.SUCCESS

        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        call = channel.unary_unary(EXPORT)
        with pytest.raises(grpc.RpcError) as denied:
            call(body, timeout=5)
        assert denied.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = call(body, timeout=5, metadata=(("authorization", "Bearer " + TOKEN.decode()),))
        assert ExportTraceServiceResponse.FromString(reply).partial_success.rejected_spans == 0
        channel.close()
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        assert store.span_count() == 3  # the two refused requests stored nothing


def test_token_comparison_is_exact() -> None:
    assert token_matches(TOKEN, "Bearer " + TOKEN.decode())
    assert token_matches(TOKEN, "bearer " + TOKEN.decode())
    text = TOKEN.decode()
    for bad in (
        None,
        "",
        text,
        "Basic " + text,
        "Bearer " + text[:-1],
        "Bearer " + text + "x",
        "Bearer",
    ):
        assert not token_matches(TOKEN, bad)


def test_tls_on_both_receivers_refuses_plaintext(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests lets these variables override the exporter's certificate_file
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    cert, key = self_signed_certificate(tmp_path)
    spans = spans_of_one_trace(2)
    with running(tmp_path / "spans.db", security=Security(tls_cert=cert, tls_key=key)) as server:
        https = f"https://127.0.0.1:{server.http_port}/v1/traces"
        assert (
            HttpExporter(endpoint=https, certificate_file=str(cert)).export(spans)
            == SpanExportResult.SUCCESS
        )
        with pytest.raises(httpx.HTTPError):
            httpx.post(
                f"http://127.0.0.1:{server.http_port}/v1/traces",
                content=request_bytes(spans),
                headers=PROTO,
                timeout=3,
            )
        credentials = grpc.ssl_channel_credentials(cert.read_bytes())
        secure = GrpcExporter(
            endpoint=f"127.0.0.1:{server.grpc_port}", credentials=credentials, timeout=5
        )
        assert secure.export(spans) == SpanExportResult.SUCCESS
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        with pytest.raises(grpc.RpcError) as plain:
            channel.unary_unary(EXPORT)(request_bytes(spans), timeout=3)
        assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
        channel.close()
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        assert store.span_count() == 2  # the same two spans, sent over both, stored once


def test_body_and_decompressed_size_limits(tmp_path: Path) -> None:
    with running(tmp_path / "spans.db", max_body_bytes=64 * 1024) as server:
        endpoint = f"http://127.0.0.1:{server.http_port}/v1/traces"
        big = request_bytes(spans_of_one_trace(2, text="x" * 100_000))
        assert httpx.post(endpoint, content=big, headers=PROTO).status_code == 413
        bomb = gzip.compress(b"\x00" * (50 * 1024 * 1024))  # 50 MiB of zeros in ~50 KiB
        assert len(bomb) < 64 * 1024
        reply = httpx.post(endpoint, content=bomb, headers={**PROTO, "content-encoding": "gzip"})
        assert reply.status_code == 413 and b"decompressed body exceeds" in reply.content
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        with pytest.raises(grpc.RpcError) as too_big:
            channel.unary_unary(EXPORT)(big, timeout=5)
        assert too_big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # the gRPC limit holds after decompression too: 8 MiB of zeros travel as ~8 KiB
        with pytest.raises(grpc.RpcError) as inflated:
            channel.unary_unary(EXPORT)(
                b"\x00" * (8 * 1024 * 1024), timeout=10, compression=grpc.Compression.Gzip
            )
        assert inflated.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        channel.close()
        small = request_bytes(spans_of_one_trace(2))
        assert httpx.post(endpoint, content=small, headers=PROTO).status_code == 200


def test_attributes_beyond_the_limit_are_dropped_and_counted(tmp_path: Path) -> None:
    spans = spans_of_one_trace(2, attributes=100)
    limits = Limits(max_attributes_per_span=40)
    with running(tmp_path / "spans.db", limits=limits) as server:
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{server.http_port}/v1/traces")
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        ((_, _, records),) = store.trace_records(include_pending=True)
    assert [len(r.attributes) for r in records] == [40, 40]


def test_spans_beyond_the_per_trace_limit_are_rejected_by_partial_success(tmp_path: Path) -> None:
    spans = spans_of_one_trace(8)
    with running(tmp_path / "spans.db", limits=Limits(max_spans_per_trace=5)) as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/traces",
            content=request_bytes(spans),
            headers=PROTO,
        )
        assert reply.status_code == 200
        partial = ExportTraceServiceResponse.FromString(reply.content).partial_success
        assert partial.rejected_spans == 3
        assert "more than 5 spans" in partial.error_message
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        assert store.span_count() == 5


def redact_emails(key: str, text: str) -> str | None:
    """A redaction hook for the test below: masks e-mail addresses, drops 'secret.*' keys."""
    if key.startswith("secret."):
        return None
    return text.replace("ada@example.com", "[email]")


def _store_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.iterdir() if p.name.startswith("spans.db"))


@pytest.mark.parametrize("protocol", ["grpc", "http-json"])
def test_redaction_runs_before_anything_is_stored(tmp_path: Path, protocol: str) -> None:
    secret = "mail ada@example.com about the overdraft"
    spans = spans_of_one_trace(2, text=secret)
    hook = sys.modules[__name__].redact_emails
    redactor = Redactor(drop_content=True, hook=hook)
    with running(tmp_path / "spans.db", redactor=redactor) as server:
        if protocol == "grpc":
            exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.grpc_port}", insecure=True)
            assert exporter.export(spans) == SpanExportResult.SUCCESS
        else:
            document = hex_ids(MessageToDict(encode_spans(spans)))
            reply = httpx.post(f"http://127.0.0.1:{server.http_port}/v1/traces", json=document)
            assert reply.status_code == 200, reply.text
    raw = _store_bytes(tmp_path)
    assert b"ada@example.com" not in raw and b"overdraft" in raw
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        ((_, _, records),) = store.trace_records(include_pending=True)
    for record in records:
        assert "input.value" not in record.attributes  # content dropped
        assert record.attributes["note"] == "mail [email] about the overdraft"


def test_a_redaction_hook_must_be_a_named_importable_function(tmp_path: Path) -> None:
    runner = CliRunner()
    for reference, message in (
        ("os.path", "module:function"),
        ("no_such_module_xyz:fn", "cannot be imported"),
        ("os:no_such_function", "has no attribute"),
    ):
        result = runner.invoke(
            cli, ["serve", "--store", str(tmp_path / "s.db"), "--redact-hook", reference]
        )
        assert result.exit_code == 2, result.output
        assert message in result.output and "--redact-hook" in result.output
    short = tmp_path / "token"
    short.write_text("short")
    result = runner.invoke(
        cli, ["serve", "--store", str(tmp_path / "s.db"), "--token-file", str(short)]
    )
    assert result.exit_code == 2 and "at least 16 characters" in result.output


def test_the_per_trace_limit_spans_requests_and_protocols(tmp_path: Path) -> None:
    spans = spans_of_one_trace(8)
    document = hex_ids(MessageToDict(encode_spans(spans[:4])))
    with running(tmp_path / "spans.db", limits=Limits(max_spans_per_trace=5)) as server:
        first = httpx.post(f"http://127.0.0.1:{server.http_port}/v1/traces", json=document)
        assert first.status_code == 200 and "partialSuccess" not in first.json()
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        reply = ExportTraceServiceResponse.FromString(
            channel.unary_unary(EXPORT)(request_bytes(spans[4:]), timeout=5)
        )
        channel.close()
        assert reply.partial_success.rejected_spans == 3
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        assert store.span_count() == 5


def test_a_suite_file_cannot_run_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        f'dataset: !!python/object/apply:os.system ["touch {marker}"]\n'
        "metrics: [{type: tool_use_parity}]\n"
    )
    with pytest.raises(SuiteError) as error:
        load_suite(suite)
    assert str(suite) in str(error.value)
    assert not marker.exists()


def test_exporters_send_the_token_from_the_standard_headers_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the recipe docs/security.md gives
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20" + TOKEN.decode())
    spans = spans_of_one_trace(2)
    with running(tmp_path / "spans.db", security=Security(token=TOKEN)) as server:
        grpc_exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.grpc_port}", insecure=True)
        assert grpc_exporter.export(spans) == SpanExportResult.SUCCESS
        http = HttpExporter(endpoint=f"http://127.0.0.1:{server.http_port}/v1/traces")
        assert http.export(spans) == SpanExportResult.SUCCESS
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        assert store.span_count() == 2


def failing_hook(key: str, text: str) -> str | None:
    """A redaction hook with a bug, for the test below."""
    raise RuntimeError("boom")


def test_a_failing_redaction_hook_refuses_the_request_and_stores_nothing(tmp_path: Path) -> None:
    spans = spans_of_one_trace(2, text="private")
    with running(tmp_path / "spans.db", redactor=Redactor(hook=failing_hook)) as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/traces",
            content=request_bytes(spans),
            headers=PROTO,
        )
        assert reply.status_code == 500 and b"redaction hook raised RuntimeError" in reply.content
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary(EXPORT)(request_bytes(spans), timeout=5)
        assert refused.value.code() == grpc.StatusCode.INTERNAL
        channel.close()
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        assert store.span_count() == 0
    assert b"private" not in _store_bytes(tmp_path)
