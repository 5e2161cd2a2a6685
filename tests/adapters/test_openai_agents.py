"""The OpenAI Agents SDK's Runner, its Responses model pointed at the local stub server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, RunConfig, function_tool

from spanguard import semconv
from spanguard_processor.adapters import AdapterError, openai_agent
from spanguard_processor.fairness.runner import run_app
from spanguard_processor.fairness.suite import Variant

from .conftest import call_captured
from .openai_stub import openai_stub, response

pytestmark = pytest.mark.integration


@function_tool
def kb_search(query: str) -> str:
    """Search the knowledge base."""
    return f"articles about {query}"


def _scripted(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Group 'a' first gets a tool call; after the tool's output every run gets an answer."""
    assert path == "/responses"
    answered = any(isinstance(i, dict) and i.get("type") == "function_call_output"
                   for i in body["input"])
    if body["metadata"]["group"] == "a" and not answered:
        return response(None, function_calls=[("call_7", "kb_search", '{"query": "refunds"}')],
                        input_tokens=40, output_tokens=12)
    return response("Refunds take 5 days.", input_tokens=55, output_tokens=7)


def _agent(client: openai.AsyncOpenAI) -> Agent[Any]:
    return Agent(name="support", instructions="Help the customer.", tools=[kb_search],
                 model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))


def test_runner_records_model_calls_and_tool_calls() -> None:
    variants = [Variant("s::1", "s", "Refund?", {"group": "a"}),
                Variant("s::2", "s", "Refund?", {"group": "b"})]
    with openai_stub(_scripted) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        observations, errors = run_app(openai_agent(_agent(client)), variants)
        asyncio.run(client.close())
    assert errors == []
    assert [o.response for o in observations] == ["Refunds take 5 days."] * 2
    assert [[t.name for t in o.trace.tool_calls] for o in observations] == [["kb_search"], []]
    first = stub.requests[0][1]
    assert first["metadata"] == {"group": "a"}
    tool_output = next(i for i in stub.requests[1][1]["input"]
                       if i.get("type") == "function_call_output")
    assert tool_output["output"] == "articles about refunds"  # the real tool ran


def test_runner_spans_carry_usage_per_model_response() -> None:
    with openai_stub(_scripted) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)

        mapper_seen: list[Any] = []

        def mapper(result: Any) -> dict[str, Any]:
            mapper_seen.append(result.last_agent.name)
            return {"plan_steps": ["search", "answer"]}

        app = openai_agent(_agent(client), trace_mapper=mapper,
                           run_config=RunConfig(tracing_disabled=True, workflow_name="t"))
        text, spans = call_captured(app, "Refund?", {"group": "a"})
    assert text == "Refunds take 5 days." and mapper_seen == ["support"]
    chats = [s["attributes"] for s in spans if s["name"] == "chat gpt-4o-mini"]
    assert [(c[semconv.GEN_AI_USAGE_INPUT_TOKENS], c[semconv.GEN_AI_USAGE_OUTPUT_TOKENS])
            for c in chats] == [(40, 12), (55, 7)]
    tool = next(s for s in spans if s["name"] == "execute_tool kb_search")
    assert tool["attributes"][semconv.GEN_AI_TOOL_CALL_ID] == "call_7"
    plan = [e["attributes"][semconv.PLAN_STEP] for s in spans for e in s["events"]
            if e["name"] == semconv.EVENT_PLAN_STEP]
    assert plan == ["search", "answer"]


def test_structured_final_output_and_wrong_objects_are_adapter_errors() -> None:
    with pytest.raises(AdapterError) as info:
        openai_agent({"name": "support"})
    assert str(info.value) == ("the openai-agents adapter: dict is not an agents.Agent; "
                               "expected Agent(name=..., instructions=..., model=...).")
    with pytest.raises(AdapterError, match=r"run_config is a dict; expected an agents\.RunConfig"):
        openai_agent(Agent(name="x"), run_config={"tracing_disabled": True})
    with openai_stub(lambda path, body: response(json.dumps({"n": 1}))) as stub:
        from pydantic import BaseModel

        class Out(BaseModel):
            n: int

        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        agent = Agent(name="s", output_type=Out,
                      model=OpenAIResponsesModel(model="m", openai_client=client))
        with pytest.raises(AdapterError, match="the openai-agents adapter: the run's final "
                                               "output has no text \\(got Out\\)"):
            call_captured(openai_agent(agent), "x", {})


def test_handoffs_are_recorded_as_tool_calls() -> None:
    def script(path: str, body: dict[str, Any]) -> dict[str, Any]:
        handed = any(isinstance(i, dict) and i.get("type") == "function_call_output"
                     for i in body["input"])
        if not handed:
            return response(None, function_calls=[("call_h", "transfer_to_billing", "{}")])
        return response("Billing here: refunds take 5 days.")

    with openai_stub(script) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        billing = Agent(name="billing", instructions="Billing.", model=model)
        triage = Agent(name="triage", instructions="Route.", handoffs=[billing], model=model)
        observations, errors = run_app(openai_agent(triage),
                                       [Variant("s::1", "s", "Refund?", {"group": "a"})])
        asyncio.run(client.close())
    assert errors == []
    assert observations[0].response == "Billing here: refunds take 5 days."
    assert [t.name for t in observations[0].trace.tool_calls] == ["transfer_to_billing"]
