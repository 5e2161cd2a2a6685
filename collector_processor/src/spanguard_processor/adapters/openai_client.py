"""Adapters for an OpenAI-compatible client: Chat Completions and Responses.

The client is an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (or any object with the same
``chat.completions.create`` / ``responses.create`` methods, e.g. a client pointed at a local
OpenAI-compatible server through ``base_url``). Each variant's assignments reach the request as
its ``metadata`` (and, optionally, through a system prompt or instructions template formatted
with them). The response's token usage, finish reason, refusal and tool calls are recorded on a
``chat {model}`` span and its ``execute_tool`` siblings: responses are read by
:mod:`.openai_answers`, the conversation (and its tool loop) is :mod:`.openai_loop`; this module
checks the options and builds each variant's first request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._base import AdapterError, App, TraceMapper
from .openai_answers import CHAT, RESPONSES, ModelAnswer, parse_chat_completion, parse_response
from .openai_loop import Request, ToolFunctions, tool_loop_app

__all__ = [
    "ModelAnswer",
    "openai_chat",
    "openai_responses",
    "parse_chat_completion",
    "parse_response",
]


def _format(
    adapter: str, template: str | None, assignments: Mapping[str, str], name: str
) -> str | None:
    if template is None:
        return None
    try:
        return template.format(**assignments)
    except (KeyError, IndexError, ValueError) as exc:
        raise AdapterError(
            adapter,
            f"the {name} template {template!r} cannot be formatted "
            f"with the assignments {dict(assignments)}: {exc!r}.",
        ) from None


def _check_method(adapter: str, client: object, path: str) -> Callable[..., Any]:
    """The client's ``path`` method (its responses are third-party objects, hence ``Any``)."""
    target: object = client
    for part in path.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    if not callable(target):
        raise AdapterError(
            adapter,
            f"{type(client).__name__} has no {path}() method; expected "
            "an openai.OpenAI or openai.AsyncOpenAI client.",
        )
    return target


def _check_model(adapter: str, model: object) -> str:
    if not isinstance(model, str) or not model:
        raise AdapterError(
            adapter,
            "a model name is required: give the adapter the `model` option (e.g. gpt-4o-mini).",
        )
    return model


def _request_options(
    adapter: str,
    request_options: Mapping[str, Any] | None,
    tools: Sequence[Mapping[str, Any]] | None,
    store: bool | None,
) -> Request:
    extra = dict(request_options or {})
    if tools is not None:
        if (
            not isinstance(tools, Sequence)
            or isinstance(tools, str)
            or not all(isinstance(t, Mapping) for t in tools)
        ):
            raise AdapterError(
                adapter,
                "tools must be a list of tool definitions (objects), "
                'e.g. [{"type": "function", "function": {...}}].',
            )
        extra["tools"] = [dict(t) for t in tools]
    if store is not None:
        extra["store"] = store
    return extra


def _sends_metadata(adapter: str, send_assignments: bool | None, extra: Mapping[str, Any]) -> bool:
    """Whether the assignments go out as ``metadata``. By default only where the API accepts
    it: Chat Completions refuses ``metadata`` unless ``store`` is true; the Responses API
    stores by default, so it sends them unless ``store`` is false."""
    if send_assignments is not None:
        return send_assignments
    store = extra.get("store")
    return store is True if adapter == CHAT else store is not False


def _check_functions(adapter: str, tool_functions: object) -> ToolFunctions | None:
    if tool_functions is None:
        return None
    if not isinstance(tool_functions, Mapping) or not all(
        isinstance(k, str) and callable(v) for k, v in tool_functions.items()
    ):
        raise AdapterError(
            adapter,
            'tool_functions must map tool names to functions, e.g. {"track_parcel": track_parcel}.',
        )
    return tool_functions


def openai_chat(
    client: object,
    *,
    model: str | None = None,
    system: str | None = None,
    send_assignments: bool | None = None,
    request_options: Mapping[str, Any] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    store: bool | None = None,
    tool_functions: ToolFunctions | None = None,
    max_turns: int = 10,
    trace_mapper: TraceMapper | None = None,
) -> App:
    """An app calling ``client.chat.completions.create`` once per variant (or, with
    ``tool_functions``, until the model answers without asking for a tool).

    ``system`` is a system-message template formatted with the assignments; ``tools`` are
    the request's tool definitions; ``request_options`` are passed through (``temperature``,
    ``store`` …). The assignments are sent as the request's ``metadata`` when
    ``send_assignments`` is true, and by default only when ``store`` is true (the API refuses
    ``metadata`` otherwise).
    """
    create = _check_method(CHAT, client, "chat.completions.create")
    model_name = _check_model(CHAT, model)
    extra = _request_options(CHAT, request_options, tools, store)
    send = _sends_metadata(CHAT, send_assignments, extra)
    functions = _check_functions(CHAT, tool_functions)

    def build(prompt: str, assignments: Mapping[str, str]) -> Request:
        messages: list[dict[str, str]] = []
        system_text = _format(CHAT, system, assignments, "system")
        if system_text is not None:
            messages.append({"role": "system", "content": system_text})
        messages.append({"role": "user", "content": prompt})
        kwargs: Request = {"model": model_name, "messages": messages, **extra}
        if send and assignments:
            kwargs["metadata"] = {**dict(extra.get("metadata") or {}), **assignments}
        return kwargs

    return tool_loop_app(
        CHAT, create, model_name, build, parse_chat_completion, trace_mapper, functions, max_turns
    )


def openai_responses(
    client: object,
    *,
    model: str | None = None,
    instructions: str | None = None,
    send_assignments: bool | None = None,
    request_options: Mapping[str, Any] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    store: bool | None = None,
    tool_functions: ToolFunctions | None = None,
    max_turns: int = 10,
    trace_mapper: TraceMapper | None = None,
) -> App:
    """An app calling ``client.responses.create`` once per variant (see :func:`openai_chat`;
    here the assignments are sent as ``metadata`` unless ``store`` is false)."""
    create = _check_method(RESPONSES, client, "responses.create")
    model_name = _check_model(RESPONSES, model)
    extra = _request_options(RESPONSES, request_options, tools, store)
    send = _sends_metadata(RESPONSES, send_assignments, extra)
    functions = _check_functions(RESPONSES, tool_functions)

    def build(prompt: str, assignments: Mapping[str, str]) -> Request:
        kwargs: Request = {"model": model_name, "input": prompt, **extra}
        text = _format(RESPONSES, instructions, assignments, "instructions")
        if text is not None:
            kwargs["instructions"] = text
        if send and assignments:
            kwargs["metadata"] = {**dict(extra.get("metadata") or {}), **assignments}
        return kwargs

    return tool_loop_app(
        RESPONSES, create, model_name, build, parse_response, trace_mapper, functions, max_turns
    )
