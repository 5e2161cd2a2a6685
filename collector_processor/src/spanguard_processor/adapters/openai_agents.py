"""Adapter for the OpenAI Agents SDK: ``Runner.run_sync`` / ``Runner.run`` on an ``Agent``.

The assignments reach the run as the model requests' ``metadata`` (through the run config's
model settings), as its ``trace_metadata``, and as the run context the agent's tools receive
(or whatever ``context_builder`` makes of them). After the run, each agent's stretch of it is
recorded as an ``invoke_agent {agent}`` span holding its model responses (``chat {model}``
spans with that agent's model and token usage) and tool calls (``execute_tool``), in run
order; a handoff shows as the next agent's span, and ``escalate_on`` turns a handoff (or a
tool) into an escalation. The Agents SDK's own tracing (which
exports to OpenAI's platform) is disabled for these runs unless ``run_config`` says otherwise.

The Agents SDK is an optional peer imported only when a run starts, so its objects (the agent,
run config, run result and its items) are typed ``Any`` and read by attribute.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import spanguard

from ._base import (
    AdapterError,
    App,
    TraceMapper,
    agent_span,
    apply_trace_mapper,
    record_tool_call,
    require_text,
)

__all__ = ["openai_agent"]

AGENTS = "openai-agents"
ContextBuilder = Callable[[str, Mapping[str, str]], Any]


def _model_name(agent: Any, run_config: Any = None) -> str:
    override = getattr(run_config, "model", None)
    for model in (override, getattr(agent, "model", None)):
        if isinstance(model, str) and model:
            return model
        name = getattr(model, "model", None)
        if isinstance(name, str) and name:
            return name
    return "agents-default"


_OUTPUTS = ("tool_call_output_item", "handoff_output_item")


def _segments(result: Any, first: Any) -> list[tuple[Any, list[tuple[Any, list[Any]]]]]:
    """The run as consecutive (agent, [(model response, its items)]) segments, in run order.

    Each model response produced the items that follow it (tool calls, handoff calls,
    messages); tool outputs and handoff outputs are the runner's and go with the response
    before them. Items are matched to responses by identity, else in order."""
    responses = list(getattr(result, "raw_responses", None) or ())
    items = list(getattr(result, "new_items", None) or ())
    owned: list[list[Any]] = [[] for _ in responses]
    index, used = 0, 0
    for item in items:
        if getattr(item, "type", None) not in _OUTPUTS and responses:
            raw = getattr(item, "raw_item", None)
            hit = next(
                (
                    k
                    for k in range(index, len(responses))
                    if any(o is raw for o in getattr(responses[k], "output", None) or ())
                ),
                None,
            )
            if hit is None and used >= len(getattr(responses[index], "output", None) or ()):
                hit = min(index + 1, len(responses) - 1)
            if hit is not None and hit != index:
                index, used = hit, 0
            used += 1
        if owned:
            owned[index].append(item)
    segments: list[tuple[Any, list[tuple[Any, list[Any]]]]] = []
    agent = first
    for response, its in zip(responses, owned, strict=True):
        producing = next(
            (getattr(i, "agent", None) for i in its if getattr(i, "type", None) not in _OUTPUTS),
            None,
        )
        agent = producing or agent
        if not segments or segments[-1][0] is not agent:
            segments.append((agent, []))
        segments[-1][1].append((response, its))
    return segments


def _call_name(item: Any) -> str:
    raw = getattr(item, "raw_item", None)
    name = getattr(raw, "name", None)
    if name is None and isinstance(raw, Mapping):
        name = raw.get("name")
    kind = getattr(raw, "type", None)
    if not isinstance(name, str) or not name:
        name = str(kind).removesuffix("_call") if kind else "tool"
    return name


def _call_id(item: Any) -> str | None:
    raw = getattr(item, "raw_item", None)
    call_id = getattr(raw, "call_id", None)
    if call_id is None and isinstance(raw, Mapping):
        call_id = raw.get("call_id")
    return call_id if isinstance(call_id, str) else None


def _record(result: Any, first: Any, run_config: Any, escalate_on: tuple[str, str] | None) -> None:
    """One ``invoke_agent {agent}`` span per stretch of the run an agent had, holding its
    ``chat {model}`` spans (that agent's model, with usage) and tool spans in run order; a
    handoff is the next agent's span (and an escalation when ``escalate_on`` names it)."""
    segments = _segments(result, first) or [(first, [])]  # a run with no model response
    for agent, turns in segments:
        name = getattr(agent, "name", None) or "agent"
        model = _model_name(agent, run_config)
        with agent_span(name, model=model):
            for response, items in turns:
                usage = getattr(response, "usage", None)
                with spanguard.llm_call(model, provider="openai") as call:
                    tokens = (
                        getattr(usage, "input_tokens", None),
                        getattr(usage, "output_tokens", None),
                    )
                    if all(isinstance(t, int) for t in tokens):
                        call.record_usage(tokens[0], tokens[1])  # type: ignore[arg-type]
                for item in items:
                    kind = getattr(item, "type", None)
                    if kind == "tool_call_item":
                        tool = _call_name(item)
                        record_tool_call(tool, _call_id(item))
                        if escalate_on == ("tool", tool):
                            spanguard.escalate(f"tool {tool}")
                    elif kind == "handoff_output_item":
                        target = getattr(getattr(item, "target_agent", None), "name", None)
                        if escalate_on == ("handoff", target):
                            spanguard.escalate(f"handoff to {target}")


def _uses_chat_completions(start: Any) -> bool:
    """Whether an agent reachable from ``start`` (through handoffs) has a Chat Completions
    model."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        agent = todo.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if type(getattr(agent, "model", None)).__name__ == "OpenAIChatCompletionsModel":
            return True
        todo.extend(h for h in getattr(agent, "handoffs", None) or () if hasattr(h, "handoffs"))
    return False


def _escalate_on(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    kind, sep, name = value.partition(":")
    if not sep:
        kind, name = "tool", value
    if kind not in ("handoff", "tool") or not name:
        raise AdapterError(
            AGENTS,
            f"escalate_on {value!r} must be handoff:AGENT_NAME or "
            "tool:TOOL_NAME (e.g. handoff:human_desk).",
        )
    return kind, name


def openai_agent(
    agent: Any,
    *,
    run_config: Any = None,
    max_turns: int = 10,
    context_builder: ContextBuilder | None = None,
    use_async: bool = True,
    escalate_on: str | None = None,
    send_assignments: bool | None = None,
    trace_mapper: TraceMapper | None = None,
) -> App:
    """An app running an Agents SDK ``Agent`` once per variant through ``Runner``.

    The text is the run's ``final_output``, which must be a string. The app is a coroutine
    function by default (``Runner.run``), so all variants share one event loop and one
    ``AsyncOpenAI`` client; ``use_async=False`` uses ``Runner.run_sync`` instead, which starts
    a new event loop per call (give each call a fresh client then).
    """
    try:
        from agents import Agent, ModelSettings, RunConfig, Runner
    except ImportError:  # pragma: no cover - depends on the environment
        raise AdapterError(
            AGENTS,
            "openai-agents is not installed; install it to use this "
            "adapter (pip install openai-agents).",
        ) from None
    if not isinstance(agent, Agent):
        raise AdapterError(
            AGENTS,
            f"{type(agent).__name__} is not an agents.Agent; expected "
            "Agent(name=..., instructions=..., model=...).",
        )
    if run_config is not None and not isinstance(run_config, RunConfig):
        raise AdapterError(
            AGENTS, f"run_config is a {type(run_config).__name__}; expected an agents.RunConfig."
        )
    escalation = _escalate_on(escalate_on)
    base = run_config or RunConfig(tracing_disabled=True)
    settings = base.model_settings or ModelSettings()
    send = (
        send_assignments
        if send_assignments is not None
        else (settings.store is True or not _uses_chat_completions(agent))
    )

    def config(assignments: Mapping[str, str]) -> Any:
        metadata = {**dict(settings.metadata or {}), **(assignments if send else {})}
        return dataclasses.replace(
            base,
            trace_metadata={**dict(base.trace_metadata or {}), **assignments},
            model_settings=dataclasses.replace(settings, metadata=metadata or None),
        )

    def finish(result: Any) -> str:
        _record(result, agent, run_config, escalation)
        apply_trace_mapper(AGENTS, trace_mapper, result)
        return require_text(AGENTS, getattr(result, "final_output", None), "run's final output")

    def context(prompt: str, assignments: Mapping[str, str]) -> Any:
        return context_builder(prompt, assignments) if context_builder else dict(assignments)

    if use_async:

        async def app_async(prompt: str, assignments: Mapping[str, str]) -> str:
            result = await Runner.run(
                agent,
                prompt,
                context=context(prompt, assignments),
                max_turns=max_turns,
                run_config=config(assignments),
            )
            return finish(result)

        return app_async

    def app(prompt: str, assignments: Mapping[str, str]) -> str:
        result = Runner.run_sync(
            agent,
            prompt,
            context=context(prompt, assignments),
            max_turns=max_turns,
            run_config=config(assignments),
        )
        return finish(result)

    return app
