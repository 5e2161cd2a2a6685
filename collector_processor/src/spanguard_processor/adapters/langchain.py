"""Adapters for LangChain runnables (``invoke``/``ainvoke``) and LangGraph compiled graphs.

The runnable is called through its real API with a callback handler in its config; the
assignments travel in the config's ``metadata`` (so they reach every nested run and LangSmith),
and the handler collects what ran: chat model calls with token usage and the tool calls they
asked for, tools executed, retriever results. When the call returns, the collected runs are
recorded as spanguard spans under the variant's request, in the order they happened.

A tool call counts once: every executed tool is recorded, and so is every tool call a model
asked for that no executed tool of that name answered (a bare chat model with bound tools).

LangChain is an optional peer: this module imports it only inside the handler factory, so the
framework's objects (runnables, callback arguments, results, documents) are typed ``Any`` and
read by attribute.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

import spanguard

from ._base import (
    AdapterError,
    App,
    TraceMapper,
    apply_trace_mapper,
    as_agent,
    join_text_parts,
    record_tool_call,
)

__all__ = ["langchain_runnable", "langgraph_graph"]

LANGCHAIN = "langchain"
LANGGRAPH = "langgraph"
InputBuilder = Callable[[str, Mapping[str, str]], Any]


def _handler_base() -> type:
    try:
        from langchain_core.callbacks import BaseCallbackHandler
    except ImportError:  # pragma: no cover - depends on the environment
        raise AdapterError(
            LANGCHAIN,
            "langchain-core is not installed; install it to use "
            "this adapter (pip install langchain-core).",
        ) from None
    return BaseCallbackHandler


def _model_name(serialized: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None) -> str:
    for source, key in ((metadata, "ls_model_name"), (serialized, "name")):
        value = (source or {}).get(key)
        if isinstance(value, str) and value:
            return value
    kwargs = (serialized or {}).get("kwargs") or {}
    for key in ("model", "model_name"):
        if isinstance(kwargs.get(key), str):
            return str(kwargs[key])
    return "unknown"


def _documents(documents: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for position, doc in enumerate(documents, start=1):
        meta = dict(getattr(doc, "metadata", None) or {})
        ident = getattr(doc, "id", None) or meta.get("id") or f"doc-{position}"
        out.append(
            {
                "id": str(ident),
                "group": meta.get("group"),
                "rank": meta.get("rank", position),
                "score": meta.get("score"),
            }
        )
    return out


def _make_recorder() -> Any:
    return _recorder_class()()


@functools.cache
def _recorder_class() -> type:
    base = _handler_base()

    class Recorder(base):  # type: ignore[misc, valid-type]
        """Collects the runs of one call; thread-safe, runs inline on async paths too."""

        run_inline = True
        raise_error = False

        def __init__(self) -> None:
            super().__init__()
            self.lock = threading.Lock()
            self.events: list[tuple[str, Any]] = []
            self.models: dict[UUID, tuple[str, str | None]] = {}

        def _start(self, serialized: Any, run_id: UUID, kwargs: Mapping[str, Any]) -> None:
            metadata = kwargs.get("metadata") or {}
            provider = metadata.get("ls_provider")
            with self.lock:
                self.models[run_id] = (
                    _model_name(serialized, metadata),
                    provider if isinstance(provider, str) else None,
                )

        def on_chat_model_start(
            self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
        ) -> None:
            self._start(serialized, run_id, kwargs)

        def on_llm_start(
            self, serialized: Any, prompts: Any, *, run_id: UUID, **kwargs: Any
        ) -> None:
            self._start(serialized, run_id, kwargs)

        def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
            usage: tuple[int, int] | None = None
            calls: list[tuple[str, str | None]] = []
            answered_by = _response_model(getattr(response, "llm_output", None))
            for generations in getattr(response, "generations", None) or ():
                for gen in generations:
                    message = getattr(gen, "message", None)
                    meta = getattr(message, "usage_metadata", None) or {}
                    if "input_tokens" in meta and "output_tokens" in meta:
                        usage = (int(meta["input_tokens"]), int(meta["output_tokens"]))
                    answered_by = (
                        _response_model(getattr(message, "response_metadata", None)) or answered_by
                    )
                    for call in getattr(message, "tool_calls", None) or ():
                        if isinstance(call.get("name"), str) and call["name"]:
                            calls.append((call["name"], call.get("id")))
            with self.lock:
                model, provider = self.models.pop(run_id, ("unknown", None))
                self.events.append(("llm", (model, provider, answered_by, usage, calls)))

        def on_tool_start(
            self, serialized: Any, input_str: str, *, run_id: UUID, **kwargs: Any
        ) -> None:
            name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
            call_id = kwargs.get("tool_call_id")
            with self.lock:
                self.events.append(
                    ("tool", (str(name), call_id if isinstance(call_id, str) else None))
                )

        def on_retriever_end(
            self, documents: Sequence[Any], *, run_id: UUID, **kwargs: Any
        ) -> None:
            with self.lock:
                self.events.append(("documents", _documents(documents)))

    return Recorder


def _response_model(metadata: Any) -> str | None:
    """The model that answered, from a message's ``response_metadata`` or ``llm_output``."""
    if not isinstance(metadata, Mapping):
        return None
    for key in ("model_name", "model"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _replay(events: Sequence[tuple[str, Any]]) -> None:
    tools = [data for kind, data in events if kind == "tool"]
    executed_ids = {call_id for _, call_id in tools if call_id}
    executed_names = Counter(name for name, call_id in tools if not call_id)
    for kind, data in events:
        if kind == "llm":
            model, provider, answered_by, usage, _ = data
            with spanguard.llm_call(model, provider=provider or "langchain") as call:
                if usage is not None:
                    call.record_usage(*usage)
                if answered_by:
                    call.set_response_model(answered_by)
        elif kind == "tool":
            record_tool_call(*data)
        else:
            spanguard.record_documents(data, source="langchain_retriever")
    for kind, data in events:
        if kind != "llm":
            continue
        for name, call_id in data[4]:  # asked for: recorded unless a tool answered it
            if call_id and call_id in executed_ids:
                continue
            if executed_names[name] > 0:
                executed_names[name] -= 1
            else:
                record_tool_call(name, call_id)


def message_text(adapter: str, result: Any, output_key: str | None) -> str:
    """The text of a runnable's or graph's result: a string, a message, or a state dict."""
    value = result
    if output_key is not None:
        if not isinstance(result, Mapping) or output_key not in result:
            raise AdapterError(
                adapter,
                f"the result has no '{output_key}' key (got "
                f"{type(result).__name__}); expected a dict holding it.",
            )
        value = result[output_key]
    elif isinstance(result, Mapping) and "messages" in result:
        messages = result["messages"]
        value = messages[-1] if isinstance(messages, Sequence) and messages else None
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list) and (text := join_text_parts(content)) is not None:
        return text
    raise AdapterError(
        adapter,
        f"the result has no text (got {type(value).__name__}); expected "
        "a string, a message with text content, or a state dict whose "
        "last 'messages' entry has text (or set output_key).",
    )


def _runnable(
    adapter: str,
    runnable: Any,
    build: InputBuilder,
    output_key: str | None,
    use_async: bool,
    config: Mapping[str, Any] | None,
    trace_mapper: TraceMapper | None,
) -> App:
    base_config = dict(config or {})
    name = _name_of(runnable, adapter)

    def prepare(prompt: str, assignments: Mapping[str, str]) -> tuple[Any, Any, dict[str, Any]]:
        recorder = _make_recorder()
        callbacks = [*list(base_config.get("callbacks") or []), recorder]
        run_config = {
            **base_config,
            "callbacks": callbacks,
            "metadata": {**dict(base_config.get("metadata") or {}), **assignments},
        }
        return build(prompt, assignments), recorder, run_config

    def finish(result: Any, recorder: Any) -> str:
        _replay(list(recorder.events))
        text = message_text(adapter, result, output_key)
        apply_trace_mapper(adapter, trace_mapper, result)
        return text

    if use_async:

        async def app_async(prompt: str, assignments: Mapping[str, str]) -> str:
            value, recorder, run_config = prepare(prompt, assignments)
            return finish(await runnable.ainvoke(value, config=run_config), recorder)

        return as_agent(app_async, name)

    def app(prompt: str, assignments: Mapping[str, str]) -> str:
        value, recorder, run_config = prepare(prompt, assignments)
        return finish(runnable.invoke(value, config=run_config), recorder)

    return as_agent(app, name)


def _name_of(runnable: Any, adapter: str) -> str:
    try:
        name = runnable.get_name()
    except Exception:  # a runnable whose name cannot be computed still runs
        name = None
    return name if isinstance(name, str) and name else adapter


def _default_builder(input_key: str | None, messages: bool) -> InputBuilder:
    def build(prompt: str, assignments: Mapping[str, str]) -> Any:
        if input_key is not None:
            return {**assignments, input_key: prompt}
        if messages:
            return {"messages": [("user", prompt)]}
        return prompt

    return build


def langchain_runnable(
    runnable: Any,
    *,
    input_key: str | None = None,
    input_builder: InputBuilder | None = None,
    output_key: str | None = None,
    use_async: bool = False,
    config: Mapping[str, Any] | None = None,
    trace_mapper: TraceMapper | None = None,
) -> App:
    """An app calling a LangChain ``Runnable`` (a chat model, a chain, an agent executor).

    The input is the prompt string, or ``{input_key: prompt, **assignments}`` for a prompt
    template, or whatever ``input_builder(prompt, assignments)`` returns. The text is read from
    a string or message result, or from ``result[output_key]``.
    """
    base = _runnable_class()
    if not isinstance(runnable, base):
        raise AdapterError(
            LANGCHAIN,
            f"{type(runnable).__name__} is not a LangChain Runnable; "
            "expected an object with invoke() and ainvoke(), such as "
            "a chat model or a chain built with '|'.",
        )
    build = input_builder or _default_builder(input_key, messages=False)
    return _runnable(LANGCHAIN, runnable, build, output_key, use_async, config, trace_mapper)


def langgraph_graph(
    graph: Any,
    *,
    input_key: str | None = None,
    input_builder: InputBuilder | None = None,
    output_key: str | None = None,
    use_async: bool = False,
    config: Mapping[str, Any] | None = None,
    trace_mapper: TraceMapper | None = None,
) -> App:
    """An app calling a compiled LangGraph graph (``StateGraph(...).compile()``).

    The input is ``{"messages": [("user", prompt)]}`` (a messages state), or
    ``{input_key: prompt, **assignments}``, or ``input_builder(prompt, assignments)``; the text
    is the last message's, or ``result[output_key]``.
    """
    try:
        from langgraph.pregel import Pregel
    except ImportError:  # pragma: no cover - depends on the environment
        raise AdapterError(
            LANGGRAPH,
            "langgraph is not installed; install it to use this adapter (pip install langgraph).",
        ) from None
    if not isinstance(graph, Pregel):
        hint = " (call .compile() on the StateGraph first)" if hasattr(graph, "compile") else ""
        raise AdapterError(
            LANGGRAPH,
            f"{type(graph).__name__} is not a compiled LangGraph "
            f"graph{hint}; expected the result of "
            "StateGraph(...).compile().",
        )
    build = input_builder or _default_builder(input_key, messages=True)
    return _runnable(LANGGRAPH, graph, build, output_key, use_async, config, trace_mapper)


def _runnable_class() -> type:
    try:
        from langchain_core.runnables import Runnable
    except ImportError:  # pragma: no cover - depends on the environment
        raise AdapterError(
            LANGCHAIN,
            "langchain-core is not installed; install it to use "
            "this adapter (pip install langchain-core).",
        ) from None
    return Runnable
