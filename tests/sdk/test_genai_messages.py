"""What the SDK emits for backends: GenAI parts-shape messages, OpenInference tool values, and
one content switch for spanguard and the GenAI instrumentations (issue #16)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

import spanguard
from spanguard import semconv
from spanguard._runtime import CAPTURE_ENV, env_capture
from spanguard.testing import SpanCapture

# The GenAI semantic conventions' message schemas (docs/gen-ai/gen-ai-input-messages.json and
# gen-ai-output-messages.json in open-telemetry/semantic-conventions), reduced to what they
# require: every message has a role and a list of typed parts; text parts carry a string
# content, tool-call parts a name, tool-call responses a response; output messages also carry
# a finish_reason.
_PART = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "allOf": [
        {
            "if": {"properties": {"type": {"const": "text"}}},
            "then": {"required": ["content"], "properties": {"content": {"type": "string"}}},
        },
        {
            "if": {"properties": {"type": {"const": "tool_call"}}},
            "then": {
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "id": {"type": ["string", "null"]}},
            },
        },
        {
            "if": {"properties": {"type": {"const": "tool_call_response"}}},
            "then": {"required": ["response"]},
        },
    ],
}
_ROLE = {"type": "string"}
INPUT_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["role", "parts"],
        "properties": {"role": _ROLE, "parts": {"type": "array", "items": _PART}},
    },
}
OUTPUT_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["role", "parts", "finish_reason"],
        "properties": {
            "role": _ROLE,
            "parts": {"type": "array", "items": _PART},
            "finish_reason": {"type": "string"},
        },
    },
}


def _llm_messages(
    capture: SpanCapture, given_input: Any, given_output: Any
) -> tuple[list[Any], list[Any]]:
    with spanguard.llm_call("gpt-4o-mini", provider="openai") as call:
        call.set_input(given_input)
        call.set_output(given_output)
    (span,) = capture.spans()
    attributes = span["attributes"]
    inputs = json.loads(attributes[semconv.GEN_AI_INPUT_MESSAGES])
    outputs = json.loads(attributes[semconv.GEN_AI_OUTPUT_MESSAGES])
    jsonschema.validate(inputs, INPUT_SCHEMA)
    jsonschema.validate(outputs, OUTPUT_SCHEMA)
    return inputs, outputs


def test_chat_messages_with_tool_calls_become_parts(content_capture: SpanCapture) -> None:
    chat = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    inputs, outputs = _llm_messages(
        content_capture, chat, {"role": "assistant", "content": "Sunny."}
    )
    assert inputs == [
        {"role": "system", "parts": [{"type": "text", "content": "Be terse."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": {"city": "Paris"},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}],
        },
    ]
    assert outputs == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Sunny."}],
            "finish_reason": "stop",
        }
    ]


def test_a_tool_request_output_and_parts_pass_through(content_capture: SpanCapture) -> None:
    parts = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    inputs, outputs = _llm_messages(
        content_capture,
        parts,
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "lookup", "arguments": "not json"}}
                ],
            }
        ],
    )
    assert inputs == parts
    assert outputs == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": "not json"}],
            "finish_reason": "tool_call",
        }
    ]


def test_the_processor_reads_back_what_the_sdk_writes(content_capture: SpanCapture) -> None:
    from spanguard_processor.traces.convert import traces_from_readable_spans
    from spanguard_processor.traces.model import ToolCall

    with spanguard.request("agent"), spanguard.llm_call("gpt-4o-mini", provider="openai") as call:
        call.set_input(
            [{"role": "system", "content": "sys"}, {"role": "user", "content": "Weather in Paris?"}]
        )
        call.set_output(
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "call_1", "function": {"name": "get_weather", "arguments": "{}"}}
                ],
            }
        )
        call.record_usage(20, 9)
    (trace,) = traces_from_readable_spans(content_capture.exporter.get_finished_spans())
    assert trace.input == "Weather in Paris?"
    assert trace.trace.tool_calls == (ToolCall("get_weather", "call_1", requested=True),)
    assert trace.usage["total_tokens"] == 29


def test_tool_spans_carry_openinference_values_with_capture_on(
    content_capture: SpanCapture,
) -> None:
    @spanguard.tool
    def get_weather(city: str) -> dict[str, str]:
        return {"sky": "sunny"}

    get_weather("Paris")
    (span,) = content_capture.spans()
    attributes = span["attributes"]
    assert json.loads(attributes[semconv.INPUT_VALUE]) == {"city": "Paris"}
    assert attributes[semconv.INPUT_MIME_TYPE] == "application/json"
    assert json.loads(attributes[semconv.OUTPUT_VALUE]) == {"sky": "sunny"}
    assert attributes[semconv.OUTPUT_MIME_TYPE] == "application/json"


def test_tool_spans_carry_no_values_with_capture_off(capture: SpanCapture) -> None:
    @spanguard.tool
    def get_weather(city: str) -> str:
        return "sunny"

    get_weather("Paris")
    (span,) = capture.spans()
    assert semconv.INPUT_VALUE not in span["attributes"]
    assert semconv.OUTPUT_VALUE not in span["attributes"]


@pytest.mark.parametrize(
    ("value", "on"),
    [
        ("SPAN_ONLY", True),
        ("span_and_event", True),
        ("EVENT_ONLY", True),
        ("true", True),
        ("1", True),
        ("NO_CONTENT", False),
        ("false", False),
        ("", False),
        ("maybe", False),
    ],
)
def test_one_content_switch_for_spanguard_and_genai_instrumentations(
    monkeypatch: pytest.MonkeyPatch, value: str, on: bool
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, value)
    assert env_capture() is on


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("SPAN_ONLY", semconv.ContentCapture.SPAN_ONLY),
        ("event_only", semconv.ContentCapture.EVENT_ONLY),
        (" Span_And_Event ", semconv.ContentCapture.SPAN_AND_EVENT),
        ("true", semconv.ContentCapture.SPAN_ONLY),
        ("1", semconv.ContentCapture.SPAN_ONLY),
        ("NO_CONTENT", semconv.ContentCapture.NO_CONTENT),
        ("off", semconv.ContentCapture.NO_CONTENT),
        ("", semconv.ContentCapture.NO_CONTENT),
    ],
)
def test_the_content_switch_is_parsed_once_into_one_enum(
    monkeypatch: pytest.MonkeyPatch, value: str, mode: semconv.ContentCapture
) -> None:
    assert semconv.content_capture({semconv.CAPTURE_MESSAGE_CONTENT_ENV: value}) is mode
    monkeypatch.setenv(semconv.CAPTURE_MESSAGE_CONTENT_ENV, value)
    assert semconv.content_capture() is mode
    assert env_capture() is mode.captured
