"""spanguard's LLM spans carry OpenInference's flat message keys beside the GenAI ones, so a
backend that reads only OpenInference (Arize Phoenix) shows messages, not raw JSON (issue 40).
The keys are built from the real openinference-semantic-conventions constants."""

from __future__ import annotations

from openinference.semconv.trace import MessageAttributes, SpanAttributes, ToolCallAttributes

import spanguard
from spanguard.testing import SpanCapture
from spanguard_processor.traces.convert import traces_from_readable_spans


def _key(prefix: str, i: int, field: str) -> str:
    return f"{prefix}.{i}.{field}"


def _call_key(i: int, j: int, field: str) -> str:
    return (
        f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.{i}.{MessageAttributes.MESSAGE_TOOL_CALLS}"
        f".{j}.{field}"
    )


def test_llm_call_messages_are_also_flat_openinference_keys() -> None:
    with SpanCapture(
        capture_content=True, redact=lambda key, text: text.replace("Paris", "[city]")
    ) as capture:
        with spanguard.request("weather"), spanguard.llm_call("gpt-4o-mini") as call:
            call.set_input(
                [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather in Paris?"},
                ]
            )
            call.set_output(
                [
                    {
                        "role": "assistant",
                        "content": "Checking Paris.",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": '{"city": "Paris"}',
                                },
                            }
                        ],
                    }
                ]
            )
        spans = capture.readable_spans()
    (llm,) = [s for s in spans if s.name == "chat gpt-4o-mini"]
    attrs = dict(llm.attributes or {})
    inputs, outputs = SpanAttributes.LLM_INPUT_MESSAGES, SpanAttributes.LLM_OUTPUT_MESSAGES
    role, content = MessageAttributes.MESSAGE_ROLE, MessageAttributes.MESSAGE_CONTENT
    assert attrs[_key(inputs, 0, role)] == "system"
    assert attrs[_key(inputs, 1, role)] == "user"
    assert attrs[_key(inputs, 1, content)] == "Weather in [city]?"  # redacted once, for both
    assert attrs[_key(outputs, 0, role)] == "assistant"
    assert attrs[_key(outputs, 0, content)] == "Checking [city]."
    assert attrs[_call_key(0, 0, ToolCallAttributes.TOOL_CALL_FUNCTION_NAME)] == "get_weather"
    assert attrs[_call_key(0, 0, ToolCallAttributes.TOOL_CALL_ID)] == "call_1"
    assert attrs[_call_key(0, 0, ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON)] == (
        '{"city": "[city]"}'
    )
    # the processor still reads one call requesting one tool (the GenAI keys win)
    (trace,) = traces_from_readable_spans(spans)
    assert [c.tool_calls for c in trace.llm_calls] == [("get_weather",)]


def test_without_content_capture_no_flat_message_keys() -> None:
    with SpanCapture(capture_content=False) as capture:
        with spanguard.request("weather"), spanguard.llm_call("gpt-4o-mini") as call:
            call.set_output("Sunny.")
        spans = capture.readable_spans()
    assert not [
        k
        for s in spans
        for k in (s.attributes or {})
        if k.startswith(("llm.output_messages", "llm.input_messages"))
    ]
