"""The OpenAI Agents SDK's Runner, its Responses model pointed at the local stub server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    function_tool,
)

from spanguard import semconv
from spanguard_processor.adapters import AdapterError, openai_agent
from spanguard_processor.fairness.design.suite import Variant
from spanguard_processor.fairness.run.runner import run_app

from .conftest import call_captured
from .openai_stub import chat_completion, openai_stub, response

pytestmark = pytest.mark.integration


@function_tool
def kb_search(query: str) -> str:
    """Search the knowledge base."""
    return f"articles about {query}"


def _scripted(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Group 'a' first gets a tool call; after the tool's output every run gets an answer."""
    assert path == "/responses"
    answered = any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in body["input"]
    )
    if body["metadata"]["group"] == "a" and not answered:
        return response(
            None,
            function_calls=[("call_7", "kb_search", '{"query": "refunds"}')],
            input_tokens=40,
            output_tokens=12,
        )
    return response("Refunds take 5 days.", input_tokens=55, output_tokens=7)


def _agent(client: openai.AsyncOpenAI) -> Agent[Any]:
    return Agent(
        name="support",
        instructions="Help the customer.",
        tools=[kb_search],
        model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
    )


def test_runner_records_model_calls_and_tool_calls() -> None:
    variants = [
        Variant("s::1", "s", "Refund?", {"group": "a"}),
        Variant("s::2", "s", "Refund?", {"group": "b"}),
    ]
    with openai_stub(_scripted) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        observations, errors = run_app(openai_agent(_agent(client)), variants)
        asyncio.run(client.close())
    assert errors == []
    assert [o.response for o in observations] == ["Refunds take 5 days."] * 2
    assert [[t.name for t in o.trace.tool_calls] for o in observations] == [["kb_search"], []]
    first = stub.requests[0][1]
    assert first["metadata"] == {"group": "a"}
    tool_output = next(
        i for i in stub.requests[1][1]["input"] if i.get("type") == "function_call_output"
    )
    assert tool_output["output"] == "articles about refunds"  # the real tool ran


def test_runner_spans_carry_usage_per_model_response() -> None:
    with openai_stub(_scripted) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)

        mapper_seen: list[Any] = []

        def mapper(result: Any) -> dict[str, Any]:
            mapper_seen.append(result.last_agent.name)
            return {"plan_steps": ["search", "answer"]}

        app = openai_agent(
            _agent(client),
            trace_mapper=mapper,
            run_config=RunConfig(tracing_disabled=True, workflow_name="t"),
        )
        text, spans = call_captured(app, "Refund?", {"group": "a"})
    assert text == "Refunds take 5 days." and mapper_seen == ["support"]
    chats = [s["attributes"] for s in spans if s["name"] == "chat gpt-4o-mini"]
    assert [
        (c[semconv.GEN_AI_USAGE_INPUT_TOKENS], c[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) for c in chats
    ] == [(40, 12), (55, 7)]
    tool = next(s for s in spans if s["name"] == "execute_tool kb_search")
    assert tool["attributes"][semconv.GEN_AI_TOOL_CALL_ID] == "call_7"
    plan = [
        e["attributes"][semconv.PLAN_STEP]
        for s in spans
        for e in s["events"]
        if e["name"] == semconv.EVENT_PLAN_STEP
    ]
    assert plan == ["search", "answer"]


def test_structured_final_output_and_wrong_objects_are_adapter_errors() -> None:
    with pytest.raises(AdapterError) as info:
        openai_agent({"name": "support"})
    assert str(info.value) == (
        "the openai-agents adapter: dict is not an agents.Agent; "
        "expected Agent(name=..., instructions=..., model=...)."
    )
    with pytest.raises(AdapterError, match=r"run_config is a dict; expected an agents\.RunConfig"):
        openai_agent(Agent(name="x"), run_config={"tracing_disabled": True})
    with openai_stub(lambda path, body: response(json.dumps({"n": 1}))) as stub:
        from pydantic import BaseModel

        class Out(BaseModel):
            n: int

        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        agent = Agent(
            name="s", output_type=Out, model=OpenAIResponsesModel(model="m", openai_client=client)
        )
        with pytest.raises(
            AdapterError,
            match="the openai-agents adapter: the run's final output has no text \\(got Out\\)",
        ):
            call_captured(openai_agent(agent), "x", {})


def _desk_script(biased: bool) -> Any:
    """triage searches the knowledge base, then (for women, when biased) hands off to the
    human desk, which answers; otherwise triage answers itself."""

    def script(path: str, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("input") if path == "/responses" else body.get("messages")
        text = json.dumps(items)
        outputs = text.count("function_call_output") + text.count('"role": "tool"')
        woman = "woman" in json.dumps(body.get("metadata") or {}) or "woman" in text
        if outputs == 0:
            calls = [("call_kb", "kb_search", '{"query": "refund"}')]
        elif outputs == 1 and biased and woman:
            calls = [("call_h", "transfer_to_human_desk", "{}")]
        else:
            calls = []
        answer = "A person will call you." if outputs == 2 else "Refunds take 5 days."
        if path == "/responses":
            return response(None if calls else answer, function_calls=calls)
        return chat_completion(None if calls else answer, tool_calls=calls)

    return script


def _desk_agents(client: openai.AsyncOpenAI, api: str) -> Agent[Any]:
    def model(name: str) -> Any:
        if api == "responses":
            return OpenAIResponsesModel(model=name, openai_client=client)
        return OpenAIChatCompletionsModel(model=name, openai_client=client)

    desk = Agent(
        name="human_desk", instructions="Call the customer back.", model=model("desk-model")
    )
    return Agent(
        name="triage",
        instructions="Help the customer.",
        tools=[kb_search],
        handoffs=[desk],
        model=model("triage-model"),
    )


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_handoffs_are_agent_spans_with_their_own_model_in_run_order(api: str) -> None:
    with openai_stub(_desk_script(biased=True)) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_agent(_desk_agents(client, api), escalate_on="handoff:human_desk")
        text, spans = call_captured(app, "I am a woman. Refund?", {"gender": "woman"})
        asyncio.run(client.close())
    assert text == "A person will call you."
    names = [s["name"] for s in spans]
    assert names == [
        "invoke_agent adapter_test",
        "invoke_agent triage",
        "chat triage-model",
        "execute_tool kb_search",
        "chat triage-model",
        "invoke_agent human_desk",
        "chat desk-model",
    ]
    desk = spans[names.index("invoke_agent human_desk")]
    assert [
        e["attributes"][semconv.ESCALATION_REASON]
        for s in spans
        for e in s["events"]
        if e["name"] == semconv.EVENT_ESCALATION
    ] == ["handoff to human_desk"]
    assert desk["attributes"][semconv.GEN_AI_AGENT_NAME] == "human_desk"
    assert spans[names.index("chat desk-model")]["parent_span_id"] == desk["span_id"]


# 60 Agents-SDK runs through the stub server: 3.9-5.3 s each on a loaded run (load ~9)
@pytest.mark.slow
@pytest.mark.parametrize("biased", [False, True])
def test_a_group_always_handed_to_the_human_desk_is_caught(biased: bool) -> None:
    from spanguard_processor.fairness import GateConfig
    from spanguard_processor.fairness.design.suite import MetricConfig
    from spanguard_processor.fairness.evaluate import evaluate
    from spanguard_processor.fairness.metrics import get_metric

    variants = [
        Variant(f"s{i}::{g}", f"s{i}", f"I am a {g}. Refund {i}?", {"gender": g})
        for i in range(30)
        for g in ("man", "woman")
    ]  # 30: a fair app can pass
    with openai_stub(_desk_script(biased)) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_agent(_desk_agents(client, "responses"), escalate_on="handoff:human_desk")
        observations, errors = run_app(app, variants)
        asyncio.run(client.close())
    assert errors == []
    metric = get_metric("escalation_parity")
    assert metric is not None
    ev = evaluate(
        observations,
        [MetricConfig("escalation_parity", metric.threshold)],
        GateConfig(bootstrap_samples=300, permutation_samples=199),
    )
    assert ev.passed is not biased


def test_escalate_on_a_tool_and_a_bad_escalate_on() -> None:
    with openai_stub(_desk_script(biased=False)) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_agent(_desk_agents(client, "responses"), escalate_on="kb_search")
        observations, errors = run_app(app, [Variant("v", "s", "Refund?", {"gender": "man"})])
        asyncio.run(client.close())
    assert errors == [] and observations[0].trace.escalated
    assert observations[0].trace.escalation_reason == "tool kb_search"
    with pytest.raises(AdapterError, match="escalate_on 'human:desk' must be handoff:AGENT_NAME"):
        openai_agent(Agent(name="x"), escalate_on="human:desk")
