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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import spanguard
from spanguard import semconv

from ._base import (
    AdapterError,
    App,
    TraceMapper,
    apply_trace_mapper,
    record_tool_call,
    require_text,
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
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None) or getattr(call, "custom", None)
        name = getattr(function, "name", None)
        if isinstance(name, str) and name:
            calls.append((name, getattr(call, "id", None)))
    usage = getattr(response, "usage", None)
    reasons = tuple(r for c in choices if isinstance(r := getattr(c, "finish_reason", None), str))
    return ModelAnswer(
        text=getattr(message, "content", None),
        refusal=getattr(message, "refusal", None) or None,
        tool_calls=tuple(calls),
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
        elif kind in _HOSTED_TOOL_TYPES:
            calls.append((str(kind).removesuffix("_call"), getattr(item, "id", None)))
    usage = getattr(response, "usage", None)
    status = getattr(response, "status", None)
    return ModelAnswer(
        text="".join(texts) if texts else None,
        refusal="".join(refusals) or None,
        tool_calls=tuple(calls),
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


def _adapter(adapter: str, create: Any, model: str, build: Any, parse: Any,
             trace_mapper: TraceMapper | None) -> App:
    what = "chat completion" if adapter == CHAT else "response"

    def finish(call: spanguard.LLMCall, response: Any) -> Any:
        answer = parse(response)
        record_answer(call, answer)
        return answer

    def after(answer: ModelAnswer, response: Any) -> str | dict[str, Any]:
        for name, call_id in answer.tool_calls:
            record_tool_call(name, call_id)
        apply_trace_mapper(adapter, trace_mapper, response)
        return answer_result(adapter, answer, what)

    if inspect.iscoroutinefunction(inspect.unwrap(create)):
        async def app_async(prompt: str, assignments: Mapping[str, str]) -> Any:
            kwargs = build(prompt, assignments)
            with spanguard.llm_call(model, provider="openai") as call:
                response = await create(**kwargs)
                answer = finish(call, response)
            return after(answer, response)

        return app_async

    def app(prompt: str, assignments: Mapping[str, str]) -> Any:
        kwargs = build(prompt, assignments)
        with spanguard.llm_call(model, provider="openai") as call:
            response = create(**kwargs)
            answer = finish(call, response)
        return after(answer, response)

    return app


def _check_model(adapter: str, model: object) -> str:
    if not isinstance(model, str) or not model:
        raise AdapterError(adapter, "a model name is required (e.g. model='gpt-4o-mini'; on the "
                                    "command line --adapter-option model=gpt-4o-mini).")
    return model


def openai_chat(client: Any, *, model: str | None = None, system: str | None = None,
                send_assignments: bool = True, request_options: Mapping[str, Any] | None = None,
                trace_mapper: TraceMapper | None = None) -> App:
    """An app calling ``client.chat.completions.create`` once per variant.

    ``system`` is a system-message template formatted with the assignments; with
    ``send_assignments`` the assignments are sent as the request's ``metadata``;
    ``request_options`` are passed through (``tools``, ``temperature``, ``store`` …).
    """
    create = _check_method(CHAT, client, "chat.completions.create")
    model_name = _check_model(CHAT, model)
    extra = dict(request_options or {})

    def build(prompt: str, assignments: Mapping[str, str]) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        system_text = _format(CHAT, system, assignments, "system")
        if system_text is not None:
            messages.append({"role": "system", "content": system_text})
        messages.append({"role": "user", "content": prompt})
        kwargs: dict[str, Any] = {"model": model_name, "messages": messages, **extra}
        if send_assignments and assignments:
            kwargs["metadata"] = {**dict(extra.get("metadata") or {}), **assignments}
        return kwargs

    return _adapter(CHAT, create, model_name, build, parse_chat_completion, trace_mapper)


def openai_responses(client: Any, *, model: str | None = None, instructions: str | None = None,
                     send_assignments: bool = True,
                     request_options: Mapping[str, Any] | None = None,
                     trace_mapper: TraceMapper | None = None) -> App:
    """An app calling ``client.responses.create`` once per variant (see :func:`openai_chat`)."""
    create = _check_method(RESPONSES, client, "responses.create")
    model_name = _check_model(RESPONSES, model)
    extra = dict(request_options or {})

    def build(prompt: str, assignments: Mapping[str, str]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model_name, "input": prompt, **extra}
        text = _format(RESPONSES, instructions, assignments, "instructions")
        if text is not None:
            kwargs["instructions"] = text
        if send_assignments and assignments:
            kwargs["metadata"] = {**dict(extra.get("metadata") or {}), **assignments}
        return kwargs

    return _adapter(RESPONSES, create, model_name, build, parse_response, trace_mapper)
