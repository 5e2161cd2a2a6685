"""Record Google ADK agent runs, traced by ADK's own telemetry and by OpenInference, into
``google-adk.otlp`` and ``openinference-google-adk.otlp`` (issue 48).

google-adk 2.13.0 pins ``opentelemetry-api<=1.44`` (the dev extra has 1.45.2) and brings
google-genai, FastAPI, Authlib and more (~80 s to install), so its spans are recorded once, in a
venv of their own, and kept here as length-prefixed OTLP protobuf files::

    python3 -m venv /tmp/adk && /tmp/adk/bin/pip install google-adk==2.13.0 \\
        openinference-instrumentation-google-adk==1.0.5 opentelemetry-exporter-otlp-proto-http
    /tmp/adk/bin/python tests/data/instrumentors/record_google_adk_turn.py \\
        tests/data/instrumentors/google-adk.otlp adk
    /tmp/adk/bin/python tests/data/instrumentors/record_google_adk_turn.py \\
        tests/data/instrumentors/openinference-google-adk.otlp openinference
    ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1 /tmp/adk/bin/python \
        tests/data/instrumentors/record_google_adk_turn.py \
        tests/data/instrumentors/openinference-google-adk-schema1.otlp openinference 2

(recorded with opentelemetry-sdk 1.44.0, google-genai 2.34.0, openinference-instrumentation
0.1.72; the packages are Apache-2.0.) An ``LlmAgent`` with the tool ``get_weather`` runs
against a local stub of the Gemini API (tests/adapters/openai_stub.py serves its
``generateContent``), ``SEEDS`` seeds × groups a and b, each run inside a parent span carrying
``spanguard.seed_id`` and ``spanguard.assignment.group``. The planted bias: group a's model asks
for ``get_weather`` five times (one call per model turn), group b's once, then the answer; every
model call reports 30 prompt and 5 output tokens. ``adk`` records ADK's native telemetry
(the global tracer provider, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``);
``openinference`` adds OpenInference's ``GoogleADKInstrumentor`` on the same provider. An optional
third argument is the number of seeds (default ``SEEDS``). ADK's default telemetry schema (2) has
no ``call_llm`` span, and OpenInference 1.0.5 then records every model call of a run onto the
``invoke_agent`` span; ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` (ADK's legacy schema) brings the
``call_llm`` spans back, one per call.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[2] / "adapters"))

from openai_stub import openai_stub
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SEEDS = 8
MODEL = "gemini-2.5-flash"
TOKENS = (30, 5)


def _calls_made(body: dict[str, Any]) -> int:
    return sum(
        1
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    )


def responder(path: str, body: dict[str, Any]) -> dict[str, Any]:
    assert path.endswith(":generateContent"), path
    question = body["contents"][0]["parts"][0]["text"]
    wanted = 5 if "group a" in question else 1
    made = _calls_made(body)
    if made < wanted:
        city = ["Paris", "Lyon", "Nice", "Lille", "Brest"][made]
        parts: list[dict[str, Any]] = [
            {"functionCall": {"id": f"adk-{made}", "name": "get_weather", "args": {"city": city}}}
        ]
    else:
        parts = [{"text": "It is sunny."}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": TOKENS[0],
            "candidatesTokenCount": TOKENS[1],
            "totalTokenCount": sum(TOKENS),
        },
        "modelVersion": MODEL,
        "responseId": hashlib.sha256(f"{question}/{made}".encode()).hexdigest()[:16],
    }


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"sunny in {city}"


async def _runs(base_url: str, tracer: Any, seeds: int) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.models.google_llm import Gemini
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    agent = LlmAgent(
        name="weather_agent",
        model=Gemini(model=MODEL, base_url=base_url),
        instruction="Answer in one sentence.",
        tools=[get_weather],
    )
    runner = InMemoryRunner(agent=agent, app_name="weather")
    for seed in range(seeds):
        for group in ("a", "b"):
            attrs = {"spanguard.seed_id": f"s{seed}", "spanguard.assignment.group": group}
            session = await runner.session_service.create_session(app_name="weather", user_id="u")
            question = f"Weather in Paris? (seed {seed}, group {group})"
            message = types.Content(role="user", parts=[types.Part(text=question)])
            with tracer.start_as_current_span("turn", attributes=attrs):
                async for _ in runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                ):
                    pass


def main(out: str, mode: str, seeds: str = str(SEEDS)) -> None:
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["GOOGLE_API_KEY"] = "test-key"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if mode == "openinference":
        from openinference.instrumentation.google_adk import GoogleADKInstrumentor

        GoogleADKInstrumentor().instrument(tracer_provider=provider)
    with openai_stub(responder) as stub:
        tracer = provider.get_tracer("weather-app")
        asyncio.run(_runs(stub.base_url.removesuffix("/v1"), tracer, int(seeds)))
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    Path(out).write_bytes(struct.pack(">I", len(body)) + body)
    print(len(exporter.get_finished_spans()), "spans,", len(body), "bytes")


if __name__ == "__main__":
    main(*sys.argv[1:4])
