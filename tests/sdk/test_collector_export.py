"""Export over OTLP/gRPC and OTLP/HTTP through the real rotel collector: every span intact."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import spanguard
from spanguard import semconv

from .rotel_helper import OtlpGrpcSink, RotelCollector

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import support_agent

pytestmark = pytest.mark.integration

PROMPTS = (
    "Where is my refund for order 1234?",
    "My order 77 has not arrived",
    "I cannot access my account",
    "Please get me a human",
)


@pytest.fixture
def collector() -> Iterator[tuple[OtlpGrpcSink, RotelCollector]]:
    with OtlpGrpcSink() as sink, RotelCollector(export_to=sink.endpoint) as rotel:
        yield sink, rotel


def _run_agent() -> list[str]:
    request_ids = []
    for seed, prompt in enumerate(PROMPTS):
        for gender in ("male", "female"):
            with spanguard.request(
                "support_agent",
                seed_id=f"s{seed}",
                variant_id=f"s{seed}-{gender}",
                assignments={"gender": gender},
            ) as req:
                support_agent.answer(prompt, {"gender": gender}, bias=0.7)
            support_agent.give_feedback(req.request_id, thumbs_up=True, retried=seed == 0)
            request_ids.append(req.request_id)
    return request_ids


@pytest.mark.parametrize("protocol", ["otlp-grpc", "otlp-http"])
def test_every_span_arrives_intact_through_rotel(
    collector: tuple[OtlpGrpcSink, RotelCollector], protocol: str
) -> None:
    sink, rotel = collector
    endpoint = rotel.grpc_endpoint if protocol == "otlp-grpc" else rotel.http_endpoint
    configuration = spanguard.configure(
        exporter=protocol,
        endpoint=endpoint,
        private=True,
        service_name="support-agent",
        capture_content=True,
    )
    local = InMemorySpanExporter()
    configuration.provider.add_span_processor(SimpleSpanProcessor(local))
    try:
        request_ids = _run_agent()
        assert spanguard.force_flush()
        stats = spanguard.export_stats()
    finally:
        spanguard.shutdown()
    sent = local.get_finished_spans()
    assert stats.ended == len(sent) and stats.exported == len(sent) and stats.dropped == 0
    received = sink.wait_for_spans(len(sent), timeout=30)
    assert len(received) == len(sent)

    expected = {
        span.span_id: span
        for rs in encode_spans(sent).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    }
    by_id = {span.span_id: span for span in received}
    assert by_id.keys() == expected.keys()
    for span_id, span in expected.items():
        assert by_id[span_id] == span  # every field: ids, parent, times, attributes, events
    services = {
        a.value.string_value
        for resource in sink.resources()
        for a in resource.attributes
        if a.key == "service.name"
    }
    assert services == {"support-agent"}
    roots = [s for s in received if s.name == "invoke_agent support_agent"]
    assert sorted(
        a.value.string_value for s in roots for a in s.attributes if a.key == semconv.REQUEST_ID
    ) == sorted(request_ids)


@pytest.mark.parametrize(
    ("protocol", "port_of"), [("grpc", "grpc_endpoint"), ("http/protobuf", "http_endpoint")]
)
def test_standard_otel_variables_choose_the_exporter(
    collector: tuple[OtlpGrpcSink, RotelCollector],
    monkeypatch: pytest.MonkeyPatch,
    protocol: str,
    port_of: str,
) -> None:
    sink, rotel = collector
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", getattr(rotel, port_of))
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    spanguard.configure(private=True)
    try:
        with spanguard.request("agent", seed_id="env"):
            spanguard.friction("captcha")
        assert spanguard.export_stats() == spanguard.ExportStats(1, 1, 0, 0)
    finally:
        spanguard.shutdown()
    (span,) = sink.wait_for_spans(1)
    assert span.name == "invoke_agent agent"
    assert [e.name for e in span.events] == [semconv.EVENT_FRICTION]
    services = {
        a.value.string_value
        for resource in sink.resources()
        for a in resource.attributes
        if a.key == "service.name"
    }
    assert services == {"from-env"}
