"""The request's counterfactual identity from every source apps use, in the documented order
(docs/attributes.md, "Identity"; issue 40): spanguard's attributes on the root, ``spanguard.*``
baggage (copied onto spans by ``configure()``), OpenInference ``metadata``, Langfuse trace
metadata, traceloop association properties."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from langfuse import Langfuse, propagate_attributes
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.traces.convert import traces_from_readable_spans
from spanguard_processor.traces.model import AgentTrace


def _identity(trace: AgentTrace) -> tuple[object, ...]:
    return trace.seed_id, trace.variant_id, trace.assignments, trace.repeat


def test_spanguard_baggage_reaches_spans_other_instrumentations_make() -> None:
    code = textwrap.dedent("""
        import json
        from opentelemetry import baggage, context, trace
        import spanguard
        from spanguard_processor.traces.convert import traces_from_readable_spans

        config = spanguard.configure(exporter="memory")
        ctx = context.get_current()
        for key, value in {"spanguard.seed_id": "s7", "spanguard.variant_id": "s7-b",
                           "spanguard.assignment.gender": "female", "spanguard.repeat": "2",
                           "tenant": "acme"}.items():
            ctx = baggage.set_baggage(key, value, ctx)
        token = context.attach(ctx)
        with trace.get_tracer("framework").start_as_current_span("handle turn"):
            with trace.get_tracer("framework").start_as_current_span("chat gpt-4o-mini"):
                pass
        context.detach(token)
        spanguard.force_flush()
        spans = config.exporter.get_finished_spans()
        (t,) = traces_from_readable_spans(spans)
        print(json.dumps([t.seed_id, t.variant_id, t.assignments, t.repeat,
                          sorted(spans[-1].attributes)]))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [
        "s7",
        "s7-b",
        {"gender": "female"},
        2,
        [
            "spanguard.assignment.gender",
            "spanguard.repeat",
            "spanguard.seed_id",
            "spanguard.variant_id",
        ],
    ]  # only spanguard's identity keys are copied


def test_langfuse_trace_metadata_gives_the_identity() -> None:
    exporter = InMemorySpanExporter()
    client = Langfuse(
        public_key="pk-lf-identity",
        secret_key="sk-lf-identity",
        base_url="http://127.0.0.1:9",
        tracer_provider=TracerProvider(),
        span_exporter=exporter,
    )
    metadata = {
        "seed_id": "s3",
        "variant_id": "s3-a",
        "assignments": json.dumps({"gender": "male"}),
        "repeat": "1",
    }
    with (
        client.start_as_current_observation(as_type="agent", name="support turn"),
        propagate_attributes(session_id="sess-1", metadata=metadata),
        client.start_as_current_observation(as_type="tool", name="lookup"),
    ):
        pass
    client.flush()
    client.shutdown()
    (trace,) = traces_from_readable_spans(exporter.get_finished_spans())
    assert _identity(trace) == ("s3", "s3-a", {"gender": "male"}, 1)


def test_the_sender_is_read_from_langfuse_and_openinference_user_and_session_keys() -> None:
    """Who sent a request (``suite mine`` counts people): the real Langfuse SDK's user and
    session, and OTel's older ``enduser.id`` on a child span."""
    exporter = InMemorySpanExporter()
    client = Langfuse(
        public_key="pk-lf-sender",
        secret_key="sk-lf-sender",
        base_url="http://127.0.0.1:9",
        tracer_provider=TracerProvider(),
        span_exporter=exporter,
    )
    with (
        client.start_as_current_observation(as_type="agent", name="support turn"),
        propagate_attributes(user_id="u-9", session_id="sess-1"),
        client.start_as_current_observation(as_type="tool", name="lookup"),
    ):
        pass
    client.flush()
    client.shutdown()
    (trace,) = traces_from_readable_spans(exporter.get_finished_spans())
    assert (trace.user_id, trace.session_id) == ("u-9", "sess-1")
    assert AgentTrace.from_dict(trace.to_dict()) == trace
    provider, memory = _provider()
    tracer = provider.get_tracer("app")
    with (
        tracer.start_as_current_span(
            "invoke_agent bank", attributes={"gen_ai.operation.name": "invoke_agent"}
        ),
        tracer.start_as_current_span("step", attributes={"enduser.id": "u-7"}),
    ):
        pass
    (other,) = traces_from_readable_spans(memory.get_finished_spans())
    assert (other.user_id, other.session_id) == ("u-7", None)
    assert "user_id" in other.to_dict() and "session_id" not in other.to_dict()


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_traceloop_association_properties_give_the_identity() -> None:
    # the keys traceloop-sdk's Traceloop.set_association_properties({...}) writes on every
    # span (SpanAttributes.TRACELOOP_ASSOCIATION_PROPERTIES + "." + key, in OpenLLMetry's
    # opentelemetry-semantic-conventions-ai); traceloop-sdk itself cannot be installed here
    provider, exporter = _provider()
    props = {
        "traceloop.association.properties.seed_id": "s4",
        "traceloop.association.properties.variant_id": "s4-b",
        "traceloop.association.properties.assignment.age": "70+",
    }
    tracer = provider.get_tracer("app")
    with (
        tracer.start_as_current_span(
            "support.workflow", attributes={"traceloop.span.kind": "workflow", **props}
        ),
        tracer.start_as_current_span(
            "openai.chat", attributes={"llm.request.type": "chat", **props}
        ),
    ):
        pass
    (trace,) = traces_from_readable_spans(exporter.get_finished_spans())
    assert _identity(trace) == ("s4", "s4-b", {"age": "70+"}, 0)


def test_spanguard_root_wins_then_openinference_then_langfuse_then_traceloop() -> None:
    provider, exporter = _provider()
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span(
        "agent",
        attributes={
            "openinference.span.kind": "AGENT",
            "spanguard.seed_id": "root-seed",
            "metadata": json.dumps({"variant_id": "oi-variant", "seed_id": "oi-seed"}),
            "langfuse.trace.metadata.variant_id": '"lf-variant"',
            "langfuse.trace.metadata.repeat": '"3"',
            "traceloop.association.properties.repeat": "5",
            "traceloop.association.properties.assignment.gender": "female",
        },
    ):
        pass
    (trace,) = traces_from_readable_spans(exporter.get_finished_spans())
    assert _identity(trace) == ("root-seed", "oi-variant", {"gender": "female"}, 3)
