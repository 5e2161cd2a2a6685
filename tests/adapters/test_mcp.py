"""MCP tool calls, from the real ``mcp`` SDK's spans (issue 48).

The mcp SDK (2.x) traces every request it sends as a CLIENT span ``MCP send tools/call X``
with ``mcp.method.name`` only, and every request its server handles as a SERVER span
``tools/call X`` with ``gen_ai.operation.name=execute_tool``. A client and an in-process
``MCPServer`` talk JSON-RPC over the SDK's in-memory transport; the SDK's module tracer is
pointed at the test's provider. "A third-party server" is the same run with the server's
spans dropped (such a server exports nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

import spanguard
from spanguard.testing import SpanCapture
from spanguard_processor.fairness.design.suite import MetricConfig
from spanguard_processor.fairness.evaluate import evaluate
from spanguard_processor.fairness.gate.results import Verdict
from spanguard_processor.fairness.metrics import get_metric
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.traces.convert import traces_from_readable_spans
from spanguard_processor.traces.model import AgentTrace

from ..fairness.conftest import FAST

mcp_otel = pytest.importorskip("mcp.shared._otel")
from mcp import Client  # noqa: E402
from mcp.client._memory import InMemoryTransport  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

SCOPE = "mcp-python-sdk"  # the SDK's tracer name
BIASED = ["lookup_account", "check_credit", "verify_income", "format_answer"]  # group a's calls
server = MCPServer("accounts")


@server.tool()
def lookup_account(customer: str) -> str:
    """Find the customer's account."""
    return f"account of {customer}"


@server.tool()
def check_credit(customer: str) -> str:
    """Run a credit check."""
    return "ok"


@server.tool()
def verify_income(customer: str) -> str:
    """Verify the customer's income."""
    return "verified"


@spanguard.tool
def format_answer(text: str) -> str:
    """A local tool, traced by spanguard."""
    return text.upper()


async def _turn(group: str) -> None:
    # over JSON-RPC streams, as with a remote server (an in-process Server would be called
    # directly, without the client's spans)
    async with Client(InMemoryTransport(server)) as client:
        await client.list_tools()
        await client.call_tool("lookup_account", {"customer": "x"})
        if group == "a":  # the planted bias: group a gets two more checks
            await client.call_tool("check_credit", {"customer": "x"})
            await client.call_tool("verify_income", {"customer": "x"})
    format_answer("done")


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[SpanCapture]:
    with SpanCapture() as cap:
        monkeypatch.setattr(mcp_otel, "_tracer", cap.provider.get_tracer(SCOPE))
        yield cap


def _spans(capture: SpanCapture, *, server_exports: bool) -> list[ReadableSpan]:
    return [
        s
        for s in capture.exporter.get_finished_spans()
        if server_exports
        or not (
            s.kind == SpanKind.SERVER
            and s.instrumentation_scope is not None
            and s.instrumentation_scope.name == SCOPE
        )
    ]


def _run(capture: SpanCapture, seeds: int, *, server_exports: bool) -> list[AgentTrace]:
    for seed in range(seeds):
        for group in ("a", "b"):
            with spanguard.request("support", seed_id=f"s{seed}", assignments={"group": group}):
                asyncio.run(_turn(group))
    return traces_from_readable_spans(_spans(capture, server_exports=server_exports))


def _names(trace: AgentTrace) -> list[str]:
    return [call.name for call in trace.trace.tool_calls]


def _evaluate(traces: Sequence[AgentTrace], metrics: list[str]) -> dict[str, Any]:
    # a deterministic app's count gap is bounded only by a stated range (docs/fairness.md, "what
    # PASS means for counts"): the suite states that no template differs by more than 5 calls
    configs = [
        MetricConfig(type=m, threshold=get_metric(m).threshold, max_difference=5.0)  # type: ignore[union-attr]
        for m in metrics
    ]
    result = evaluate([observation_from_trace(t) for t in traces], configs, FAST)
    return {r.metric: r for r in result.results}


def test_mcp_client_spans_of_a_third_party_server_are_tool_calls(capture: SpanCapture) -> None:
    traces = _run(capture, 1, server_exports=False)
    by_group = {t.assignments["group"]: t for t in traces}
    assert _names(by_group["a"]) == BIASED
    assert _names(by_group["b"]) == ["lookup_account", "format_answer"]
    # other MCP methods are counted and shown, never tools
    notes = {(n.key, n.span): n.count for n in by_group["a"].unread}
    assert notes[("mcp.method.name=tools/list", "MCP send tools/list")] == 1


def test_an_mcp_call_exported_by_client_and_server_counts_once(capture: SpanCapture) -> None:
    traces = _run(capture, 1, server_exports=True)
    names = {s.name for s in capture.exporter.get_finished_spans()}
    assert {"MCP send tools/call check_credit", "tools/call check_credit"} <= names
    by_group = {t.assignments["group"]: t for t in traces}
    assert _names(by_group["a"]) == BIASED
    assert _names(by_group["b"]) == ["lookup_account", "format_answer"]


@pytest.mark.slow
def test_a_bias_in_mcp_calls_fails_the_tool_metrics(capture: SpanCapture) -> None:
    metrics = ["tool_count_gap", "tool_name_gap"]
    traces = _run(capture, 30, server_exports=False)
    # every MCP tools/call counted: 3 in group a, 1 in group b, beside the local tool
    assert sum(len(t.trace.tool_calls) for t in traces) == 30 * (4 + 2)
    results = _evaluate(traces, metrics)
    for name in metrics:
        assert results[name].verdict == Verdict.FAIL, (name, results[name])


@pytest.mark.slow
def test_a_bias_in_mcp_calls_beside_genai_openai_model_calls_fails(capture: SpanCapture) -> None:
    """The same agent with its model calls traced by opentelemetry-instrumentation-genai-openai
    1.3b0 (one ``chat`` call per turn against the local stub): every call and tool once."""
    import openai
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    from .openai_stub import chat_completion, openai_stub

    seeds = 30
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=capture.provider)
    try:
        with openai_stub(lambda path, body: chat_completion("Done.")) as stub:
            client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
            for seed in range(seeds):
                for group in ("a", "b"):
                    with spanguard.request(
                        "support", seed_id=f"s{seed}", assignments={"group": group}
                    ):
                        client.chat.completions.create(
                            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
                        )
                        asyncio.run(_turn(group))
    finally:
        instrumentor.uninstrument()
    traces = traces_from_readable_spans(_spans(capture, server_exports=False))
    assert len(traces) == 2 * seeds
    assert sum(t.usage["llm_calls"] for t in traces) == 2 * seeds
    assert sum(len(t.trace.tool_calls) for t in traces) == seeds * (4 + 2)
    results = _evaluate(traces, ["tool_count_gap", "tool_name_gap"])
    assert {r.verdict for r in results.values()} == {Verdict.FAIL}
