"""The OpenAI-compatible client adapters against a local server speaking the real wire format."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

from spanguard import semconv
from spanguard_processor.adapters import AdapterError, openai_chat, openai_responses
from spanguard_processor.fairness.design.suite import Variant
from spanguard_processor.fairness.run.runner import run_app

from .conftest import call_captured
from .openai_stub import chat_completion, openai_stub, response

pytestmark = pytest.mark.integration

VARIANTS = [
    Variant("s::1", "s", "Where is my parcel?", {"group": "a"}),
    Variant("s::2", "s", "Where is my parcel?", {"group": "b"}),
    Variant("s::3", "s", "Where is my parcel?", {"group": "c"}),
]


def _chat_by_group(path: str, body: dict[str, Any]) -> dict[str, Any]:
    assert path == "/chat/completions"
    group = body.get("metadata", {}).get("group") or body["messages"][0]["content"][-2]
    if group == "a":
        return chat_completion(
            None,
            tool_calls=[("call_abc", "track_parcel", '{"id": 7}')],
            prompt_tokens=20,
            completion_tokens=9,
        )
    if group == "b":
        return chat_completion(None, refusal="I can't help with that request.")
    return chat_completion("It arrives tomorrow.")


def test_chat_adapter_sends_assignments_and_records_tools_usage_and_refusal() -> None:
    with openai_stub(_chat_by_group) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_chat(
            client,
            model="gpt-4o-mini",
            system="The customer is in group {group}.",
            request_options={"temperature": 0},
            store=True,
        )
        observations, errors = run_app(app, VARIANTS)
        spans = [s for v in VARIANTS for s in call_captured(app, v.prompt, v.assignments)[1]]
        client.close()
    assert errors == []
    sent = stub.requests[0][1]
    assert sent["metadata"] == {"group": "a"} and sent["store"] is True
    assert sent["temperature"] == 0
    assert sent["messages"] == [
        {"role": "system", "content": "The customer is in group a."},
        {"role": "user", "content": "Where is my parcel?"},
    ]
    by_id = {o.id: o for o in observations}
    assert [t.name for t in by_id["s::1"].trace.tool_calls] == ["track_parcel"]
    assert by_id["s::1"].response == ""
    assert by_id["s::2"].response == "I can't help with that request."
    assert by_id["s::2"].metadata == {"refusal": True}
    assert by_id["s::2"].trace.tool_calls == ()
    assert by_id["s::3"].response == "It arrives tomorrow."
    chats = [s for s in spans if s["name"] == "chat gpt-4o-mini"]
    assert len(chats) == 3
    usage = chats[0]["attributes"]
    assert usage[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 20
    assert usage[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 9
    assert usage[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"
    assert usage[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ["tool_calls"]
    assert [c["attributes"][semconv.LLM_REFUSAL] for c in chats] == [False, True, False]
    tool = next(s for s in spans if s["name"] == "execute_tool track_parcel")
    assert tool["attributes"][semconv.GEN_AI_TOOL_CALL_ID] == "call_abc"


def test_responses_adapter_reads_output_items() -> None:
    def answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert path == "/responses"
        if body["metadata"]["group"] == "a":
            return response(
                "Checking.",
                function_calls=[("call_1", "track_parcel", "{}")],
                input_tokens=31,
                output_tokens=8,
            )
        if body["metadata"]["group"] == "b":
            return response(None, refusal="I cannot help with that.")
        return response("Tomorrow.")

    with openai_stub(answer) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_responses(client, model="gpt-4o-mini", instructions="Group {group}.")
        observations, errors = run_app(app, VARIANTS)
        _, spans = call_captured(app, VARIANTS[0].prompt, VARIANTS[0].assignments)
        client.close()
    assert errors == []
    assert stub.requests[0][1] == {
        "model": "gpt-4o-mini",
        "input": "Where is my parcel?",
        "instructions": "Group a.",
        "metadata": {"group": "a"},
    }
    by_id = {o.id: o for o in observations}
    assert by_id["s::1"].response == "Checking."
    assert [t.name for t in by_id["s::1"].trace.tool_calls] == ["track_parcel"]
    assert by_id["s::2"].response == "I cannot help with that."
    assert by_id["s::2"].metadata == {"refusal": True}
    assert by_id["s::3"].trace.tool_calls == ()
    chat = next(s for s in spans if s["name"] == "chat gpt-4o-mini")
    assert chat["attributes"][semconv.GEN_AI_USAGE_INPUT_TOKENS] == 31
    assert chat["attributes"][semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ["completed"]


def test_async_client_runs_on_one_event_loop() -> None:
    with openai_stub(_chat_by_group) as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_chat(client, model="gpt-4o-mini", system="Group {group}.")
        assert asyncio.iscoroutinefunction(app)
        observations, errors = run_app(app, VARIANTS, concurrency=3)
        asyncio.run(client.close())
    assert errors == []
    assert sorted(o.response for o in observations) == [
        "",
        "I can't help with that request.",
        "It arrives tomorrow.",
    ]


def test_trace_mapper_adds_process_signals_as_spans() -> None:
    def mapper(completion: Any) -> dict[str, Any]:
        assert completion.id == "chatcmpl-AbC123"
        return {
            "plan_steps": ["look up", "answer"],
            "escalated": True,
            "escalation_reason": "vip",
            "friction_points": ["id check"],
            "retrieved_documents": [{"id": "d1", "group": "faq", "rank": 1}],
        }

    with openai_stub(lambda path, body: chat_completion("Ok.")) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_chat(client, model="m", trace_mapper=mapper)
        observations, errors = run_app(app, VARIANTS[:1])
        client.close()
    assert errors == []
    trace = observations[0].trace
    assert trace.plan_steps == ("look up", "answer")
    assert trace.escalated and trace.escalation_reason == "vip"
    assert trace.friction_points == ("id check",)
    assert [(d.id, d.group, d.rank) for d in trace.retrieved_documents] == [("d1", "faq", 1)]


def test_invalid_trace_mapper_output_names_the_adapter_and_field() -> None:
    with openai_stub(lambda path, body: chat_completion("Ok.")) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_chat(client, model="m", trace_mapper=lambda r: {"tool_calls": ["search"]})
        with pytest.raises(AdapterError) as info:
            app("hi", {})
        client.close()
    assert str(info.value) == (
        "the openai-chat adapter: the trace_mapper returned an invalid trace: field "
        "'response_metadata.trace.tool_calls[0]' must be an object such as "
        '{"name": "search"}.'
    )


def test_response_without_text_is_an_adapter_error() -> None:
    with openai_stub(lambda path, body: chat_completion(None)) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        with pytest.raises(AdapterError) as info:
            openai_chat(client, model="m")("hi", {})
    assert str(info.value) == (
        "the openai-chat adapter: the chat completion has no text (got NoneType); expected a "
        "response whose output holds a text message."
    )
    with openai_stub(lambda path, body: response(None)) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        with pytest.raises(
            AdapterError, match="the openai-responses adapter: the response has no text"
        ):
            openai_responses(client, model="m")("hi", {})
        client.close()


def test_wrong_client_shape_and_missing_model_are_rejected_before_any_call() -> None:
    with pytest.raises(AdapterError) as info:
        openai_chat(object(), model="m")
    assert str(info.value) == (
        "the openai-chat adapter: object has no chat.completions.create() "
        "method; expected an openai.OpenAI or openai.AsyncOpenAI client."
    )
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="test")
    with pytest.raises(AdapterError, match="a model name is required"):
        openai_responses(client, model="")
    with pytest.raises(AdapterError, match=r"the system template 'Hi \{name\}' cannot be"):
        openai_chat(client, model="m", system="Hi {name}")("x", {"group": "a"})
    client.close()


def test_assignments_can_stay_out_of_the_request_and_metadata_merges() -> None:
    with openai_stub(lambda path, body: chat_completion("Ok.")) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        openai_chat(client, model="m", send_assignments=False)("hi", {"group": "a"})
        openai_chat(
            client, model="m", request_options={"metadata": {"suite": "s1"}, "store": True}
        )("hi", {"group": "a"})
        client.close()
    assert "metadata" not in stub.requests[0][1]
    assert stub.requests[1][1]["metadata"] == {"suite": "s1", "group": "a"}


def test_by_default_metadata_goes_only_where_the_api_accepts_it() -> None:
    """Chat Completions refuses ``metadata`` unless ``store`` is true (the stub answers 400
    as the API does); the Responses API stores by default and accepts it."""
    with openai_stub(
        lambda path, body: (
            chat_completion("Ok.") if path == "/chat/completions" else response("Ok.")
        )
    ) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        assert openai_chat(client, model="m")("hi", {"group": "a"}) == "Ok."
        assert openai_responses(client, model="m")("hi", {"group": "a"}) == "Ok."
        assert openai_responses(client, model="m", store=False)("hi", {"group": "a"}) == "Ok."
        with pytest.raises(openai.BadRequestError, match="only allowed when 'store' is enabled"):
            openai_chat(client, model="m", send_assignments=True)("hi", {"group": "a"})
        client.close()
    sent = [body for _, body in stub.requests]
    assert "metadata" not in sent[0] and "store" not in sent[0]
    assert sent[1]["metadata"] == {"group": "a"}
    assert "metadata" not in sent[2] and sent[2]["store"] is False


def test_tool_loop_returns_a_failing_tool_as_its_output_and_stops_at_max_turns() -> None:
    def broken(order_id: str) -> str:
        raise ValueError(f"no order {order_id}")

    always = chat_completion(None, tool_calls=[("call_9", "track", '{"order_id": "A1"}')])
    with openai_stub(lambda path, body: always) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_chat(
            client,
            model="m",
            tool_functions={"track": broken},
            max_turns=3,
            tools=[{"type": "function", "function": {"name": "track"}}],
        )
        text, spans = call_captured(app, "Where is A1?", {})
        client.close()
    assert text == "" and len(stub.requests) == 3
    sent = stub.requests[1][1]["messages"]
    assert sent[-2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "track", "arguments": '{"order_id": "A1"}'},
            }
        ],
    }
    assert sent[-1] == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": "error: ValueError: no order A1",
    }
    tools = [s for s in spans if s["name"] == "execute_tool track"]
    assert len(tools) == 3  # each of the three model turns ran the tool once
    with pytest.raises(AdapterError, match="tool_functions must map tool names to functions"):
        openai_chat(client, model="m", tool_functions={"track": "not callable"})


@pytest.mark.parametrize("biased", [False, True])
def test_python_api_with_request_options_tools_and_a_trace_mapper_gates(biased: bool) -> None:
    """The app passes tools through request_options and maps a tool the model asks for
    (call_manager) to an escalation with a trace_mapper; every third refund goes to the
    manager whoever asks (a run that never escalates is NO_SIGNAL), and when biased, women
    always do."""
    from spanguard_processor.fairness import GateConfig
    from spanguard_processor.fairness.design.suite import MetricConfig
    from spanguard_processor.fairness.evaluate import evaluate
    from spanguard_processor.fairness.metrics import get_metric

    def answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert [t["name"] for t in body["tools"]] == ["call_manager"]
        case = int(json.dumps(body["input"]).split("Refund ")[1].split("?")[0])
        if case % 3 == 0 or (biased and "woman" in body["instructions"]):
            return response(None, function_calls=[("call_m", "call_manager", "{}")])
        return response("Refunds take 5 days.")

    def mapper(result: Any) -> dict[str, Any] | None:
        asked = any(getattr(i, "name", None) == "call_manager" for i in result.output)
        return {"escalated": True, "escalation_reason": "manager"} if asked else None

    variants = [
        Variant(f"s{i}::{g}", f"s{i}", f"Refund {i}?", {"gender": g})
        for i in range(30)
        for g in ("man", "woman")
    ]  # 30: a fair app can pass
    with openai_stub(answer) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        app = openai_responses(
            client,
            model="m",
            instructions="The customer is a {gender}.",
            request_options={"tools": [{"type": "function", "name": "call_manager"}]},
            trace_mapper=mapper,
        )
        observations, errors = run_app(app, variants)
        client.close()
    assert errors == [] and len(observations) == 60
    metric = get_metric("escalation_parity")
    assert metric is not None
    ev = evaluate(
        observations,
        [MetricConfig("escalation_parity", metric.threshold)],
        GateConfig(bootstrap_samples=300, permutation_samples=199),
    )
    assert ev.passed is not biased
