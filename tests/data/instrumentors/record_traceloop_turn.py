"""Record the weather turn with OpenLLMetry's traceloop-sdk decorators into ``traceloop-sdk.otlp``.

traceloop-sdk cannot be installed beside the dev extra (see docs/adapters.md), so its spans are
recorded once, in a venv of their own, and kept here as a length-prefixed OTLP protobuf file::

    python3 -m venv /tmp/tl && /tmp/tl/bin/pip install traceloop-sdk==0.62.4 openai httpx \\
        opentelemetry-instrumentation==0.66b1 opentelemetry-instrumentation-logging==0.66b1 \\
        opentelemetry-instrumentation-redis==0.66b1 \\
        opentelemetry-instrumentation-requests==0.66b1 \\
        opentelemetry-instrumentation-sqlalchemy==0.66b1 \\
        opentelemetry-instrumentation-threading==0.66b1 \\
        opentelemetry-instrumentation-urllib3==0.66b1
    /tmp/tl/bin/python tests/data/instrumentors/record_traceloop_turn.py \\
        tests/data/instrumentors/traceloop-sdk.otlp

(traceloop-sdk's own requirements do not resolve on PyPI today without those pins; it does not
declare httpx, which it imports.) The turn is the one of tests/adapters/instrumented_turn.py:
``@workflow`` around two chat completions against the local stub, the tool as ``@tool``, with a
session in the association properties.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[2] / "adapters"))

from openai_stub import chat_completion, openai_stub
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

ANSWER = "It is sunny and 21 °C in Paris."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def responder(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if any(m.get("role") == "tool" for m in body["messages"]):
        return chat_completion(ANSWER, prompt_tokens=61, completion_tokens=11)
    return chat_completion(
        None,
        tool_calls=[("call_w1", "get_weather", '{"city": "Paris"}')],
        prompt_tokens=48,
        completion_tokens=17,
    )


def main(out: str) -> None:
    import openai
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import tool, workflow

    exporter = InMemorySpanExporter()
    Traceloop.init(
        app_name="weather-app", exporter=exporter, disable_batch=True, telemetry_enabled=False
    )

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        return f"sunny, 21 °C in {city}"

    @workflow(name="weather_turn")
    def turn(client: Any, question: str) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You answer in one sentence."},
            {"role": "user", "content": question},
        ]
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": get_weather(**json.loads(call.function.arguments)),
                }
            )
        second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        return str(second.choices[0].message.content)

    with openai_stub(responder) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test-key", max_retries=0)
        Traceloop.set_association_properties({"session_id": "weather-session-1"})
        print(turn(client, "Weather in Paris?"))
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    Path(out).write_bytes(struct.pack(">I", len(body)) + body)


if __name__ == "__main__":
    main(sys.argv[1])
