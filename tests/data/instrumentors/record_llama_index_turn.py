"""Record three LlamaIndex ``FunctionAgent`` runs, traced by OpenInference, into
``llama-index.otlp`` (issue 48: one model call, counted once).

llama-index-core and its OpenAI LLM take ~110 s and ~200 MB to install, too heavy for the dev
extra, so their spans are recorded once, in a venv of their own, and kept here as a
length-prefixed OTLP protobuf file::

    python3 -m venv /tmp/ll && /tmp/ll/bin/pip install llama-index-core==0.14.25 \\
        llama-index-llms-openai==0.8.3 openinference-instrumentation-llama-index==4.6.1 \\
        opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2
    /tmp/ll/bin/python tests/data/instrumentors/record_llama_index_turn.py \\
        tests/data/instrumentors/llama-index.otlp

Each run asks the local stub (tests/adapters/openai_stub.py) twice: a call of ``lookup``, then
the answer. OpenInference records each model call as an ``OpenAI.achat`` LLM span with token
usage and, beside it under the same agent step, an ``OpenAI._prepare_chat_with_tools`` span
also marked LLM, with no usage and no messages: not a call of its own.
"""

from __future__ import annotations

import asyncio
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[2] / "adapters"))

from openai_stub import chat_completion, openai_stub
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

RUNS = 3


def responder(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if any(m.get("role") == "tool" for m in body["messages"]):
        return chat_completion("Refunds take 5 days.", prompt_tokens=30, completion_tokens=6)
    return chat_completion(
        None,
        tool_calls=[("call_1", "lookup", '{"q": "refund"}')],
        prompt_tokens=20,
        completion_tokens=4,
    )


def lookup(q: str) -> str:
    """Look the question up in the knowledge base."""
    return "Refunds take 5 days."


def main(out: str) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    with openai_stub(responder) as stub:
        llm = OpenAI(model="gpt-4o-mini", api_base=stub.base_url, api_key="test", max_retries=0)
        agent = FunctionAgent(tools=[lookup], llm=llm, system_prompt="Help.", streaming=False)

        async def run() -> None:
            for _ in range(RUNS):
                print(await agent.run("How long do refunds take?"))

        asyncio.run(run())
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    Path(out).write_bytes(struct.pack(">I", len(body)) + body)


if __name__ == "__main__":
    main(sys.argv[1])
