"""Messages in the GenAI semantic-convention *parts* shape, from what apps hand the SDK.

``gen_ai.input.messages`` / ``gen_ai.output.messages`` hold a JSON list of
``{"role", "parts": [...]}`` messages (output messages also carry ``finish_reason``); parts
are ``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}`` and
``{"type": "tool_call_response", "id", "response"}``. Backends that follow the conventions
(Arize Phoenix among them) show messages only in this shape. Apps may pass a string, OpenAI
chat messages (``{"role", "content", "tool_calls", "tool_call_id"}``) or messages already in
the parts shape; all become parts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["genai_messages", "openinference_flat"]


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, list | tuple):
        parts: list[dict[str, Any]] = []
        for block in content:
            if isinstance(block, str):
                parts.append({"type": "text", "content": block})
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append({"type": "text", "content": block["text"]})
            elif isinstance(block, Mapping) and isinstance(block.get("content"), str):
                parts.append({"type": "text", "content": block["content"]})
            elif block is not None:
                parts.append({"type": "text", "content": str(block)})
        return parts
    return [{"type": "text", "content": str(content)}]


def _tool_call_parts(calls: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if not isinstance(calls, list | tuple):
        return parts
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        source = function if isinstance(function, Mapping) else call
        name = source.get("name")
        if not isinstance(name, str) or not name:
            continue
        parts.append(
            {
                "type": "tool_call",
                "id": str(call.get("id") or ""),
                "name": name,
                "arguments": _arguments(source.get("arguments", call.get("args"))),
            }
        )
    return parts


def _message(item: Any, default_role: str) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        return {"role": default_role, "parts": _text_parts(item)}
    role = item.get("role")
    role = role if isinstance(role, str) and role else default_role
    parts_in = item.get("parts")
    if isinstance(parts_in, list | tuple):
        message = {str(k): v for k, v in item.items()}
        message["role"] = role
        message["parts"] = [
            dict(p) if isinstance(p, Mapping) else {"type": "text", "content": str(p)}
            for p in parts_in
        ]
        return message
    if role == "tool" and "tool_call_id" in item:
        parts = [
            {
                "type": "tool_call_response",
                "id": str(item["tool_call_id"]),
                "response": item.get("content"),
            }
        ]
    else:
        parts = _text_parts(item.get("content")) + _tool_call_parts(item.get("tool_calls"))
    message = {"role": role, "parts": parts}
    if isinstance(item.get("name"), str):
        message["name"] = item["name"]
    if isinstance(item.get("finish_reason"), str):
        message["finish_reason"] = item["finish_reason"]
    return message


def genai_messages(value: Any, default_role: str, *, output: bool = False) -> list[dict[str, Any]]:
    """``value`` as GenAI parts-shape messages (output messages always get a
    ``finish_reason``: ``tool_call`` when they request tools, else ``stop``)."""
    if isinstance(value, list | tuple):
        messages = [_message(item, default_role) for item in value]
    else:
        messages = [_message(value, default_role)]
    if output:
        for message in messages:
            if not isinstance(message.get("finish_reason"), str):
                calls = any(
                    isinstance(p, Mapping) and p.get("type") == "tool_call"
                    for p in message["parts"]
                )
                message["finish_reason"] = "tool_call" if calls else "stop"
    return messages


def openinference_flat(messages: Any, prefix: str) -> dict[str, str]:
    """Parts-shape messages as OpenInference's flattened keys under ``prefix``
    (``llm.output_messages``): ``{prefix}.{i}.message.role``, ``.message.content`` (the text
    parts joined) and ``.message.tool_calls.{j}.tool_call.{id,function.name,
    function.arguments}``, so backends that read only OpenInference (Arize Phoenix) render them
    as messages. Anything not in the parts shape is skipped."""
    flat: dict[str, str] = {}
    if not isinstance(messages, list):
        return flat
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        base = f"{prefix}.{i}.message"
        if isinstance(message.get("role"), str):
            flat[f"{base}.role"] = message["role"]
        parts = message.get("parts")
        parts = parts if isinstance(parts, list) else []
        texts = [
            p["content"]
            for p in parts
            if isinstance(p, Mapping)
            and p.get("type") == "text"
            and isinstance(p.get("content"), str)
        ]
        if texts:
            flat[f"{base}.content"] = "\n".join(texts)
        calls = [
            p
            for p in parts
            if isinstance(p, Mapping)
            and p.get("type") == "tool_call"
            and isinstance(p.get("name"), str)
        ]
        for j, call in enumerate(calls):
            key = f"{base}.tool_calls.{j}.tool_call"
            flat[f"{key}.function.name"] = call["name"]
            if call.get("id"):
                flat[f"{key}.id"] = str(call["id"])
            arguments = call.get("arguments")
            if arguments is not None:
                flat[f"{key}.function.arguments"] = (
                    arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments, ensure_ascii=False)
                )
    return flat
