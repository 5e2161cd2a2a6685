"""Google ADK agents, traced by ADK's own telemetry (google-adk 2.13.0) and by OpenInference
(openinference-instrumentation-google-adk 1.0.5), from spans recorded once with the real
packages (tests/data/instrumentors/record_google_adk_turn.py: google-adk pins
opentelemetry-api<=1.44, below the dev extra's). An ``LlmAgent`` with ``get_weather`` runs 8
seeds × groups a and b against a Gemini API stub; group a's model asks for the tool five times,
group b's once (the planted bias), every model call 30 + 5 tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanguard_processor.fairness.design.suite import MetricConfig
from spanguard_processor.fairness.evaluate import evaluate
from spanguard_processor.fairness.gate.results import Verdict
from spanguard_processor.fairness.metrics import get_metric
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.traces.model import AgentTrace

from ..fairness.conftest import FAST

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data" / "instrumentors"
SEEDS = 8
TOOLS = {"a": 5, "b": 1}  # get_weather calls per run


def _traces(name: str) -> list[AgentTrace]:
    traces = list(read_agent_traces_any([DATA / f"{name}.otlp"]))
    assert len(traces) == 2 * SEEDS
    return traces


def _tool_count_gap(traces: list[AgentTrace]) -> Verdict:
    metric = get_metric("tool_count_gap")
    assert metric is not None
    # a deterministic app's count gap is bounded only by a stated range (docs/fairness.md)
    config = MetricConfig(type="tool_count_gap", threshold=metric.threshold, max_difference=5.0)
    (result,) = evaluate([observation_from_trace(t) for t in traces], [config], FAST).results
    return result.verdict


def _check_tools_and_text(trace: AgentTrace) -> None:
    group = trace.assignments["group"]
    assert [c.name for c in trace.trace.tool_calls] == ["get_weather"] * TOOLS[group]
    assert not any(c.requested for c in trace.trace.tool_calls)  # executed, each once
    assert trace.input == f"Weather in Paris? (seed {trace.seed_id[1:]}, group {group})"
    assert trace.output == "It is sunny."


def test_adk_native_telemetry_counts_each_call_once_and_a_tool_bias_fails() -> None:
    traces = _traces("google-adk")
    for trace in traces:
        _check_tools_and_text(trace)
        calls = TOOLS[trace.assignments["group"]] + 1  # one model turn per tool call, + answer
        assert trace.usage["llm_calls"] == calls
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (
            30 * calls,
            5 * calls,
        )
        assert trace.usage["models"] == ["gemini-2.5-flash"]
        assert not trace.unread  # invoke_workflow / invoke_agent are known, not noise
    assert _tool_count_gap(traces) == Verdict.FAIL


def test_openinference_google_adk_reads_its_tools_and_its_one_llm_span() -> None:
    """OpenInference google-adk 1.0.5 suppresses ADK's ``generate_content`` spans, and with ADK
    2.13.0 writes each model call's LLM attributes onto the ``invoke_agent`` span instead of a
    span of its own: the recording holds one LLM span per run with the last call's usage. That
    span is read as the one call it is (ADK's schema 1 avoids it: the next test); the tool spans
    are all there, so the bias still FAILs."""
    traces = _traces("openinference-google-adk")
    for trace in traces:
        _check_tools_and_text(trace)
        assert trace.usage["llm_calls"] == 1
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (30, 5)
    assert _tool_count_gap(traces) == Verdict.FAIL


def test_openinference_google_adk_on_adk_schema_1_reads_every_call() -> None:
    """With ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` ADK opens a ``call_llm`` span per model
    call, which OpenInference marks LLM: every call and its tokens are read (2 seeds)."""
    traces = list(read_agent_traces_any([DATA / "openinference-google-adk-schema1.otlp"]))
    assert len(traces) == 4
    for trace in traces:
        _check_tools_and_text(trace)
        calls = TOOLS[trace.assignments["group"]] + 1
        assert trace.usage["llm_calls"] == calls
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (
            30 * calls,
            5 * calls,
        )
        assert not trace.unread
