"""One agent turn instrumented by a real third-party instrumentation, exported over OTLP/HTTP.

``python instrumented_turn.py INSTRUMENTOR OTLP_URL OPENAI_BASE_URL`` runs the turn
"Weather in Paris?" → the model requests ``get_weather`` → the tool result → the answer, with
the real ``openai`` client (or LangChain's ``ChatOpenAI``) against the local stub, instrumented
only by INSTRUMENTOR (no spanguard SDK). A process of its own per instrumentor: each patches
the ``openai`` module globally and reads its settings from the environment once.

INSTRUMENTOR is one of:

* ``genai-openai`` — opentelemetry-instrumentation-genai-openai (GenAI semconv), under a plain
  parent span;
* ``openinference-openai`` — openinference-instrumentation-openai, no parent, one session
  (``using_session``);
* ``openinference-agent`` — openinference-instrumentation-openai on OpenInference's own tracer
  provider (its ``TraceConfig`` read from the ``OPENINFERENCE_*`` variables), the turn in an
  ``@tracer.agent`` span and the tool in a ``@tracer.tool`` span;
* ``spanguard-genai-openai`` — spanguard's SDK (``configure``, ``request``, ``@tool``) with each
  model call in ``spanguard.llm_call`` around a client instrumented by genai-openai: two spans
  per model call, one inside the other;
* ``logfire`` — Logfire's ``instrument_openai`` (nothing sent to Logfire; its spans go to
  OTLP_URL through ``additional_span_processors``), the turn in a ``logfire.span``;
* ``pydantic-ai`` — a pydantic-ai ``Agent`` with the tool as ``@agent.tool_plain``, its own
  instrumentation (``InstrumentationSettings``, content included) on a plain provider;
* ``openinference-langchain`` — openinference-instrumentation-langchain, ``ChatOpenAI`` with a
  LangChain tool, no parent, one session;
* ``genai-openai-bare`` — genai-openai with no parent span at all (an app that forgot one): each
  model call is a trace of its own;
* ``openllmetry-openai`` — OpenLLMetry's opentelemetry-instrumentation-openai, under a plain
  parent span;
* ``langfuse`` — the Langfuse SDK (v3+, OTel-based): its ``langfuse.openai`` drop-in client
  (``generation`` observations), ``@observe(as_type="tool")`` on the tool and
  ``@observe(as_type="agent")`` on the turn, its spans sent to OTLP_URL through
  ``Langfuse(span_exporter=...)``; the keys it writes are Langfuse's own
  (``langfuse.observation.type|input|output|metadata.*``), no GenAI ones.

An optional fourth argument runs that many turns (one request each).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

QUESTION = "Weather in Paris?"
SYSTEM = "You answer in one sentence."
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


def get_weather(city: str) -> str:
    return f"sunny, 21 °C in {city}"


def openai_turn(base_url: str) -> str:
    import openai

    return openai_turn_with(openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0))


def openai_turn_with(client: Any) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    first = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages,  # type: ignore[arg-type]
        tools=TOOLS,
    )  # type: ignore[arg-type]
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls or []:
        arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
        messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)}
        )
    second = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages,  # type: ignore[arg-type]
        tools=TOOLS,
    )  # type: ignore[arg-type]
    return second.choices[0].message.content or ""


def langfuse_turn(base_url: str, otlp_url: str, turns: int) -> str:
    from langfuse import Langfuse, observe
    from langfuse.openai import openai as lf_openai  # type: ignore[attr-defined]

    client = Langfuse(
        public_key="pk-lf-test",
        secret_key="sk-lf-test",
        base_url="http://127.0.0.1:9",
        tracer_provider=TracerProvider(),
        span_exporter=OTLPSpanExporter(endpoint=otlp_url),
    )

    @observe(as_type="tool", name="get_weather")
    def weather(city: str) -> str:
        return get_weather(city)

    @observe(as_type="agent", name="weather turn")
    def turn(question: str) -> str:
        openai_client = lf_openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ]
        first = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        )
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": weather(**json.loads(call.function.arguments)),
                }
            )
        second = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        )
        return second.choices[0].message.content or ""

    answers = [turn(QUESTION) for _ in range(turns)]
    client.flush()
    client.shutdown()
    return answers[-1]


def logfire_turn(base_url: str, provider: TracerProvider) -> str:
    import logfire
    import openai

    processor = provider._active_span_processor._span_processors[0]  # the OTLP exporter's
    logfire.configure(
        send_to_logfire=False,
        console=False,
        service_name="turn-logfire",
        additional_span_processors=[processor],
    )
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    logfire.instrument_openai(client)
    with logfire.span("weather turn"):
        answer = openai_turn_with(client)
    logfire.force_flush()
    return answer


def pydantic_ai_turn(base_url: str, provider: TracerProvider) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        "gpt-4o-mini", provider=OpenAIProvider(base_url=base_url, api_key="test-key")
    )
    agent = Agent(
        model,
        system_prompt=SYSTEM,
        capabilities=[
            Instrumentation(
                settings=InstrumentationSettings(tracer_provider=provider, include_content=True)
            )
        ],
    )

    @agent.tool_plain(name="get_weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        return get_weather(city)

    return str(agent.run_sync(QUESTION).output)


def spanguard_wrapped_turns(base_url: str, otlp_url: str, turns: int) -> str:
    import openai
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    import spanguard

    spanguard.configure(
        service_name="turn-spanguard-genai-openai",
        exporter="otlp-http",
        endpoint=otlp_url,
        capture_content=True,
    )
    OpenAIInstrumentor().instrument()
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)

    @spanguard.tool("get_weather")
    def weather(city: str) -> str:
        return get_weather(city)

    def model_call(messages: list[dict[str, Any]]) -> Any:
        with spanguard.llm_call("gpt-4o-mini", provider="openai") as call:
            call.set_input(messages)
            reply = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,  # type: ignore[arg-type]
                tools=TOOLS,
            )  # type: ignore[arg-type]
            assert reply.usage is not None
            call.record_usage(reply.usage.prompt_tokens, reply.usage.completion_tokens)
            call.set_response_model(reply.model)
            call.set_output([reply.choices[0].message.model_dump(exclude_none=True)])
            return reply.choices[0].message

    answer = ""
    for turn in range(turns):
        with spanguard.request(
            "weather", seed_id=f"s{turn}", variant_id=f"s{turn}-a", input=QUESTION
        ) as request:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": QUESTION},
            ]
            message = model_call(messages)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls or []:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": weather(**json.loads(call.function.arguments)),
                    }
                )
            answer = model_call(messages).content or ""
            request.set_output(answer)
    spanguard.shutdown()
    return answer


def openinference_agent_turns(base_url: str, otlp_url: str, name: str, turns: int) -> str:
    from openinference.instrumentation import TracerProvider as OITracerProvider
    from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI

    provider = OITracerProvider(resource=Resource.create({"service.name": f"turn-{name}"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=otlp_url)))
    OIOpenAI().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("weather-app")

    @tracer.tool(name="get_weather")
    def weather(city: str) -> str:
        return get_weather(city)

    @tracer.agent(name="weather turn")
    def turn(question: str) -> str:
        import openai

        client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ]
        first = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,
        )  # type: ignore[arg-type]
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": weather(**json.loads(call.function.arguments)),
                }
            )  # type: ignore[union-attr]
        second = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,
        )  # type: ignore[arg-type]
        return second.choices[0].message.content or ""

    answers = [turn(QUESTION) for _ in range(turns)]
    provider.shutdown()
    return answers[-1]


def langchain_turn(base_url: str) -> str:
    from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool("get_weather")
    def weather_tool(city: str) -> str:
        """Current weather of a city."""
        return get_weather(city)

    model = ChatOpenAI(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="test-key",  # type: ignore[arg-type]
        max_retries=0,
    ).bind_tools([weather_tool])
    messages: list[BaseMessage] = [SystemMessage(SYSTEM), HumanMessage(QUESTION)]
    reply = model.invoke(messages)
    messages.append(reply)
    for call in reply.tool_calls:  # type: ignore[attr-defined]
        messages.append(weather_tool.invoke(call))
    return str(model.invoke(messages).content)


def main(name: str, otlp_url: str, base_url: str, turns: str = "1") -> None:
    if name == "langfuse":
        print(langfuse_turn(base_url, otlp_url, int(turns)))
        return
    provider = TracerProvider(resource=Resource.create({"service.name": f"turn-{name}"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=otlp_url)))
    tracer = provider.get_tracer("weather-app")
    if name == "genai-openai":
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        with tracer.start_as_current_span("weather turn"):
            answer = openai_turn(base_url)
    elif name == "genai-openai-bare":
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        for _ in range(int(turns)):
            answer = openai_turn(base_url)
    elif name == "openllmetry-openai":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetry

        OpenLLMetry().instrument(tracer_provider=provider)
        with tracer.start_as_current_span("weather turn"):
            answer = openai_turn(base_url)
    elif name == "openinference-openai":
        from openinference.instrumentation import using_session
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI

        OIOpenAI().instrument(tracer_provider=provider)
        for turn in range(int(turns)):  # one session per turn: each its own request
            with using_session(f"weather-session-{turn + 1}"):
                answer = openai_turn(base_url)
    elif name == "spanguard-genai-openai":
        answer = spanguard_wrapped_turns(base_url, otlp_url, int(turns))
    elif name == "logfire":
        answer = logfire_turn(base_url, provider)
    elif name == "pydantic-ai":
        answer = pydantic_ai_turn(base_url, provider)
    elif name == "openinference-agent":
        answer = openinference_agent_turns(base_url, otlp_url, name, int(turns))
    elif name == "openinference-langchain":
        from openinference.instrumentation import using_session
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
        with using_session("weather-session-1"):
            answer = langchain_turn(base_url)
    else:
        raise SystemExit(f"unknown instrumentor {name!r}")
    provider.shutdown()
    print(answer)


if __name__ == "__main__":
    main(*sys.argv[1:5])
