"""Adapters for an OpenAI-compatible client: Chat Completions and Responses.

The client is an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (or any object with the same
``chat.completions.create`` / ``responses.create`` methods, e.g. a client pointed at a local
OpenAI-compatible server through ``base_url``). Each variant's assignments reach the request as
its ``metadata`` (and, optionally, through a system prompt or instructions template formatted
with them). The response's token usage, finish reason, refusal and tool calls are recorded on a
``chat {model}`` span and its ``execute_tool`` siblings.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import spanguard
from spanguard import semconv

from ._base import (
    AdapterError,
    App,
    TraceMapper,
    apply_trace_mapper,
    as_agent,
    record_tool_call,
    require_text,
    run_as_tool,
)

__all__ = ["ModelAnswer", "openai_chat", "openai_responses", "parse_chat_completion",
           "parse_response"]

CHAT = "openai-chat"
RESPONSES = "openai-responses"
# Responses output items that are tool calls the platform ran, named by their type.
_HOSTED_TOOL_TYPES = ("web_search_call", "file_search_call", "code_interpreter_call",
                      "computer_call", "image_generation_call", "local_shell_call",
                      "shell_call", "apply_patch_call")


@dataclass(frozen=True)
class ModelAnswer:
    """What one model response said and did, in a framework-neutral shape."""

    text: str | None
    refusal: str | None = None
    tool_calls: tuple[tuple[str, str | None], ...] = ()  # (name, call id)
    arguments: tuple[str, ...] = ()  # each tool call's JSON arguments, in the same order
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    finish_reasons: tuple[str, ...] = ()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_chat_completion(response: Any) -> ModelAnswer:
    """A ``ChatCompletion`` (first choice) as a :class:`ModelAnswer`."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise AdapterError(CHAT, "the chat completion has no choices; expected a "
                                 "ChatCompletion with at least one choice.")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise AdapterError(CHAT, "the first choice has no message; expected a ChatCompletion.")
    calls = []
    arguments = []
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None) or getattr(call, "custom", None)
        name = getattr(function, "name", None)
        if isinstance(name, str) and name:
            calls.append((name, getattr(call, "id", None)))
            args = getattr(function, "arguments", None) or getattr(function, "input", None)
            arguments.append(args if isinstance(args, str) else "{}")
    usage = getattr(response, "usage", None)
    reasons = tuple(r for c in choices if isinstance(r := getattr(c, "finish_reason", None), str))
    return ModelAnswer(
        text=getattr(message, "content", None),
        refusal=getattr(message, "refusal", None) or None,
        tool_calls=tuple(calls),
        arguments=tuple(arguments),
        input_tokens=_int(getattr(usage, "prompt_tokens", None)),
        output_tokens=_int(getattr(usage, "completion_tokens", None)),
        model=getattr(response, "model", None),
        finish_reasons=reasons,
    )


def parse_response(response: Any) -> ModelAnswer:
    """A Responses API ``Response`` as a :class:`ModelAnswer`."""
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        raise AdapterError(RESPONSES, "the response has no 'output' list; expected a Response "
                                      "from responses.create().")
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[tuple[str, str | None]] = []
    arguments: list[str] = []
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or ():
                part_type = getattr(part, "type", None)
                if part_type == "output_text" and isinstance(getattr(part, "text", None), str):
                    texts.append(part.text)
                elif part_type == "refusal" and isinstance(getattr(part, "refusal", None), str):
                    refusals.append(part.refusal)
        elif kind in ("function_call", "custom_tool_call", "mcp_call"):
            name = getattr(item, "name", None)
            if isinstance(name, str) and name:
                calls.append((name, getattr(item, "call_id", None) or getattr(item, "id", None)))
                args = getattr(item, "arguments", None) or getattr(item, "input", None)
                arguments.append(args if isinstance(args, str) else "{}")
        elif kind in _HOSTED_TOOL_TYPES:
            calls.append((str(kind).removesuffix("_call"), getattr(item, "id", None)))
            arguments.append("{}")
    usage = getattr(response, "usage", None)
    status = getattr(response, "status", None)
    return ModelAnswer(
        text="".join(texts) if texts else None,
        refusal="".join(refusals) or None,
        tool_calls=tuple(calls),
        arguments=tuple(arguments),
        input_tokens=_int(getattr(usage, "input_tokens", None)),
        output_tokens=_int(getattr(usage, "output_tokens", None)),
        model=getattr(response, "model", None),
        finish_reasons=(status,) if isinstance(status, str) else (),
    )


def record_answer(call: spanguard.LLMCall, answer: ModelAnswer) -> None:
    """Usage, model, finish reasons and refusal on the open ``chat`` span."""
    if answer.input_tokens is not None and answer.output_tokens is not None:
        call.record_usage(answer.input_tokens, answer.output_tokens)
    if isinstance(answer.model, str):
        call.set_response_model(answer.model)
    span = call.span
    if answer.finish_reasons:
        span.set_attribute(semconv.GEN_AI_RESPONSE_FINISH_REASONS, list(answer.finish_reasons))
    span.set_attribute(semconv.LLM_REFUSAL, answer.refusal is not None)


def answer_result(adapter: str, answer: ModelAnswer, what: str) -> str | dict[str, Any]:
    """The app's return value: the text, or the refusal with ``metadata.refusal``."""
    if answer.refusal is not None:
        return {"text": answer.refusal, "metadata": {"refusal": True}}
    if answer.text is None and answer.tool_calls:
        return ""  # the model answered only with tool calls; they are in the trace
    return require_text(adapter, answer.text, what)


def _format(adapter: str, template: str | None, assignments: Mapping[str, str],
            name: str) -> str | None:
    if template is None:
        return None
    try:
        return template.format(**assignments)
    except (KeyError, IndexError, ValueError) as exc:
        raise AdapterError(adapter, f"the {name} template {template!r} cannot be formatted "
                                    f"with the assignments {dict(assignments)}: {exc!r}.") from None


def _check_method(adapter: str, client: object, path: str) -> Any:
    target: Any = client
    for part in path.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    if not callable(target):
        raise AdapterError(adapter, f"{type(client).__name__} has no {path}() method; expected "
                                    "an openai.OpenAI or openai.AsyncOpenAI client.")
    return target


ToolFunctions = Mapping[str, Callable[..., Any]]


class _Dialogue:
    """How one API continues a conversation after tool calls: the request of the first turn,
    and the request of the next turn given the last response and the tools' outputs."""

    def __init__(self, adapter: str, first: dict[str, Any]) -> None:
        self.adapter = adapter
        self.request = first

    def follow_up(self, response: Any, outputs: Sequence[tuple[str | None, str]]) -> None:
        if self.adapter == CHAT:
            message = _assistant_message(response.choices[0].message)
            self.request["messages"] = [*self.request["messages"], message, *(
                {"role": "tool", "tool_call_id": call_id, "content": text}
                for call_id, text in outputs)]
        else:
            given = self.request["input"]
            history = given if isinstance(given, list) else [{"role": "user", "content": given}]
            items = [item.model_dump(exclude_none=True) for item in response.output]
            self.request["input"] = [*history, *items, *(
                {"type": "function_call_output", "call_id": call_id, "output": text}
                for call_id, text in outputs)]


def _assistant_message(message: Any) -> dict[str, Any]:
    """The assistant's tool-calling turn as a request message (only the fields a request
    takes; a response message also carries e.g. ``annotations``)."""
    calls = []
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        if function is not None:
            calls.append({"id": call.id, "type": "function", "function": {
                "name": function.name, "arguments": function.arguments}})
        elif (custom := getattr(call, "custom", None)) is not None:
            calls.append({"id": call.id, "type": "custom",
                          "custom": {"name": custom.name, "input": custom.input}})
    return {"role": "assistant", "content": getattr(message, "content", None),
            "tool_calls": calls}


def _arguments(arguments: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _run_tool(function: Callable[..., Any], name: str, call_id: str | None,
              arguments: str) -> Any:
    """Run one tool function inside its ``execute_tool`` span; a failure is the tool's
    output (the model sees it, as with a real tool runtime), not the app's."""
    parsed = _arguments(arguments)

    def failed(exc: Exception) -> str:
        return f"error: {type(exc).__name__}: {exc}"

    if inspect.iscoroutinefunction(function):
        async def call_async() -> Any:
            if parsed is None:
                return f"error: the arguments of {name} are not a JSON object"
            try:
                return await function(**parsed)
            except Exception as exc:
                return failed(exc)

        return run_as_tool(name, call_id, call_async)

    def call() -> Any:
        if parsed is None:
            return f"error: the arguments of {name} are not a JSON object"
        try:
            return function(**parsed)
        except Exception as exc:
            return failed(exc)

    return run_as_tool(name, call_id, call)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _adapter(adapter: str, create: Any, model: str, build: Any, parse: Any,
             trace_mapper: TraceMapper | None, tool_functions: ToolFunctions | None,
             max_turns: int) -> App:
    """One model call per variant, or, with ``tool_functions``, a loop: the tools the model
    asks for run and their outputs go back to it until it answers without tool calls."""
    what = "chat completion" if adapter == CHAT else "response"
    functions = dict(tool_functions or {})

    def model_turn_done(call: spanguard.LLMCall, response: Any) -> ModelAnswer:
        answer = parse(response)
        record_answer(call, answer)
        return answer

    def runnable(answer: ModelAnswer) -> bool:
        return bool(functions) and bool(answer.tool_calls) and all(
            name in functions for name, _ in answer.tool_calls)

    def finish(answer: ModelAnswer, response: Any, record_calls: bool) -> Any:
        if record_calls:  # asked for but not run here: the request is what the app did
            for name, call_id in answer.tool_calls:
                record_tool_call(name, call_id)
        apply_trace_mapper(adapter, trace_mapper, response)
        return answer_result(adapter, answer, what)

    if inspect.iscoroutinefunction(inspect.unwrap(create)):
        async def app_async(prompt: str, assignments: Mapping[str, str]) -> Any:
            dialogue = _Dialogue(adapter, build(prompt, assignments))
            for _ in range(max_turns):
                with spanguard.llm_call(model, provider="openai") as call:
                    response = await create(**dialogue.request)
                    answer = model_turn_done(call, response)
                if not runnable(answer):
                    return finish(answer, response, True)
                outputs = []
                for (name, call_id), arguments in zip(answer.tool_calls, answer.arguments,
                                                      strict=True):
                    value = _run_tool(functions[name], name, call_id, arguments)
                    if inspect.isawaitable(value):
                        value = await value
                    outputs.append((call_id, _as_text(value)))
                dialogue.follow_up(response, outputs)
            return finish(answer, response, False)

        return as_agent(app_async, adapter)

    def app(prompt: str, assignments: Mapping[str, str]) -> Any:
        dialogue = _Dialogue(adapter, build(prompt, assignments))
        for _ in range(max_turns):
            with spanguard.llm_call(model, provider="openai") as call:
                response = create(**dialogue.request)
                answer = model_turn_done(call, response)
            if not runnable(answer):
                return finish(answer, response, True)
            outputs = []
            for (name, call_id), arguments in zip(answer.tool_calls, answer.arguments,
                                                  strict=True):
                if inspect.iscoroutinefunction(functions[name]):
                    raise AdapterError(adapter, f"the tool function {name} is a coroutine "
                                                "function; with a sync client use plain functions.")
                value = _run_tool(functions[name], name, call_id, arguments)
                outputs.append((call_id, _as_text(value)))
            dialogue.follow_up(response, outputs)
        return finish(answer, response, False)

    return as_agent(app, adapter)


def _check_model(adapter: str, model: object) -> str:
    if not isinstance(model, str) or not model:
        raise AdapterError(adapter, "a model name is required (e.g. model='gpt-4o-mini'; on the "
                                    "command line --adapter-option model=gpt-4o-mini).")
    return model


def _request_options(adapter: str, request_options: Mapping[str, Any] | None,
                     tools: Sequence[Mapping[str, Any]] | None, store: bool | None
                     ) -> dict[str, Any]:
    extra = dict(request_options or {})
    if tools is not None:
        if not isinstance(tools, Sequence) or isinstance(tools, str) or not all(
                isinstance(t, Mapping) for t in tools):
            raise AdapterError(adapter, "tools must be a list of tool definitions (objects), "
                                        'e.g. [{"type": "function", "function": {...}}].')
        extra["tools"] = [dict(t) for t in tools]
    if store is not None:
        extra["store"] = store
    return extra


def _sends_metadata(adapter: str, send_assignments: bool | None, extra: Mapping[str, Any]
                    ) -> bool:
    """Whether the assignments go out as ``metadata``. By default only where the API accepts
    it: Chat Completions refuses ``metadata`` unless ``store`` is true; the Responses API
    stores by default, so it sends them unless ``store`` is false."""
    if send_assignments is not None:
        return send_assignments
    store = extra.get("store")
    return store is True if adapter == CHAT else store is not False


def _check_functions(adapter: str, tool_functions: Any) -> ToolFunctions | None:
    if tool_functions is None:
        return None
    if not isinstance(tool_functions, Mapping) or not all(
            isinstance(k, str) and callable(v) for k, v in tool_functions.items()):
        raise AdapterError(adapter, "tool_functions must map tool names to functions, e.g. "
                                    '{"track_parcel": track_parcel}.')
    return tool_functions


def openai_chat(client: Any, *, model: str | None = None, system: str | None = None,
                send_assignments: bool | None = None,
                request_options: Mapping[str, Any] | None = None,
                tools: Sequence[Mapping[str, Any]] | None = None, store: bool | None = None,
                tool_functions: ToolFunctions | None = None, max_turns: int = 10,
                trace_mapper: TraceMapper | None = None) -> App:
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

    def build(prompt: str, assignments: Mapping[str, str]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        system_text = _format(CHAT, system, assignments, "system")
        if system_text is not None:
            messages.append({"role": "system", "content": system_text})
        messages.append({"role": "user", "content": prompt})
        kwargs: dict[str, Any] = {"model": model_name, "messages": messages, **extra}
        if send and assignments:
            kwargs["metadata"] = {**dict(extra.get("metadata") or {}), **assignments}
        return kwargs

    return _adapter(CHAT, create, model_name, build, parse_chat_completion, trace_mapper,
                    functions, max_turns)


def openai_responses(client: Any, *, model: str | None = None, instructions: str | None = None,
                     send_assignments: bool | None = None,
                     request_options: Mapping[str, Any] | None = None,
                     tools: Sequence[Mapping[str, Any]] | None = None, store: bool | None = None,
                     tool_functions: ToolFunctions | None = None, max_turns: int = 10,
                     trace_mapper: TraceMapper | None = None) -> App:
    """An app calling ``client.responses.create`` once per variant (see :func:`openai_chat`;
    here the assignments are sent as ``metadata`` unless ``store`` is false)."""
    create = _check_method(RESPONSES, client, "responses.create")
    model_name = _check_model(RESPONSES, model)
    extra = _request_options(RESPONSES, request_options, tools, store)
    send = _sends_metadata(RESPONSES, send_assignments, extra)
    functions = _check_functions(RESPONSES, tool_functions)

    def build(prompt: str, assignments: Mapping[str, str]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model_name, "input": prompt, **extra}
        text = _format(RESPONSES, instructions, assignments, "instructions")
        if text is not None:
            kwargs["instructions"] = text
        if send and assignments:
            kwargs["metadata"] = {**dict(extra.get("metadata") or {}), **assignments}
        return kwargs

    return _adapter(RESPONSES, create, model_name, build, parse_response, trace_mapper,
                    functions, max_turns)
