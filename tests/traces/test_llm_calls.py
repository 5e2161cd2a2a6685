"""Model calls, requested tool calls, question/answer text and conversation grouping (#16).

Span attributes here are written in each convention's documented shape; the real
instrumentors are exercised end to end in tests/adapters/test_instrumentors.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard import semconv as sc
from spanguard_processor.cli import cli
from spanguard_processor.fairness import MetricConfig, evaluate, observation_from_record
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.ingest.spans import SpanRecord
from spanguard_processor.traces.convert import trace_from_records, traces_from_records
from spanguard_processor.traces.formats import (
    from_fairtrace_record,
    to_fairtrace_record,
    to_trace2eval_row,
)
from spanguard_processor.traces.model import AgentTrace, LLMCall, RetrievedDocument, ToolCall
from spanguard_processor.traces.pricing import apply_prices, load_prices

TRACE = "cd" * 16


def span(
    span_id: str,
    parent: str = "",
    *,
    name: str = "s",
    start: int = 10,
    end: int = 20,
    attrs: dict[str, object] | None = None,
    trace_id: str = TRACE,
) -> SpanRecord:
    return SpanRecord(
        trace_id, span_id * 8, parent * 8 if parent else "", name, start, end, attrs or {}
    )  # type: ignore[arg-type]


PARTS_IN = json.dumps(
    [
        {"role": "system", "parts": [{"type": "text", "content": "Be terse."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    ]
)
PARTS_OUT_TOOL = json.dumps(
    [
        {
            "role": "assistant",
            "finish_reason": "tool_call",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": {"city": "P"},
                }
            ],
        }
    ]
)
PARTS_OUT_TEXT = json.dumps(
    [
        {
            "role": "assistant",
            "finish_reason": "stop",
            "parts": [{"type": "text", "content": "Sunny."}],
        }
    ]
)


def gen_ai_turn(parent: str = "") -> list[SpanRecord]:
    common = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_PROVIDER_NAME: "openai",
        sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
        sc.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
    }
    return [
        span(
            "01",
            parent,
            start=10,
            end=20,
            attrs={
                **common,
                sc.GEN_AI_INPUT_MESSAGES: PARTS_IN,
                sc.GEN_AI_OUTPUT_MESSAGES: PARTS_OUT_TOOL,
                sc.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",),
                sc.GEN_AI_USAGE_INPUT_TOKENS: 20,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 9,
            },
        ),
        span(
            "02",
            parent,
            start=30,
            end=45,
            attrs={
                **common,
                sc.GEN_AI_INPUT_MESSAGES: PARTS_IN,
                sc.GEN_AI_OUTPUT_MESSAGES: PARTS_OUT_TEXT,
                sc.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                sc.GEN_AI_USAGE_INPUT_TOKENS: 30,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 7,
            },
        ),
    ]


def test_gen_ai_parts_give_llm_calls_requested_tools_and_text() -> None:
    trace = trace_from_records([span("00", end=50, name="turn"), *gen_ai_turn("00")])
    assert trace.input == "Weather in Paris?" and trace.output == "Sunny."
    assert (trace.input_source, trace.output_source) == (
        "llm:gen_ai.input.messages",
        "llm:gen_ai.output.messages",
    )
    assert trace.trace.tool_calls == (ToolCall("get_weather", "call_1", requested=True),)
    first, second = trace.llm_calls
    assert first == LLMCall(
        "openai",
        "gpt-4o-mini",
        "gpt-4o-mini-2024-07-18",
        20,
        9,
        ("tool_calls",),
        ("get_weather",),
        1e-5,
        None,
    )
    assert second.tool_calls == () and second.finish_reasons == ("stop",)
    assert trace.usage == {
        "llm_calls": 2,
        "input_tokens": 50,
        "output_tokens": 16,
        "total_tokens": 66,
        "cost_usd": None,
        "models": ["gpt-4o-mini-2024-07-18"],
    }
    assert AgentTrace.from_dict(json.loads(json.dumps(trace.to_dict()))) == trace


def test_a_requested_call_answered_by_a_tool_span_counts_once() -> None:
    tool = span(
        "03",
        "00",
        start=25,
        end=28,
        attrs={
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: "get_weather",
            sc.GEN_AI_TOOL_CALL_ID: "call_1",
        },
    )
    trace = trace_from_records([span("00", end=50), *gen_ai_turn("00"), tool])
    assert trace.trace.tool_calls == (ToolCall("get_weather"),)
    # without a call id the name matches
    tool = span(
        "03",
        "00",
        start=25,
        end=28,
        attrs={sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL, sc.TOOL_NAME: "get_weather"},
    )
    trace = trace_from_records([span("00", end=50), *gen_ai_turn("00"), tool])
    assert trace.trace.tool_calls == (ToolCall("get_weather"),)


def test_chat_shape_messages_and_a_bare_string_output_are_read() -> None:
    llm = span(
        "01",
        "00",
        attrs={
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.GEN_AI_INPUT_MESSAGES: json.dumps(
                [{"role": "system", "content": "sys"}, {"role": "user", "content": "Hi there?"}]
            ),
            sc.GEN_AI_OUTPUT_MESSAGES: "Hello.",
        },
    )
    trace = trace_from_records([span("00", end=30), llm])
    assert (trace.input, trace.output) == ("Hi there?", "Hello.")
    llm = span(
        "01",
        "00",
        attrs={
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(
                [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "c9", "type": "function", "function": {"name": "lookup"}}
                        ],
                    }
                ]
            ),
        },
    )
    trace = trace_from_records([span("00", end=30), llm])
    assert trace.trace.tool_calls == (ToolCall("lookup", "c9", requested=True),)


def test_openinference_flattened_messages_and_request_json() -> None:
    request = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "Weather in Paris?"},
        ],
        "tools": [{"type": "function"}],
    }
    llm = span(
        "01",
        attrs={
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_LLM,
            sc.LLM_MODEL_NAME: "gpt-4o-mini-2024",
            sc.LLM_INVOCATION_PARAMETERS: '{"model": "gpt-4o-mini"}',
            sc.LLM_SYSTEM: "openai",
            sc.INPUT_VALUE: json.dumps(request),
            sc.INPUT_MIME_TYPE: "application/json",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "sys",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Weather in Paris?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
            sc.LLM_FINISH_REASON: "tool_calls",
            sc.LLM_TOKEN_COUNT_PROMPT: 20,
            sc.LLM_TOKEN_COUNT_COMPLETION: 9,
            sc.LLM_COST_TOTAL: 0.25,
        },
    )
    trace = trace_from_records([llm])
    assert trace.input == "Weather in Paris?" and trace.input_source == ("llm:llm.input_messages")
    assert trace.trace.tool_calls == (ToolCall("get_weather", "call_1", requested=True),)
    (call,) = trace.llm_calls
    assert (call.provider, call.request_model, call.response_model) == (
        "openai",
        "gpt-4o-mini",
        "gpt-4o-mini-2024",
    )
    assert (call.input_tokens, call.output_tokens, call.finish_reasons, call.cost_usd) == (
        20,
        9,
        ("tool_calls",),
        0.25,
    )


def test_openinference_agent_root_json_input_becomes_its_text() -> None:
    root = span(
        "00",
        end=50,
        attrs={
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT,
            sc.INPUT_VALUE: json.dumps({"messages": [{"role": "user", "content": "Hello?"}]}),
            sc.INPUT_MIME_TYPE: "application/json",
            sc.OUTPUT_VALUE: "plain answer",
            sc.OUTPUT_MIME_TYPE: "text/plain",
        },
    )
    trace = trace_from_records([root])
    assert (trace.input, trace.input_source) == ("Hello?", "input.value:messages")
    assert (trace.output, trace.output_source) == (
        "plain answer",
        "input.value".replace("input", "output"),
    )
    # JSON nothing can be read from stays verbatim, marked as such
    root = span(
        "00",
        end=50,
        attrs={sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT, sc.INPUT_VALUE: '{"a": 1, "b": 2}'},
    )
    trace = trace_from_records([root])
    assert (trace.input, trace.input_source) == ('{"a": 1, "b": 2}', "input.value")


def test_older_openllmetry_attributes() -> None:
    workflow = span(
        "00",
        end=50,
        attrs={
            sc.TRACELOOP_SPAN_KIND: sc.TRACELOOP_KIND_WORKFLOW,
            sc.TRACELOOP_ENTITY_INPUT: json.dumps({"args": ["Weather in Paris?"], "kwargs": {}}),
            sc.TRACELOOP_ENTITY_OUTPUT: json.dumps("Sunny."),
        },
    )
    llm = span(
        "01",
        "00",
        attrs={
            sc.TRACELOOP_LLM_REQUEST_TYPE: "chat",
            sc.GEN_AI_SYSTEM: "openai",
            sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Weather in Paris?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": "call_1",
            "gen_ai.completion.0.tool_calls.0.name": "get_weather",
            sc.GEN_AI_USAGE_PROMPT_TOKENS: 20,
            sc.GEN_AI_USAGE_COMPLETION_TOKENS: 9,
        },
    )
    trace = trace_from_records([workflow, llm])
    assert (trace.input, trace.input_source) == ("Weather in Paris?", "traceloop.entity.input:args")
    assert (trace.output, trace.output_source) == ("Sunny.", "traceloop.entity.output:json")
    assert trace.trace.tool_calls == (ToolCall("get_weather", "call_1", requested=True),)
    (call,) = trace.llm_calls
    assert (call.provider, call.input_tokens, call.output_tokens, call.finish_reasons) == (
        "openai",
        20,
        9,
        ("tool_calls",),
    )


@pytest.mark.parametrize(
    "key",
    [sc.GEN_AI_CONVERSATION_ID, sc.SESSION_ID, sc.TRACELOOP_ASSOCIATION_PREFIX + "session_id"],
)
def test_parentless_calls_of_one_conversation_are_one_request(key: str) -> None:
    first, second = gen_ai_turn()
    first = span(
        "01", start=10, end=20, trace_id="01" * 16, attrs={**first.attributes, key: "conv-7"}
    )
    second = span(
        "02", start=30, end=45, trace_id="02" * 16, attrs={**second.attributes, key: "conv-7"}
    )
    other = span("03", start=50, end=60, trace_id="03" * 16, attrs=dict(first.attributes))
    other.attributes[key] = "conv-8"  # type: ignore[index]
    traces = traces_from_records([second, first, other])
    assert [len(t.llm_calls) for t in traces] == [2, 1]
    turn = traces[0]
    assert (turn.input, turn.output, turn.latency_ms) == ("Weather in Paris?", "Sunny.", 35e-6)
    assert turn.trace.tool_calls == (ToolCall("get_weather", "call_1", requested=True),)
    assert turn.trace_id == "01" * 16 and not turn.partial


def test_without_a_conversation_key_each_parentless_call_is_its_own_request() -> None:
    first, second = gen_ai_turn()
    second = span("02", start=30, end=45, trace_id="02" * 16, attrs=dict(second.attributes))
    assert len(traces_from_records([first, second])) == 2


def test_openinference_document_id_and_score_from_metadata() -> None:
    retriever = span(
        "01",
        attrs={
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_RETRIEVER,
            "retrieval.documents.0.document.content": "x",
            "retrieval.documents.0.document.metadata": json.dumps({"id": "kb-3", "score": 0.7}),
            "retrieval.documents.1.document.id": "top",
            "retrieval.documents.1.document.metadata": json.dumps(
                {"id": "ignored", "relevance_score": 0.2}
            ),
        },
    )
    trace = trace_from_records([retriever])
    assert trace.trace.retrieved_documents == (
        RetrievedDocument("kb-3", None, 1, 0.7),
        RetrievedDocument("top", None, 2, 0.2),
    )


def turn_trace() -> AgentTrace:
    return trace_from_records([span("00", end=50), *gen_ai_turn("00")])


def test_fairtrace_and_trace2eval_carry_the_model_calls() -> None:
    trace = turn_trace()
    record = to_fairtrace_record(trace)
    block = record["response_metadata"]["spanguard"]
    assert block["usage"]["llm_calls"] == 2 and len(block["llm_calls"]) == 2
    assert record["response_metadata"]["trace"]["tool_calls"] == [{"name": "get_weather"}]
    assert from_fairtrace_record(record) == trace
    row = to_trace2eval_row(trace)
    assert row["usage"]["total_tokens"] == 66 and row["cost_usd"] is None


def test_prices_fill_in_cost_from_tokens(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input: 0.15, output: 0.6}\ngpt-4o: {input: 5, output: 15}\n")
    priced = apply_prices(turn_trace(), load_prices(prices))
    assert priced.cost_usd == pytest.approx((50 * 0.15 + 16 * 0.6) / 1e6)
    assert [c.cost_usd for c in priced.llm_calls] == pytest.approx(
        [(20 * 0.15 + 9 * 0.6) / 1e6, (30 * 0.15 + 7 * 0.6) / 1e6]
    )
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(turn_trace().to_dict()) + "\n")
    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(
        cli,
        [
            "traces",
            "convert",
            str(traces),
            "-f",
            "trace2eval",
            "--prices",
            str(prices),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["cost_usd"] == pytest.approx(priced.cost_usd)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-4o: {input: 1}\n", "field 'gpt-4o.output': is required"),
        ("gpt-4o: {input: 1, output: -2}\n", "field 'gpt-4o.output': must be a non-negative"),
        ("gpt-4o: {input: 1, output: 2, cached: 3}\n", "field 'gpt-4o.cached': unknown key"),
        ("gpt-4o: [1, 2\n", "prices.yaml:2: is not valid YAML"),
    ],
)
def test_a_bad_price_table_is_named_and_exits_2(tmp_path: Path, text: str, message: str) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(text)
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(turn_trace().to_dict()) + "\n")
    result = CliRunner().invoke(
        cli,
        [
            "traces",
            "convert",
            str(traces),
            "--prices",
            str(prices),
            "-o",
            str(tmp_path / "o.jsonl"),
        ],
    )
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def _records(calls_by_group: dict[str, list[int]]) -> list[dict[str, object]]:
    records = []
    for group, counts in calls_by_group.items():
        for seed, count in enumerate(counts):
            llm = [
                span(
                    f"{i + 1:02d}",
                    "00",
                    start=10 + i,
                    attrs={
                        sc.GEN_AI_OPERATION_NAME: "chat",
                        sc.GEN_AI_USAGE_INPUT_TOKENS: 100,
                        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 50,
                    },
                )
                for i in range(count)
            ]
            root = span(
                "00",
                end=90,
                attrs={
                    sc.REQUEST_ID: f"{group}-{seed}",
                    sc.SEED_ID: f"s{seed}",
                    sc.VARIANT_ID: f"s{seed}::{group}",
                    sc.assignment_key("group"): group,
                },
            )
            records.append(to_fairtrace_record(trace_from_records([root, *llm])))
    return records


def test_llm_call_and_token_gaps_across_groups() -> None:
    records = _records({"a": [1, 1, 1, 1, 1, 1], "b": [3, 3, 3, 3, 3, 3]})
    obs = [observation_from_record(r) for r in records]
    assert obs[0].usage is not None and obs[0].usage["llm_calls"] == 1
    results = {
        r.metric: r
        for r in evaluate(
            obs, [MetricConfig("llm_call_gap", 1.0), MetricConfig("token_gap", 200.0)]
        ).results
    }
    assert results["llm_call_gap"].score == 2.0
    assert results["llm_call_gap"].details["average_counts"] == {"group=a": 1.0, "group=b": 3.0}
    assert results["token_gap"].score == 300.0
    assert results["token_gap"].details["missing_token_count_records"] == 0
    same = [
        observation_from_trace(from_fairtrace_record(r))
        for r in _records({"a": [2, 2, 2], "b": [2, 2, 2]})
    ]
    result = evaluate(same, [MetricConfig("llm_call_gap", 1.0)]).results[0]
    assert result.score == 0.0 and result.records == 6


def test_an_agent_trace_with_model_calls_is_still_read_as_an_agent_trace_by_cases(
    tmp_path: Path,
) -> None:
    from spanguard_processor.regression.mine.loader import load_logs

    root = span(
        "00",
        end=50,
        attrs={sc.REQUEST_ID: "req-7", sc.INPUT_VALUE: "Weather?", sc.OUTPUT_VALUE: "Sunny."},
    )
    data = trace_from_records([root, *gen_ai_turn("00")]).to_dict()
    assert "usage" in data and "llm_calls" in data
    log = tmp_path / "traces.jsonl"
    log.write_text(json.dumps(data) + "\n", encoding="utf-8")
    loaded = load_logs([log])
    assert [row.id for row in loaded.rows] == ["req-7"] and loaded.agent_traces == 1


def test_a_tool_span_root_is_not_taken_for_the_question() -> None:
    tool = span(
        "00",
        start=5,
        end=8,
        trace_id="09" * 16,
        attrs={
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL,
            sc.TOOL_NAME: "get_weather",
            sc.SESSION_ID: "s1",
            sc.INPUT_VALUE: "Paris",
            sc.OUTPUT_VALUE: "sunny",
        },
    )
    first, second = gen_ai_turn()
    calls = [
        span(
            s.span_id[:2],
            start=s.start_ns,
            end=s.end_ns,
            trace_id=f"{i:02d}" * 16,
            attrs={**s.attributes, sc.SESSION_ID: "s1"},
        )
        for i, s in enumerate((first, second), start=1)
    ]
    (trace,) = traces_from_records([tool, *calls])
    assert (trace.input, trace.output) == ("Weather in Paris?", "Sunny.")
    assert trace.trace.tool_calls == (ToolCall("get_weather"),)


def test_nested_model_call_spans_are_one_call_and_siblings_stay_two() -> None:
    """spanguard.llm_call around an instrumented client (issue 40): the inner span's values
    win, the outer's fill gaps, a child of the inner moves to the outer; sibling calls are
    two calls."""
    from spanguard_processor.ingest.spans import SpanRecord
    from spanguard_processor.traces.convert import trace_from_records

    tid = "a" * 32

    def span(sid: str, parent: str, name: str, start: int, attrs: dict[str, object]) -> SpanRecord:
        return SpanRecord(tid, sid, parent, name, start, start + 10, attrs)  # type: ignore[arg-type]

    chat = {"gen_ai.operation.name": "chat"}
    spans = [
        span(
            "0000000000000001", "", "invoke_agent a", 1, {"gen_ai.operation.name": "invoke_agent"}
        ),
        span(
            "0000000000000002",
            "0000000000000001",
            "chat m",
            2,
            {**chat, "gen_ai.request.model": "m", "spanguard.cost_usd": 0.5},
        ),
        span(
            "0000000000000003",
            "0000000000000002",
            "chat m",
            3,
            {
                **chat,
                "gen_ai.request.model": "m",
                "gen_ai.response.model": "m-1",
                "gen_ai.usage.input_tokens": 7,
                "gen_ai.usage.output_tokens": 2,
            },
        ),
        span(
            "0000000000000004",
            "0000000000000003",
            "execute_tool k",
            4,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "k"},
        ),
        span(
            "0000000000000005",
            "0000000000000001",
            "chat m",
            20,
            {**chat, "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 1},
        ),
    ]
    trace = trace_from_records(spans)
    assert [(c.response_model, c.input_tokens, c.cost_usd) for c in trace.llm_calls] == [
        ("m-1", 7, 0.5),
        (None, 1, None),
    ]
    assert [t.name for t in trace.trace.tool_calls] == ["k"]
