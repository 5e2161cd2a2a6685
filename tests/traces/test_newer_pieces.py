"""Newer pieces of the conventions (issue 48): what is mapped and what is only noted."""

from __future__ import annotations

import json

from spanguard_processor.ingest.spans import AttrValue, SpanRecord
from spanguard_processor.traces.convert import trace_from_records, traces_from_records

TRACE = "2" * 32


def _span(span_id: str, parent: str, name: str, attrs: dict[str, AttrValue]) -> SpanRecord:
    return SpanRecord(TRACE, span_id * 16, parent * 16 if parent else "", name, 1, 9, attrs)


def test_a_server_tool_call_part_is_a_tool_call_the_provider_ran() -> None:
    output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "server_tool_call", "id": "srv_1", "name": "web_search"},
                {"type": "text", "content": "Found it."},
            ],
            "finish_reason": "stop",
        }
    ]
    trace = trace_from_records(
        [
            _span("a", "", "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}),
            _span(
                "b",
                "a",
                "chat m",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.output.messages": json.dumps(output),
                },
            ),
        ]
    )
    assert [(c.name, c.id) for c in trace.trace.tool_calls] == [("web_search", "srv_1")]
    assert trace.llm_calls[0].tool_calls == ("web_search",)


def test_workflow_and_memory_operations_are_not_noted_but_unmapped_kinds_are() -> None:
    trace = trace_from_records(
        [
            _span("a", "", "invoke_workflow w", {"gen_ai.operation.name": "invoke_workflow"}),
            _span("b", "a", "search_memory m", {"gen_ai.operation.name": "search_memory"}),
            _span("c", "a", "plan", {"gen_ai.operation.name": "plan"}),
            _span("d", "a", "choose", {"openinference.span.kind": "DECISION"}),
            _span("e", "a", "template", {"openinference.span.kind": "PROMPT"}),
        ]
    )
    assert {(n.key, n.span) for n in trace.unread} == {
        ("gen_ai.operation.name=plan", "plan"),  # a plan with no steps recorded
        ("openinference.span.kind=DECISION", "choose"),
        ("openinference.span.kind=PROMPT", "template"),
    }


def test_parentless_mcp_calls_of_one_session_are_one_request() -> None:
    """An MCP client with no parent span: each ``tools/call`` its own trace, grouped by
    ``mcp.session.id`` like ``session.id``."""

    def call(trace: str, span: str, tool: str, session: str, start: int) -> SpanRecord:
        attrs: dict[str, AttrValue] = {"mcp.method.name": "tools/call", "mcp.session.id": session}
        return SpanRecord(
            trace * 32,
            span * 16,
            "",
            f"MCP send tools/call {tool}",
            start,
            start + 1,
            attrs,
            kind=3,
        )

    traces = traces_from_records(
        [
            call("3", "a", "lookup", "s1", 10),
            call("4", "b", "check", "s1", 20),
            call("5", "c", "lookup", "s2", 30),
        ]
    )
    assert [[c.name for c in t.trace.tool_calls] for t in traces] == [
        ["lookup", "check"],
        ["lookup"],
    ]
