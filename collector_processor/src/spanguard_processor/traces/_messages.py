"""Message text from LLM spans and root values, across the GenAI, OpenInference and OpenLLMetry
conventions (see ``docs/attributes.md``, "Model calls, questions and answers"); the model call
itself (provider, model, tokens, cost) is read by :mod:`._llm`.

Messages come in five shapes, all read into one small form (:class:`Message`):

* GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages``: the semconv *parts* shape
  ``[{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name"}],
  "finish_reason"}]`` and the older OpenAI *chat* shape ``[{"role", "content", "tool_calls"}]``
  (a bare string counts as one message);
* OpenInference flattened ``llm.input_messages.{i}.message.*`` / ``llm.output_messages.{i}.*``;
* OpenLLMetry flattened ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*``;
* JSON request/response bodies in ``input.value`` / ``output.value`` (OpenAI chat requests and
  completions, LangChain ``messages`` / ``generations``) and traceloop's ``entity.input`` /
  ``entity.output`` wrappers ``{"args": [...], "kwargs": {...}}``.

Everything here is pure and never raises on malformed input: what cannot be read is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spanguard import semconv

from ..ingest.spans import AttrValue, SpanRecord

__all__ = [
    "Message",
    "input_messages",
    "json_value",
    "nonblank",
    "output_messages",
    "plain",
    "question_and_answer",
    "requested_tools",
    "text_of",
]

_USER_ROLES = frozenset({"user", "human"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "model"})
_OI_INDEXED = re.compile(r"(\d+)\.message\.(.+)$")
_OLLM_INDEXED = re.compile(r"(\d+)\.(.+)$")
# a tool call the model asked for, or one its provider ran (the conventions' server_tool_call)
_TOOL_CALL_PARTS = frozenset({"tool_call", "server_tool_call"})
_TOOL_INDEXED = re.compile(r"^tool_calls\.(\d+)\.(.+)$")
_CONTENTS_INDEXED = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")


@dataclass
class Message:
    """One message, reduced to what spanguard reads: role, text, requested tool calls."""

    role: str
    texts: list[str] = field(default_factory=list)
    tool_calls: list[tuple[str, str | None]] = field(default_factory=list)  # (name, id)
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(t for t in self.texts if t)


# --- generic value helpers -------------------------------------------------------------------


def json_value(value: AttrValue) -> Any:
    """A JSON string parsed (None when it is not JSON), any other value as plain lists/dicts."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return plain(value)


def plain(value: Any) -> Any:
    """Tuples and lists as lists, mappings as dicts with string keys, all the way down."""
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def nonblank(value: Any) -> str | None:
    """The value when it is a string with some non-space text, else None."""
    return value if isinstance(value, str) and value.strip() else None


# --- message shapes --------------------------------------------------------------------------


def _content_texts(content: Any) -> list[str]:
    """Text of an OpenAI/LangChain ``content``: a string or a list of typed blocks."""
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, Mapping) and block.get("type") in (
                "text",
                "output_text",
                "input_text",
            ):
                text = block.get("text", block.get("content"))
                if isinstance(text, str):
                    texts.append(text)
    return texts


def _chat_tool_calls(calls: Any) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    if not isinstance(calls, list):
        return found
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        name = nonblank(function.get("name")) if isinstance(function, Mapping) else None
        name = name or nonblank(call.get("name"))
        if name:
            ident = call.get("id")
            found.append((name, ident if isinstance(ident, str) else None))
    return found


def _message(item: Any, default_role: str) -> Message | None:
    """One message of the parts, chat or LangChain-serialised shape."""
    if isinstance(item, str):
        return Message(default_role, [item])
    if not isinstance(item, Mapping):
        return None
    if item.get("lc") == 1 and isinstance(item.get("kwargs"), Mapping):  # LangChain dumpd()
        kwargs = item["kwargs"]
        role = str(kwargs.get("type") or default_role)
        return Message(
            role, _content_texts(kwargs.get("content")), _chat_tool_calls(kwargs.get("tool_calls"))
        )
    role = str(item.get("role") or item.get("type") or default_role)
    finish = item.get("finish_reason")
    message = Message(role, finish_reason=finish if isinstance(finish, str) else None)
    parts = item.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("content"), str):
                message.texts.append(part["content"])
            elif kind in _TOOL_CALL_PARTS and nonblank(part.get("name")):
                ident = part.get("id")
                message.tool_calls.append((part["name"], ident if isinstance(ident, str) else None))
        return message
    message.texts = _content_texts(item.get("content"))
    message.tool_calls = _chat_tool_calls(item.get("tool_calls"))
    return message


def _messages(data: Any, default_role: str) -> list[Message]:
    if isinstance(data, str):
        return [Message(default_role, [data])]
    if not isinstance(data, list):
        return []
    if len(data) == 1 and isinstance(data[0], list):  # LangChain: one list per prompt
        data = data[0]
    return [m for item in data if (m := _message(item, default_role)) is not None]


def _flat_message(fields: Mapping[str, AttrValue], default_role: str) -> Message:
    role = fields.get("role")
    finish = fields.get("finish_reason")
    message = Message(
        role if isinstance(role, str) and role else default_role,
        finish_reason=finish if isinstance(finish, str) else None,
    )
    content = fields.get("content")
    if isinstance(content, str):
        parsed = json_value(content) if content.startswith("[") else None
        message.texts = _content_texts(parsed) if isinstance(parsed, list) else [content]
    contents: dict[int, dict[str, AttrValue]] = {}
    calls: dict[int, dict[str, AttrValue]] = {}
    for key, value in fields.items():
        if match := _CONTENTS_INDEXED.match(key):
            contents.setdefault(int(match.group(1)), {})[match.group(2)] = value
        elif match := _TOOL_INDEXED.match(key):
            calls.setdefault(int(match.group(1)), {})[match.group(2)] = value
    for index in sorted(contents):
        text = contents[index].get("text")
        if isinstance(text, str):
            message.texts.append(text)
    for index in sorted(calls):
        call = calls[index]
        name = nonblank(call.get("tool_call.function.name")) or nonblank(call.get("name"))
        ident = call.get("tool_call.id", call.get("id"))
        if name:
            message.tool_calls.append((name, ident if isinstance(ident, str) else None))
    return message


def _flat_messages(
    attrs: Mapping[str, AttrValue], oi_prefix: str, ollm_prefix: str, default_role: str
) -> list[Message]:
    """OpenInference ``{oi_prefix}.{i}.message.*`` messages, else OpenLLMetry
    ``{ollm_prefix}.{i}.*`` ones: one pass over the keys."""
    oi_start, ollm_start = oi_prefix + ".", ollm_prefix + "."
    oi: dict[int, dict[str, AttrValue]] = {}
    ollm: dict[int, dict[str, AttrValue]] = {}
    for key, value in attrs.items():
        if key.startswith(oi_start):
            match = _OI_INDEXED.match(key, len(oi_start))
            if match:
                oi.setdefault(int(match.group(1)), {})[match.group(2)] = value
        elif key.startswith(ollm_start):
            match = _OLLM_INDEXED.match(key, len(ollm_start))
            if match:
                ollm.setdefault(int(match.group(1)), {})[match.group(2)] = value
    fields = oi or ollm
    return [_flat_message(fields[i], default_role) for i in sorted(fields)]


def _body_messages(data: Any, default_role: str) -> list[Message] | None:
    """Messages of a JSON request or response body; None when it is not one."""
    if not isinstance(data, Mapping):
        return _messages(data, default_role) if isinstance(data, list) else None
    if "messages" in data:
        return _messages(data["messages"], default_role)
    choices = data.get("choices")
    if isinstance(choices, list):  # an OpenAI chat completion
        out = []
        for choice in choices:
            if isinstance(choice, Mapping) and (m := _message(choice.get("message"), "assistant")):
                finish = choice.get("finish_reason")
                m.finish_reason = finish if isinstance(finish, str) else m.finish_reason
                out.append(m)
        return out
    generations = data.get("generations")
    if isinstance(generations, list):  # a LangChain LLMResult
        out = []
        for batch in generations:
            for gen in batch if isinstance(batch, list) else [batch]:
                if not isinstance(gen, Mapping):
                    continue
                m = _message(gen.get("message"), "assistant") or Message("assistant")
                if not m.text and isinstance(gen.get("text"), str):
                    m.texts = [gen["text"]]
                m.role = "assistant" if m.role == "ai" else m.role
                out.append(m)
        return out
    return None


def input_messages(span: SpanRecord) -> list[Message]:
    attrs = span.attributes
    if semconv.GEN_AI_INPUT_MESSAGES in attrs:
        return _messages(json_value(attrs[semconv.GEN_AI_INPUT_MESSAGES]), "user")
    found = _flat_messages(attrs, semconv.LLM_INPUT_MESSAGES, semconv.GEN_AI_PROMPT, "user")
    if not found and semconv.INPUT_VALUE in attrs:
        found = _body_messages(json_value(attrs[semconv.INPUT_VALUE]), "user") or []
    return found


def output_messages(span: SpanRecord) -> list[Message]:
    attrs = span.attributes
    if semconv.GEN_AI_OUTPUT_MESSAGES in attrs:
        return _messages(
            json_value(attrs[semconv.GEN_AI_OUTPUT_MESSAGES])
            if _looks_json(attrs[semconv.GEN_AI_OUTPUT_MESSAGES])
            else attrs[semconv.GEN_AI_OUTPUT_MESSAGES],
            "assistant",
        )
    found = _flat_messages(
        attrs, semconv.LLM_OUTPUT_MESSAGES, semconv.GEN_AI_COMPLETION, "assistant"
    )
    if not found and semconv.OUTPUT_VALUE in attrs:
        found = _body_messages(json_value(attrs[semconv.OUTPUT_VALUE]), "assistant") or []
    return found


def _looks_json(value: AttrValue) -> bool:
    if not isinstance(value, str):
        return True
    head = value.lstrip()[:1]
    return head in ("[", "{", '"')


def _question(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.role in _USER_ROLES and message.text.strip():
            return message.text
    return None


def _answer(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.role in _ASSISTANT_ROLES and message.text.strip():
            return message.text
    return None


def requested_tools(outputs: Sequence[Message]) -> list[tuple[str, str | None]]:
    """The tool calls the model asked for in an LLM span's output messages, as (name, id)."""
    return [call for message in outputs for call in message.tool_calls]


def question_and_answer(
    llm_spans: Sequence[SpanRecord], outputs: Mapping[str, Sequence[Message]]
) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
    """The turn's question (last user message of its first model call that has one) and
    answer (final assistant text of its last model call that has one), each with its source
    key; LLM spans in start order, ``outputs`` their output messages by span id."""
    question = answer = None
    for span in llm_spans:
        text = _question(input_messages(span))
        if text is not None:
            question = (text, _message_source(span, input_side=True))
            break
    for span in reversed(llm_spans):
        text = _answer(outputs[span.span_id])
        if text is not None:
            answer = (text, _message_source(span, input_side=False))
            break
    return question, answer


def _message_source(span: SpanRecord, *, input_side: bool) -> str:
    attrs = span.attributes
    gen_ai, oi, ollm, raw = (
        (
            semconv.GEN_AI_INPUT_MESSAGES,
            semconv.LLM_INPUT_MESSAGES,
            semconv.GEN_AI_PROMPT,
            semconv.INPUT_VALUE,
        )
        if input_side
        else (
            semconv.GEN_AI_OUTPUT_MESSAGES,
            semconv.LLM_OUTPUT_MESSAGES,
            semconv.GEN_AI_COMPLETION,
            semconv.OUTPUT_VALUE,
        )
    )
    if gen_ai in attrs:
        return f"llm:{gen_ai}"
    if any(k.startswith(oi + ".") for k in attrs):
        return f"llm:{oi}"
    if any(k.startswith(ollm + ".") for k in attrs):
        return f"llm:{ollm}"
    return f"llm:{raw}"


# --- root-level values -------------------------------------------------------------------------


def _wrapper_text(data: Mapping[str, Any]) -> str | None:
    """traceloop's ``{"args": [...], "kwargs": {...}}``: the one string argument, if any."""
    args = data.get("args")
    kwargs = data.get("kwargs")
    values = [
        *(args if isinstance(args, list) else []),
        *(kwargs.values() if isinstance(kwargs, Mapping) else []),
    ]
    strings = [v for v in values if isinstance(v, str) and v.strip()]
    return strings[0] if len(strings) == 1 else None


def text_of(
    value: AttrValue, mime: AttrValue, key: str, *, input_side: bool
) -> tuple[str, str, bool] | None:
    """The text a root-level value carries: ``(text, source, is_raw)``.

    Plain text stays as it is; JSON is read as messages, request/response bodies or wrappers
    (the question for an input, the answer for an output). ``is_raw`` marks JSON nothing could
    be read from (kept verbatim only when nothing better exists).
    """
    if isinstance(value, str):
        if mime == "text/plain" or not _looks_json(value):
            return value, key, False
        data = json_value(value)
        if data is None:
            return value, key, False
    elif value is None or isinstance(value, bytes | bool | int | float):
        return None
    else:
        data = plain(value)
        value = json.dumps(data, ensure_ascii=False, sort_keys=True)
    if isinstance(data, str):
        return data, f"{key}:json", False
    if isinstance(data, Mapping) and ("args" in data or "kwargs" in data):
        text = _wrapper_text(data)
        if text is not None:
            return text, f"{key}:args", False
    messages = _body_messages(data, "user" if input_side else "assistant")
    if messages:
        text = _question(messages) if input_side else _answer(messages)
        if text is not None:
            return text, f"{key}:messages", False
    if isinstance(data, Mapping) and len(data) == 1:
        (only,) = data.values()
        if isinstance(only, str) and only.strip():
            return only, f"{key}:value", False
    return str(value), key, True
