"""Anthropic apps instrumented by the official OpenTelemetry GenAI instrumentation
(opentelemetry-instrumentation-genai-anthropic 1.3b0) and by OpenInference's
(openinference-instrumentation-anthropic 3.1.0), in-process against a local stub of the Messages
API (issue 48): each call is read once with its tokens, the tool the model asked for is a
(requested) tool call, and a planted refusal bias FAILs ``refusal_gap``. With the GenAI
instrumentation's default settings (no content) the same bias is NO_SIGNAL, and the diagnosis
names the instrumentation's own switch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.fairness.design.suite import MetricConfig
from spanguard_processor.fairness.evaluate import evaluate
from spanguard_processor.fairness.gate.results import MetricResult, Verdict
from spanguard_processor.fairness.metrics import get_metric
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.traces.convert import traces_from_readable_spans
from spanguard_processor.traces.model import AgentTrace

from ..fairness.conftest import FAST
from .openai_stub import openai_stub

anthropic = pytest.importorskip("anthropic")
genai_anthropic = pytest.importorskip("opentelemetry.instrumentation.genai.anthropic")
oi_anthropic = pytest.importorskip("openinference.instrumentation.anthropic")

pytestmark = pytest.mark.integration

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SEEDS = 20
TOKENS = (21, 7)  # per call
MODEL = "claude-sonnet-5-5-20261001"
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
REFUSAL = "I can't help with that."
ANSWER = "It is sunny in Paris."


def _message(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Group a is refused at once; group b gets a tool request, then the answer."""
    assert path == "/messages"
    first = body["messages"][0]["content"]
    if "group a" in first:
        content: list[dict[str, Any]] = [{"type": "text", "text": REFUSAL}]
    elif len(body["messages"]) == 1:
        content = [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "x"}}
        ]
    else:
        content = [{"type": "text", "text": ANSWER}]
    return {
        "id": f"msg_{len(body['messages'])}_{body['metadata']['user_id']}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": TOKENS[0], "output_tokens": TOKENS[1]},
    }


def _turn(client: Any, prompt: str, user: str) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    reply = client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=100,
        messages=messages,
        tools=TOOLS,
        metadata={"user_id": user},
    )
    uses = [b for b in reply.content if b.type == "tool_use"]
    if not uses:
        return
    messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
    results = [{"type": "tool_result", "tool_use_id": u.id, "content": "sunny"} for u in uses]
    messages.append({"role": "user", "content": results})
    client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=100,
        messages=messages,
        tools=TOOLS,
        metadata={"user_id": user},
    )


@contextmanager
def _instrumented(name: str) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    module = genai_anthropic if name == "genai-anthropic" else oi_anthropic
    instrumentor = module.AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider, exporter
    finally:
        instrumentor.uninstrument()


def _run(name: str, *, sdk_spans: bool = False) -> tuple[list[ReadableSpan], list[AgentTrace]]:
    with _instrumented(name) as (provider, exporter), openai_stub(_message) as stub:
        own = {"open_telemetry": {"tracer_provider": provider}} if sdk_spans else {}
        client = anthropic.Anthropic(
            api_key="test", base_url=stub.base_url.removesuffix("/v1"), max_retries=0, **own
        )
        tracer = provider.get_tracer("weather-app")
        for seed in range(SEEDS):
            for group in ("a", "b"):
                attrs = {"spanguard.seed_id": f"s{seed}", "spanguard.assignment.group": group}
                with tracer.start_as_current_span("turn", attributes=attrs):
                    _turn(client, f"Weather in Paris? (group {group})", f"s{seed}{group}")
        spans = list(exporter.get_finished_spans())
    return spans, traces_from_readable_spans(spans)


def _refusal_gap(traces: list[AgentTrace]) -> MetricResult:
    metric = get_metric("refusal_gap")
    assert metric is not None
    config = MetricConfig(type="refusal_gap", threshold=metric.threshold)
    (result,) = evaluate([observation_from_trace(t) for t in traces], [config], FAST).results
    return result


def _check_counts(traces: list[AgentTrace]) -> None:
    assert len(traces) == 2 * SEEDS
    for trace in traces:
        calls = 1 if trace.assignments["group"] == "a" else 2
        assert trace.usage["llm_calls"] == calls
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (
            calls * TOKENS[0],
            calls * TOKENS[1],
        )
        assert trace.usage["models"] == [MODEL]


@pytest.mark.parametrize(
    ("name", "sdk_spans"),
    [
        ("genai-anthropic", False),
        ("genai-anthropic", True),  # sibling spans with one gen_ai.response.id
        ("openinference-anthropic", False),
        ("openinference-anthropic", True),  # the SDK's span inside OpenInference's, no id on it
    ],
    ids=["genai", "genai+sdk-spans", "openinference", "openinference+sdk-spans"],
)
def test_anthropic_calls_count_once_and_a_refusal_bias_fails(
    name: str, sdk_spans: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTENT_ENV, "SPAN_ONLY")  # the GenAI one's switch; OpenInference: on
    spans, traces = _run(name, sdk_spans=sdk_spans)
    scopes = {s.instrumentation_scope.name for s in spans if s.instrumentation_scope}
    assert ("com.anthropic.sdk.python" in scopes) == sdk_spans  # the SDK's own spans, same ids
    _check_counts(traces)
    for trace in traces:
        if trace.assignments["group"] == "b":
            assert [(c.name, c.requested) for c in trace.trace.tool_calls] == [
                ("get_weather", True)
            ]
            assert (trace.input, trace.output) == ("Weather in Paris? (group b)", ANSWER)
        else:
            assert not trace.trace.tool_calls and trace.output == REFUSAL
    assert _refusal_gap(traces).verdict == Verdict.FAIL


def test_default_content_genai_anthropic_names_the_content_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CONTENT_ENV, raising=False)
    _, traces = _run("genai-anthropic")
    _check_counts(traces)
    assert all(t.output is None and not t.trace.tool_calls for t in traces)
    result = _refusal_gap(traces)
    assert result.verdict == Verdict.NO_SIGNAL
    assert (
        f"recorded no text: set {CONTENT_ENV}=SPAN_ONLY or EVENT_ONLY "
        "(the OpenTelemetry GenAI instrumentations)"
    ) in result.diagnosis
