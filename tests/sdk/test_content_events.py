"""Content as GenAI log events (issue 39): with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`` ``configure()`` keeps prompts and
answers off the spans and sends them as log records beside them over OTLP (a real OTLP/HTTP
receiver); the processor reads them back into the request."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import spanguard
from spanguard import semconv
from spanguard_processor.inputs.readers import read_agent_traces_any
from tests.emit.logs_sinks import HttpLogsSink

QUESTION = "Can I rent a flat near the station?"
ANSWER = "Yes: three flats are free from next month."


def _turn() -> None:
    with spanguard.request("renter_support", seed_id="s1", variant_id="s1::1") as request:
        request.set_input(QUESTION)
        with spanguard.llm_call("gpt-4o-mini", provider="openai") as call:
            call.set_input(QUESTION)
            call.set_output(ANSWER)
        request.set_output(ANSWER)


def _export(monkeypatch: pytest.MonkeyPatch, mode: str, sink: HttpLogsSink) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode)
    spanguard.configure(
        exporter="otlp-http", endpoint=sink.url, private=True, service_name="renter-support"
    )
    try:
        _turn()
        assert spanguard.force_flush()  # the spans and the content events
        expected = 0 if mode == "SPAN_ONLY" else 2
        assert len(sink.records) == expected and sink.trace_bodies
    finally:
        spanguard.shutdown()


def _file(tmp_path: Path, sink: HttpLogsSink) -> Path:
    path = tmp_path / "otel.binpb"
    with path.open("wb") as out:  # the Collector file exporter's protobuf layout
        for body in [*sink.log_bodies, *sink.trace_bodies]:
            out.write(struct.pack(">I", len(body)) + body)
    return path


def test_event_only_sends_content_as_log_records_and_none_on_spans(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with HttpLogsSink() as sink:
        _export(monkeypatch, "EVENT_ONLY", sink)
        records = sink.wait_for(2, timeout=10)
    spans = b"".join(sink.trace_bodies)
    assert spans and QUESTION.encode() not in spans and ANSWER.encode() not in spans
    names = sorted(r.event_name for r in records)
    assert names == [semconv.EVENT_INFERENCE_DETAILS, semconv.EVENT_CONTENT]
    [details] = [r for r in records if r.event_name == semconv.EVENT_INFERENCE_DETAILS]
    assert QUESTION in details.attributes[semconv.GEN_AI_INPUT_MESSAGES]
    assert ANSWER in details.attributes[semconv.GEN_AI_OUTPUT_MESSAGES]
    assert details.attributes[semconv.GEN_AI_OPERATION_NAME] == "chat"
    assert all(len(r.trace_id) == 32 and len(r.span_id) == 16 for r in records)
    [trace] = list(read_agent_traces_any([_file(tmp_path, sink)]))
    assert (trace.input, trace.output) == (QUESTION, ANSWER)
    assert trace.llm_calls[0].request_model == "gpt-4o-mini"


def test_span_and_event_records_both_and_span_only_no_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HttpLogsSink() as both:
        _export(monkeypatch, "SPAN_AND_EVENT", both)
        assert len(both.wait_for(2, timeout=10)) == 2
    assert ANSWER.encode() in b"".join(both.trace_bodies)
    # the OpenInference flat keys (issue 40) stay on the span beside the event
    assert b"llm.output_messages.0.message.content" in b"".join(both.trace_bodies)
    with HttpLogsSink() as spans_only:
        _export(monkeypatch, "SPAN_ONLY", spans_only)
    assert spans_only.records == [] and spans_only.log_bodies == []
    assert ANSWER.encode() in b"".join(spans_only.trace_bodies)
