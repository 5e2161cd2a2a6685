"""One operation, counted once, from real packages' spans (issue 48): a model call that two
instrumentations recorded is one call with its tokens once.

The Anthropic SDK (2.x) traces each API call itself (scope ``com.anthropic.sdk.python``);
OpenLLMetry's anthropic instrumentation records the same call again as a sibling span with
the same ``gen_ai.response.id``. Both run in-process against a local stub of the Messages API.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import spanguard
from spanguard.testing import SpanCapture
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.traces.convert import traces_from_readable_spans

from .openai_stub import openai_stub, response

anthropic = pytest.importorskip("anthropic")
openllmetry = pytest.importorskip("opentelemetry.instrumentation.anthropic")

pytestmark = pytest.mark.integration

REQUESTS = 3
TOKENS = (21, 7)


def _message(path: str, body: dict[str, Any]) -> dict[str, Any]:
    assert path == "/messages"
    return {
        "id": f"msg_{len(body['messages']):02d}{body['metadata']['user_id']}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5-20261001",
        "content": [{"type": "text", "text": "Hello there."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": TOKENS[0], "output_tokens": TOKENS[1]},
    }


def test_anthropic_sdk_spans_beside_openllmetry_count_each_call_once() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = openllmetry.AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with openai_stub(_message) as stub:
            client = anthropic.Anthropic(
                api_key="test",
                base_url=stub.base_url.removesuffix("/v1"),
                open_telemetry={"tracer_provider": provider},
            )
            tracer = provider.get_tracer("app")
            for i in range(REQUESTS):
                with tracer.start_as_current_span("invoke_agent support") as root:
                    root.set_attribute("gen_ai.operation.name", "invoke_agent")
                    client.messages.create(
                        model="claude-sonnet-5-5",
                        max_tokens=100,
                        messages=[{"role": "user", "content": "Hi"}],
                        metadata={"user_id": f"u{i}"},
                    )
    finally:
        instrumentor.uninstrument()
    spans = exporter.get_finished_spans()
    scopes = {s.instrumentation_scope.name for s in spans if s.instrumentation_scope}
    assert scopes == {"app", "com.anthropic.sdk.python", "opentelemetry.instrumentation.anthropic"}
    traces = traces_from_readable_spans(spans)
    assert len(traces) == REQUESTS
    for trace in traces:
        assert trace.usage["llm_calls"] == 1
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == TOKENS
        assert trace.output == "Hello there."  # OpenLLMetry's messages fill the SDK's gaps


def _scripted(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A call of the MCP tool first; after its output, the answer."""
    answered = any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in body["input"]
    )
    if not answered:
        return response(
            None,
            function_calls=[("call_9", "lookup_account", '{"customer": "x"}')],
            input_tokens=40,
            output_tokens=12,
        )
    return response("Your account is fine.", input_tokens=55, output_tokens=7)


def test_agents_sdk_tool_beside_the_mcp_spans_of_the_same_call_counts_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Agents SDK (through spanguard's adapter) calls a tool of an MCP server whose client
    and server export to the same place: the adapter's tool span, the client's ``MCP send
    tools/call`` span and the server's span are one call."""
    import openai
    from agents import Agent, OpenAIResponsesModel
    from agents.mcp.server import _MCPServerWithClientSession
    from mcp.client._memory import InMemoryTransport
    from mcp.server.mcpserver import MCPServer

    from spanguard_processor.adapters import openai_agent

    from .test_mcp import SCOPE, mcp_otel

    accounts = MCPServer("accounts")

    @accounts.tool()
    def lookup_account(customer: str) -> str:
        """Find the customer's account."""
        return f"account of {customer}"

    class InProcess(_MCPServerWithClientSession):  # type: ignore[misc]
        """The Agents SDK's MCP client over the mcp SDK's in-memory JSON-RPC transport."""

        def create_streams(self) -> Any:
            return InMemoryTransport(accounts)

        @property
        def name(self) -> str:
            return "accounts"

    with openai_stub(_scripted) as stub, SpanCapture() as capture:
        monkeypatch.setattr(mcp_otel, "_tracer", capture.provider.get_tracer(SCOPE))
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        server = InProcess(cache_tools_list=True, client_session_timeout_seconds=5)
        agent = Agent(
            name="support",
            instructions="Help.",
            mcp_servers=[server],
            model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
        )
        app = openai_agent(agent)

        async def run() -> str:
            async with server:
                with spanguard.request("support", assignments={"group": "a"}):
                    return await app("Is my account fine?", {"group": "a"})

        assert asyncio.run(run()) == "Your account is fine."
        spans = capture.exporter.get_finished_spans()
    names = {s.name for s in spans}
    assert {"MCP send tools/call lookup_account", "tools/call lookup_account"} <= names
    assert "execute_tool lookup_account" in names
    # the connection's handshake, before the request, is a trace of its own
    (trace,) = [t for t in traces_from_readable_spans(spans) if t.request_id]
    assert [c.name for c in trace.trace.tool_calls] == ["lookup_account"]
    assert trace.usage["llm_calls"] == 2


def test_llama_index_helper_spans_marked_llm_are_not_calls() -> None:
    """Recorded once from llama-index-core 0.14.25 + openinference-instrumentation-llama-index
    4.6.1 (tests/data/instrumentors/record_llama_index_turn.py): three agent runs of two
    model calls each, every call beside an LLM-marked helper span without usage."""
    path = Path(__file__).parents[1] / "data" / "instrumentors" / "llama-index.otlp"
    traces = list(read_agent_traces_any([path]))
    assert len(traces) == 3
    for trace in traces:
        assert trace.usage["llm_calls"] == 2
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (50, 10)
        assert [c.tool_calls for c in trace.llm_calls] == [("lookup",), ()]
        assert [c.name for c in trace.trace.tool_calls] == ["lookup"]


# OpenLLMetry 0.62.4 defines a pydantic model with a class-based config when it instruments
@pytest.mark.filterwarnings("ignore:Support for class-based `config` is deprecated")
@pytest.mark.parametrize(
    "pair",
    [("genai", "openllmetry"), ("genai", "openinference"), ("openllmetry", "openinference")],
    ids="+".join,
)
def test_two_instrumentations_of_one_openai_client_count_each_call_once(
    pair: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48, item 4 (a dedup by timing alone, without ids): two real instrumentations on
    one client nest their spans (the second patch wraps the first), so the nested merge reads
    one call; no stack measured leaves id-less sibling spans (see also the Anthropic pairs in
    test_anthropic_instrumentors.py)."""
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInference
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor as GenAI
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetry

    from .openai_stub import chat_completion

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    kinds = {"genai": GenAI, "openllmetry": OpenLLMetry, "openinference": OpenInference}
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentors = [kinds[name]() for name in pair]
    try:
        for instrumentor in instrumentors:
            instrumentor.instrument(tracer_provider=provider)
        with openai_stub(lambda path, body: chat_completion("Hi.", prompt_tokens=9)) as stub:
            client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
            with provider.get_tracer("app").start_as_current_span("turn"):
                for _ in range(2):
                    client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
                    )
    finally:
        for instrumentor in reversed(instrumentors):
            instrumentor.uninstrument()
    spans = exporter.get_finished_spans()
    assert len(spans) == 5  # the turn, two spans per call
    (trace,) = traces_from_readable_spans(spans)
    assert trace.usage["llm_calls"] == 2
    assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (18, 10)
