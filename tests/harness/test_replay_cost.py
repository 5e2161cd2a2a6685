"""What the replay leaves out to stay within `spanguard run`'s harness per app call (issue 46,
bench/bench_adapters.py --harness-only): the unread-key notes nobody reads there, and a copy
of a process that is already as evidence keeps it. Neither changes what is scored."""

from __future__ import annotations

from opentelemetry import trace

from spanguard_processor.harness.calls import Job, call_app
from spanguard_processor.regression.run.outputs import _shown
from spanguard_processor.traces.parts import ProcessTrace, RetrievedDocument, ToolCall


def _app_with_an_unread_key(prompt: str) -> str:
    with trace.get_tracer("test").start_as_current_span("step") as span:
        span.set_attribute("traceloop.span.kind", "task")  # looks like a signal, not read
    return "Refunds take 5 days."


def test_the_unread_notes_are_computed_only_when_asked_for() -> None:
    jobs = [Job("request", "Refund?", {}, 0, request_id="case-1#0")]
    (noted,) = call_app(_app_with_an_unread_key, jobs, lambda raw: None)
    (plain,) = call_app(_app_with_an_unread_key, jobs, lambda raw: None, diagnose=False)
    assert noted.trace is not None and plain.trace is not None
    assert [n.key for n in noted.trace.unread] == ["traceloop.span.kind=task"]
    assert plain.trace.unread == ()
    assert plain.trace.output == noted.trace.output == "Refunds take 5 days."
    assert plain.trace.trace == noted.trace.trace


def test_evidence_keeps_a_plain_process_as_it_is_and_strips_the_rest() -> None:
    plain = ProcessTrace(tool_calls=(ToolCall("lookup"),), plan_steps=("a",))
    assert _shown(plain) is plain
    detailed = ProcessTrace(
        tool_calls=(ToolCall("lookup", id="call-1", requested=True),),
        retrieved_documents=(RetrievedDocument("d1", "A", 1, score=0.9),),
    )
    shown = _shown(detailed)
    assert shown == ProcessTrace(
        tool_calls=(ToolCall("lookup"),),
        retrieved_documents=(RetrievedDocument("d1", "A", 1),),
    )
