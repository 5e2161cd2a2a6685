"""LangChain runnables and LangGraph graphs through their real APIs, with fake chat models."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda

from spanguard import semconv
from spanguard_processor.adapters import AdapterError, langchain_runnable, langgraph_graph
from spanguard_processor.fairness.design.suite import Variant
from spanguard_processor.fairness.run.runner import run_app

from . import apps
from .conftest import call_captured

VARIANTS = [
    Variant("s::1", "s", "How do refunds work?", {"gender": "man"}),
    Variant("s::2", "s", "How do refunds work?", {"gender": "woman"}),
]


def test_graph_records_each_executed_tool_once_with_model_usage() -> None:
    app = langgraph_graph(apps.fair_graph)
    text, spans = call_captured(app, "How do refunds work?", {"gender": "woman"})
    assert text == "Here is how refunds work."
    names = [s["name"] for s in spans]
    assert names.count("execute_tool kb_search") == 1
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert [
        (
            c["attributes"][semconv.GEN_AI_USAGE_INPUT_TOKENS],
            c["attributes"][semconv.GEN_AI_USAGE_OUTPUT_TOKENS],
        )
        for c in chats
    ] == [(11, 3), (25, 6)]
    # the provider LangChain itself reports (ls_provider), the model that answered
    assert chats[0]["attributes"][semconv.GEN_AI_PROVIDER_NAME] == "genericfakechatmodel"
    assert chats[0]["attributes"][semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"
    # the executed tool carries the id of the model's tool call, not a span id
    tool = next(s for s in spans if s["name"] == "execute_tool kb_search")
    assert tool["attributes"][semconv.GEN_AI_TOOL_CALL_ID] == "call_kb_1"
    agent = next(s for s in spans if s["name"] == "invoke_agent LangGraph")
    assert tool["parent_span_id"] == agent["span_id"]


def test_assignments_reach_the_graph_and_bias_shows_in_the_traces() -> None:
    observations, errors = run_app(langgraph_graph(apps.biased_graph), VARIANTS)
    assert errors == []
    tools = {o.assignments["gender"]: [t.name for t in o.trace.tool_calls] for o in observations}
    assert tools == {"man": ["kb_search"], "woman": []}
    assert {o.response for o in observations} == {"Here is how refunds work."}


def test_async_graph_uses_ainvoke() -> None:
    app = langgraph_graph(apps.build_graph(biased=False), use_async=True)
    observations, errors = run_app(app, VARIANTS)  # the scripted model is shared: one at a time
    assert errors == []
    assert [len(o.trace.tool_calls) for o in observations] == [1, 1]


def test_bare_chat_model_records_the_tool_calls_it_asks_for() -> None:
    text, spans = call_captured(langchain_runnable(apps.scripted_model(True)), "hi", {})
    assert text == ""  # the first scripted answer is only a tool call
    tool = next(s for s in spans if s["name"] == "execute_tool kb_search")
    assert tool["attributes"][semconv.GEN_AI_TOOL_CALL_ID] == "call_kb_1"


class _GroupRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [
            Document(page_content="a", id="d1", metadata={"group": "official"}),
            Document(page_content="b", id="d2", metadata={"group": "forum", "score": 0.4}),
        ]


def test_chain_with_prompt_input_and_retriever_records_documents() -> None:
    model = FakeListChatModel(responses=["Answer for {group}"])
    chain = (
        RunnableLambda(lambda x: x["question"])
        | _GroupRetriever()
        | RunnableLambda(lambda docs: f"{len(docs)} docs")
        | model
    )
    app = langchain_runnable(chain, input_key="question")
    text, _ = call_captured(app, "Where?", {"group": "a"})
    assert text == "Answer for {group}"
    observations, _ = run_app(app, [Variant("s::1", "s", "Where?", {"group": "a"})])
    docs = observations[0].trace.retrieved_documents
    assert [(d.id, d.group, d.rank) for d in docs] == [("d1", "official", 1), ("d2", "forum", 2)]


def test_output_key_and_custom_input_builder() -> None:
    chain = RunnableLambda(lambda x: {"answer": f"{x['q']} / {x['tone']}"})
    app = langchain_runnable(
        chain, input_builder=lambda p, a: {"q": p, "tone": a["tone"]}, output_key="answer"
    )
    assert call_captured(app, "hi", {"tone": "formal"})[0] == "hi / formal"
    with pytest.raises(AdapterError, match="the result has no 'answer' key"):
        call_captured(
            langchain_runnable(RunnableLambda(lambda x: {"a": 1}), output_key="answer"), "hi", {}
        )


def test_result_without_text_is_an_adapter_error() -> None:
    with pytest.raises(AdapterError) as info:
        call_captured(langchain_runnable(apps.silent_model), "hi", {})
    assert str(info.value) == (
        "the langchain adapter: the result has no text (got AIMessage); expected a string, a "
        "message with text content, or a state dict whose last 'messages' entry has text (or "
        "set output_key)."
    )


def test_wrong_framework_objects_are_rejected() -> None:
    with pytest.raises(AdapterError) as info:
        langgraph_graph(apps.uncompiled)
    assert str(info.value) == (
        "the langgraph adapter: StateGraph is not a compiled LangGraph graph (call .compile() "
        "on the StateGraph first); expected the result of StateGraph(...).compile()."
    )
    with pytest.raises(
        AdapterError,
        match="the langchain adapter: function is not a LangChain "
        "Runnable; expected an object with invoke",
    ):
        langchain_runnable(lambda x: x)
    with pytest.raises(AdapterError, match="the langgraph adapter: FakeListChatModel is not"):
        langgraph_graph(FakeListChatModel(responses=["x"]))
