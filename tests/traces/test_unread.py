"""The per-trace note of keys that look like a signal but are not read (issue 36)."""

from __future__ import annotations

from spanguard_processor.ingest.spans import SpanEvent, SpanRecord
from spanguard_processor.traces.convert import trace_from_records
from spanguard_processor.traces.unread import MAX_NOTES, unread_keys


def _span(
    name: str,
    span_id: str,
    attributes: dict[str, object],
    parent: str = "r",
    events: tuple[SpanEvent, ...] = (),
) -> SpanRecord:
    return SpanRecord(
        "t" * 32,
        span_id,
        parent,
        name,
        1,
        2,
        attributes,  # type: ignore[arg-type]
        events,
    )


_ROOT = _span("invoke_agent support", "r", {"gen_ai.operation.name": "invoke_agent"}, "")


def test_keys_of_unread_conventions_are_noted_per_span_name_with_counts() -> None:
    spans = [
        _ROOT,
        _span("credit_check", "a", {"langfuse.observation.type": "tool"}),
        _span("credit_check", "b", {"langfuse.observation.type": "tool"}),
        _span("embed", "f", {"langfuse.observation.type": "embedding"}),
        _span("rerank", "c", {"openinference.span.kind": "RERANKER"}),
        _span("step", "d", {"traceloop.span.kind": "task", "app.escalated": True}),
        _span(
            "llm",
            "e",
            {"langfuse.observation.type": "generation", "langfuse.observation.output": "hi"},
            events=(SpanEvent("gen_ai.choice", 1, {}), SpanEvent("spanguard.escalation", 1, {})),
        ),
    ]
    notes = [(n.key, n.span, n.count) for n in trace_from_records(spans).unread]
    # Langfuse tool and generation spans and their input/output are read (issue 40)
    assert notes == [
        ("app.escalated", "step", 1),
        ("event gen_ai.choice", "llm", 1),
        ("langfuse.observation.type=embedding", "embed", 1),
        ("openinference.span.kind=RERANKER", "rerank", 1),
        ("traceloop.span.kind=task", "step", 1),
    ]


def test_spans_the_conversion_reads_are_not_noted() -> None:
    spans = [
        _ROOT,
        _span(
            "execute_tool kb",
            "a",
            {"gen_ai.operation.name": "execute_tool", "langfuse.observation.type": "tool"},
        ),
        _span(
            "chat m",
            "b",
            {
                "gen_ai.operation.name": "chat",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "x",
            },
        ),
    ]
    assert unread_keys(spans) == ()


def test_the_note_is_bounded() -> None:
    spans = [
        _ROOT,
        *(
            _span(f"tool{i}", f"s{i}", {"langfuse.observation.type": "embedding"})
            for i in range(MAX_NOTES + 10)
        ),
    ]
    assert len(unread_keys(spans)) == MAX_NOTES


def test_a_logfire_scrubbed_value_is_absent_and_noted() -> None:
    spans = [
        _span(
            "invoke_agent support",
            "r",
            {
                "gen_ai.operation.name": "invoke_agent",
                "input.value": "What is my balance?",
                "output.value": "[Scrubbed due to 'password']",
            },
            "",
        )
    ]
    trace = trace_from_records(spans)
    assert (trace.input, trace.output) == ("What is my balance?", None)
    assert [(n.key, n.span, n.count) for n in trace.unread] == [
        ("output.value=<placeholder>", "invoke_agent support", 1)
    ]
