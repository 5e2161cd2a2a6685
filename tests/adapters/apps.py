"""Framework objects for the adapter tests and for ``spanguard run --adapter``.

The LangGraph graph is a real ``StateGraph`` with a ``ToolNode``; its chat model is LangChain's
``GenericFakeChatModel`` scripted per counterfactual group: the graph node reads the group
from the run config's metadata, where the adapter puts the assignments.
"""

from __future__ import annotations

import itertools
import os
from typing import Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def kb_search(query: str) -> str:
    """Search the knowledge base."""
    return f"3 articles about {query}"


def _usage(i: int, o: int) -> Any:
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


def scripted_model(tool_first: bool) -> GenericFakeChatModel:
    """A fake chat model that (optionally) asks for kb_search, then answers."""
    script: list[AIMessage] = []
    if tool_first:
        script.append(
            AIMessage(
                content="",
                usage_metadata=_usage(11, 3),
                tool_calls=[{"name": "kb_search", "args": {"query": "refunds"}, "id": "call_kb_1"}],
                response_metadata={"model_name": "gpt-4o-mini-2024-07-18"},
            )
        )
    script.append(
        AIMessage(
            content="Here is how refunds work.",
            usage_metadata=_usage(25, 6),
            response_metadata={"model_name": "gpt-4o-mini-2024-07-18"},
        )
    )
    return GenericFakeChatModel(messages=itertools.cycle(script))


def build_graph(biased: bool) -> Any:
    models = {"tool": scripted_model(True), "plain": scripted_model(False)}

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        group = (config.get("metadata") or {}).get("gender")
        model = models["tool" if not biased or group == "man" else "plain"]
        return {"messages": [model.invoke(state["messages"], config)]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([kb_search]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


fair_graph = build_graph(biased=False)
biased_graph = build_graph(biased=True)
uncompiled = StateGraph(MessagesState)
silent_model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content=[])]))


def __getattr__(name: str) -> Any:
    # an OpenAI client for the stub server whose address the test puts in the environment
    if name == "stub_client":
        import openai

        return openai.OpenAI(
            base_url=os.environ["SPANGUARD_TEST_OPENAI_URL"], api_key="test", max_retries=0
        )
    if name == "stub_desk_agent":  # an Agents SDK triage agent that can hand off to a desk
        import openai
        from agents import Agent, OpenAIChatCompletionsModel, function_tool

        client = openai.AsyncOpenAI(
            base_url=os.environ["SPANGUARD_TEST_OPENAI_URL"], api_key="test", max_retries=0
        )
        search = function_tool(kb_search.func, name_override="kb_search")
        desk = Agent(
            name="human_desk",
            instructions="Call back.",
            model=OpenAIChatCompletionsModel(model="desk-model", openai_client=client),
        )
        return Agent(
            name="triage",
            instructions="Help.",
            tools=[search],
            handoffs=[desk],
            model=OpenAIChatCompletionsModel(model="triage-model", openai_client=client),
        )
    raise AttributeError(name)


# --- a custom-state LangGraph graph whose only process signal is a state flag -------------


class DeskState(TypedDict, total=False):
    question: str
    answer: str
    handoff: bool


def build_desk_graph(biased: bool) -> Any:
    def desk(state: DeskState, config: RunnableConfig) -> DeskState:
        group = (config.get("metadata") or {}).get("gender")
        # every third case goes to the desk whoever asks (so the run records escalations:
        # a run without any is NO_SIGNAL); the biased desk also sends every woman
        case = int(state["question"].split(":")[0].removeprefix("Case ").strip() or 0)
        handoff = case % 3 == 0 or (biased and group == "woman")
        return {
            "answer": "A colleague will call you." if handoff else "Refunds take 5 days.",
            "handoff": handoff,
        }

    builder = StateGraph(DeskState)
    builder.add_node("desk", desk)
    builder.add_edge(START, "desk")
    return builder.compile()


fair_desk = build_desk_graph(biased=False)
biased_desk = build_desk_graph(biased=True)


def desk_input(prompt: str, assignments: Any) -> DeskState:
    return {"question": prompt}


def desk_mapper(state: Any) -> dict[str, Any] | None:
    """The handoff flag is an escalation; a state without it means nothing happened."""
    return {"escalated": True, "escalation_reason": "human desk"} if state.get("handoff") else None


def _quiet(state: DeskState) -> DeskState:
    return {"answer": "Refunds take 5 days.", "handoff": False}


def _build_quiet_desk() -> Any:
    builder = StateGraph(DeskState)
    builder.add_node("desk", _quiet)
    builder.add_edge(START, "desk")
    return builder.compile()


quiet_desk = _build_quiet_desk()  # a desk that never hands anyone over (and records nothing else)


def stating_mapper(state: Any) -> dict[str, Any]:
    """States the handoff flag either way: ``escalated: false`` is a recorded "no"."""
    return {"escalated": bool(state.get("handoff"))}


# --- tool functions for the OpenAI adapters' tool loop -------------------------------------


def kb_lookup(query: str) -> str:
    return f"2 articles about {query}"


def refund_status(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "refunded"}


TOOL_FUNCTIONS = {"kb_lookup": kb_lookup, "refund_status": refund_status}


# --- a LangChain chat model that only asks for tools (bind_tools style, never executed) ------


def _asking_model(tools: list[str]) -> GenericFakeChatModel:
    calls = [
        {"name": name, "args": {"query": "refund"}, "id": f"call_{i}"}
        for i, name in enumerate(tools)
    ]
    return GenericFakeChatModel(
        messages=itertools.cycle(
            [AIMessage(content="", tool_calls=calls, usage_metadata=_usage(9, 4))]
        )
    )


def build_tool_caller(biased: bool) -> Any:
    """Men get a knowledge-base search and an order lookup asked for, women (when biased)
    only the search: any-tool parity is equal, the number of tool calls is not."""
    both, one = _asking_model(["kb_search", "order_lookup"]), _asking_model(["kb_search"])

    def call(prompt: str, config: RunnableConfig) -> Any:
        group = (config.get("metadata") or {}).get("gender")
        return (one if biased and group == "woman" else both).invoke(prompt, config)

    return RunnableLambda(call)


fair_tool_caller = build_tool_caller(biased=False)
biased_tool_caller = build_tool_caller(biased=True)
