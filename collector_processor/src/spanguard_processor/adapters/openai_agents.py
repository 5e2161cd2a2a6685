"""Adapter for the OpenAI Agents SDK: ``Runner.run_sync`` / ``Runner.run`` on an ``Agent``.

The assignments reach the run as the model requests' ``metadata`` (through the run config's
model settings), as its ``trace_metadata``, and as the run context the agent's tools receive
(or whatever ``context_builder`` makes of them). After the run, every model response is recorded as
a ``chat {model}`` span with its token usage, and every tool call and handoff the agents made
as an ``execute_tool`` span, in the order of the run's items. The Agents SDK's own tracing (which
exports to OpenAI's platform) is disabled for these runs unless ``run_config`` says otherwise.
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
    apply_trace_mapper,
    record_tool_call,
    require_text,
)

__all__ = ["openai_agent"]

AGENTS = "openai-agents"
ContextBuilder = Callable[[str, Mapping[str, str]], Any]


def _model_name(agent: Any) -> str:
    model = getattr(agent, "model", None)
    if isinstance(model, str) and model:
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else "agents-default"


def _record(result: Any, model: str) -> None:
    for response in getattr(result, "raw_responses", None) or ():
        usage = getattr(response, "usage", None)
        with spanguard.llm_call(model, provider="openai") as call:
            tokens = (getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))
            if all(isinstance(t, int) for t in tokens):
                call.record_usage(tokens[0], tokens[1])  # type: ignore[arg-type]
    for item in getattr(result, "new_items", None) or ():
        if getattr(item, "type", None) not in ("tool_call_item", "handoff_call_item"):
            continue
        raw = getattr(item, "raw_item", None)
        name = getattr(raw, "name", None)
        if name is None and isinstance(raw, Mapping):
            name = raw.get("name")
        kind = getattr(raw, "type", None)
        if not isinstance(name, str) or not name:
            name = str(kind).removesuffix("_call") if kind else "tool"
        record_tool_call(name, getattr(raw, "call_id", None))


def openai_agent(agent: Any, *, run_config: Any = None, max_turns: int = 10,
                 context_builder: ContextBuilder | None = None, use_async: bool = True,
                 trace_mapper: TraceMapper | None = None) -> App:
    """An app running an Agents SDK ``Agent`` once per variant through ``Runner``.

    The text is the run's ``final_output``, which must be a string. The app is a coroutine
    function by default (``Runner.run``), so all variants share one event loop and one
    ``AsyncOpenAI`` client; ``use_async=False`` uses ``Runner.run_sync`` instead, which starts
    a new event loop per call (give each call a fresh client then).
    """
    try:
        from agents import Agent, ModelSettings, RunConfig, Runner
    except ImportError:  # pragma: no cover - depends on the environment
        raise AdapterError(AGENTS, "openai-agents is not installed; install it to use this "
                                   "adapter (pip install openai-agents).") from None
    if not isinstance(agent, Agent):
        raise AdapterError(AGENTS, f"{type(agent).__name__} is not an agents.Agent; expected "
                                   "Agent(name=..., instructions=..., model=...).")
    if run_config is not None and not isinstance(run_config, RunConfig):
        raise AdapterError(AGENTS, f"run_config is a {type(run_config).__name__}; expected an "
                                   "agents.RunConfig.")
    model = _model_name(agent)

    def config(assignments: Mapping[str, str]) -> Any:
        base = run_config or RunConfig(tracing_disabled=True)
        settings = base.model_settings or ModelSettings()
        return dataclasses.replace(
            base, trace_metadata={**dict(base.trace_metadata or {}), **assignments},
            model_settings=dataclasses.replace(
                settings, metadata={**dict(settings.metadata or {}), **assignments}))

    def finish(result: Any) -> str:
        _record(result, model)
        apply_trace_mapper(AGENTS, trace_mapper, result)
        return require_text(AGENTS, getattr(result, "final_output", None), "run's final output")

    def context(prompt: str, assignments: Mapping[str, str]) -> Any:
        return context_builder(prompt, assignments) if context_builder else dict(assignments)

    if use_async:
        async def app_async(prompt: str, assignments: Mapping[str, str]) -> str:
            result = await Runner.run(agent, prompt, context=context(prompt, assignments),
                                      max_turns=max_turns, run_config=config(assignments))
            return finish(result)

        return app_async

    def app(prompt: str, assignments: Mapping[str, str]) -> str:
        result = Runner.run_sync(agent, prompt, context=context(prompt, assignments),
                                 max_turns=max_turns, run_config=config(assignments))
        return finish(result)

    return app
