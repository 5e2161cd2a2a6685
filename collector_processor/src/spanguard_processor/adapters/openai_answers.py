"""What an OpenAI-compatible response said and did, read into one framework-neutral shape.

:func:`parse_chat_completion` reads a Chat Completions ``ChatCompletion``, :func:`parse_response`
a Responses API ``Response``, both into a :class:`ModelAnswer` (text, refusal, requested tool
calls with their arguments, token usage, model, finish reasons); :func:`record_answer` puts it
on the open ``chat`` span and :func:`answer_result` turns it into the app's return value.

Responses are read by attribute, never by type: the ``openai`` package is an optional peer
this module does not import, and any object of the same shape (a stub, another
OpenAI-compatible SDK) is read alike, so the response objects are typed ``Any``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import spanguard
from spanguard import semconv

from ._base import AdapterError, require_text

__all__ = [
    "CHAT",
    "RESPONSES",
    "ModelAnswer",
    "answer_result",
    "parse_chat_completion",
    "parse_response",
    "record_answer",
]

CHAT = "openai-chat"
RESPONSES = "openai-responses"
# Responses output items that are tool calls the platform ran, named by their type.
_HOSTED_TOOL_TYPES = (
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "computer_call",
    "image_generation_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
)


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


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_chat_completion(response: Any) -> ModelAnswer:
    """A ``ChatCompletion`` (first choice) as a :class:`ModelAnswer`."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise AdapterError(
            CHAT,
            "the chat completion has no choices; expected a "
            "ChatCompletion with at least one choice.",
        )
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
        raise AdapterError(
            RESPONSES,
            "the response has no 'output' list; expected a Response from responses.create().",
        )
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
