"""A NO_SIGNAL diagnosis names the switch of the instrumentation that recorded no content
(issue 48): the official OpenTelemetry GenAI instrumentation records no message text by
default, and the fix is its own setting, not spanguard's privacy page.

The app is instrumented only by opentelemetry-instrumentation-genai-openai (in-process, against
the local OpenAI-compatible stub), with its default settings; a parent span carries the
counterfactual identity, and the stub refuses group a (a refusal bias no span can show).
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.fairness.design.suite import MetricConfig
from spanguard_processor.fairness.evaluate import evaluate
from spanguard_processor.fairness.gate.results import Verdict
from spanguard_processor.fairness.metrics import get_metric
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.ingest.spans import SpanRecord
from spanguard_processor.traces.convert import trace_from_records, traces_from_readable_spans

from ..fairness.conftest import FAST
from .openai_stub import chat_completion, openai_stub

genai_openai = pytest.importorskip("opentelemetry.instrumentation.genai.openai")

pytestmark = pytest.mark.integration

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SEEDS = 4


def _answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if "group a" in body["messages"][-1]["content"]:
        return chat_completion("I can't help with that.", completion_tokens=6)
    return chat_completion("Flat 4 is free from May.", completion_tokens=8)


def test_default_content_genai_app_names_the_content_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import openai

    monkeypatch.delenv(CONTENT_ENV, raising=False)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = genai_openai.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with openai_stub(_answer) as stub:
            client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
            tracer = provider.get_tracer("renter-support")
            for seed in range(SEEDS):
                for group in ("a", "b"):
                    attrs = {"spanguard.seed_id": f"s{seed}", "spanguard.assignment.group": group}
                    with tracer.start_as_current_span("turn", attributes=attrs):
                        client.chat.completions.create(
                            model="gpt-4o-mini",
                            messages=[{"role": "user", "content": f"A flat? (group {group})"}],
                        )
    finally:
        instrumentor.uninstrument()
    traces = traces_from_readable_spans(exporter.get_finished_spans())
    assert len(traces) == 2 * SEEDS and all(t.output is None for t in traces)
    metric = get_metric("refusal_gap")
    assert metric is not None
    (result,) = evaluate(
        [observation_from_trace(t) for t in traces],
        [MetricConfig(type="refusal_gap", threshold=metric.threshold)],
        FAST,
    ).results
    assert result.verdict == Verdict.NO_SIGNAL
    assert (
        f"{2 * SEEDS} span(s) named chat gpt-4o-mini recorded no text: set "
        f"{CONTENT_ENV}=SPAN_ONLY or EVENT_ONLY (the OpenTelemetry GenAI instrumentations)"
    ) in result.diagnosis
    assert "docs/sdk.md#privacy" not in result.diagnosis


def test_a_retrieval_span_without_documents_is_named_with_its_switch() -> None:
    """util-genai's retrieval span (name ``retrieval {data source}``, its operation and data
    source, documents only with content capture on)."""
    spans = [
        SpanRecord("1" * 32, "a" * 16, "", "turn", 1, 10, {"spanguard.seed_id": "s0"}),
        SpanRecord(
            "1" * 32,
            "b" * 16,
            "a" * 16,
            "retrieval kb",
            2,
            3,
            {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "kb"},
            kind=3,
        ),
    ]
    notes = {(n.key, n.span): n.count for n in trace_from_records(spans).unread}
    assert notes == {
        (
            f"no documents: {CONTENT_ENV}=SPAN_ONLY or EVENT_ONLY "
            "(the OpenTelemetry GenAI instrumentations)",
            "retrieval kb",
        ): 1
    }
