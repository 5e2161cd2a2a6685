"""What each GenAI log event means once joined to its span, read from span files where the
log records come in another file, after the spans (OTLP-JSON, hand-written like the
Collector's file exporter writes them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spanguard_processor.inputs.readers import read_agent_traces_any

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT, CHAT = "eee19b7ec3c1b174", "eee19b7ec3c1b173"


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"kvlistValue": {"values": [{"key": k, "value": _value(v)} for k, v in value.items()]}}


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in values.items()]


def _files(tmp_path: Path, records: list[dict[str, Any]]) -> list[Path]:
    spans = [
        {
            "traceId": TRACE,
            "spanId": ROOT,
            "name": "turn",
            "startTimeUnixNano": "1000",
            "endTimeUnixNano": "9000",
            "attributes": _attrs({"spanguard.variant_id": "v1"}),
        },
        {
            "traceId": TRACE,
            "spanId": CHAT,
            "parentSpanId": ROOT,
            "name": "chat gpt-4o",
            "startTimeUnixNano": "2000",
            "endTimeUnixNano": "8000",
            "attributes": _attrs(
                {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
            ),
        },
    ]
    span_file, log_file = tmp_path / "spans.jsonl", tmp_path / "logs.jsonl"
    span_file.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    for record in records:
        record.setdefault("traceId", TRACE)
        record.setdefault("spanId", CHAT)
    log_file.write_text(
        json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}) + "\n"
    )
    return [span_file, log_file]


def _one(tmp_path: Path, records: list[dict[str, Any]]) -> Any:
    [trace] = list(read_agent_traces_any(_files(tmp_path, records)))
    return trace


def test_inference_details_fill_the_call_and_the_request(tmp_path: Path) -> None:
    trace = _one(
        tmp_path,
        [
            {
                "eventName": "gen_ai.client.inference.operation.details",
                "timeUnixNano": "8000",
                "attributes": _attrs(
                    {
                        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
                        "gen_ai.input.messages": [
                            {
                                "role": "user",
                                "parts": [{"type": "text", "content": "Can I rent here?"}],
                            }
                        ],
                        "gen_ai.output.messages": [
                            {
                                "role": "assistant",
                                "finish_reason": "stop",
                                "parts": [{"type": "text", "content": "Yes."}],
                            }
                        ],
                    }
                ),
            }
        ],
    )
    assert (trace.input, trace.output) == ("Can I rent here?", "Yes.")
    assert trace.llm_calls[0].finish_reasons == ("stop",)
    assert trace.unread == ()


def test_the_older_per_message_events_are_read_in_order(tmp_path: Path) -> None:
    trace = _one(
        tmp_path,
        [
            {
                "eventName": "gen_ai.system.message",
                "timeUnixNano": "2100",
                "body": _value({"content": "Be brief."}),
            },
            {
                "eventName": "gen_ai.user.message",
                "timeUnixNano": "2200",
                "body": _value({"content": "Can I rent here?"}),
            },
            {
                "timeUnixNano": "7900",
                "attributes": _attrs({"event.name": "gen_ai.choice"}),
                "body": _value(
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "No, sorry."},
                    }
                ),
            },
        ],
    )
    assert (trace.input, trace.output) == ("Can I rent here?", "No, sorry.")


def test_a_span_holding_content_wins_over_an_event(tmp_path: Path) -> None:
    files = _files(
        tmp_path,
        [
            {
                "eventName": "gen_ai.client.inference.operation.details",
                "attributes": _attrs(
                    {
                        "gen_ai.output.messages": [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": "from the event"}],
                            }
                        ]
                    }
                ),
            }
        ],
    )
    document = json.loads(files[0].read_text())
    chat = document["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    chat["attributes"] += _attrs(
        {
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "from the span"}]}]
            )
        }
    )
    files[0].write_text(json.dumps(document) + "\n")
    [trace] = list(read_agent_traces_any(files))
    assert trace.output == "from the span"


def test_log_records_of_no_span_are_left_out(tmp_path: Path) -> None:
    trace = _one(
        tmp_path,
        [
            {
                "eventName": "gen_ai.client.inference.operation.details",
                "spanId": "",
                "attributes": _attrs(
                    {
                        "gen_ai.output.messages": [
                            {"role": "assistant", "parts": [{"type": "text", "content": "orphan"}]}
                        ]
                    }
                ),
            }
        ],
    )
    assert trace.output is None


def test_an_operation_exception_marks_the_call_failed() -> None:
    from spanguard_processor.ingest.spans import SpanEvent, SpanRecord
    from spanguard_processor.traces.events import with_log_events

    chat = SpanRecord(
        trace_id=TRACE,
        span_id=CHAT,
        parent_span_id=ROOT,
        name="chat",
        start_ns=1,
        end_ns=2,
        attributes={"gen_ai.operation.name": "chat"},
        events=(
            SpanEvent(
                "gen_ai.client.operation.exception", 2, {"exception.type": "openai.APITimeoutError"}
            ),
        ),
    )
    [failed] = with_log_events([chat])
    assert failed.status_code == 2
    assert failed.attributes["error.type"] == "openai.APITimeoutError"
    assert failed.events == ()


def test_malformed_log_records_are_skipped_and_malformed_spans_still_located(
    tmp_path: Path,
) -> None:
    import pytest

    from spanguard.exceptions import TraceFormatError

    files = _files(tmp_path, [{"eventName": "gen_ai.user.message", "body": "not an AnyValue"}])
    with files[1].open("a") as out:
        out.write(
            '{"resourceLogs": 5}\n{"resourceLogs": [{"scopeLogs": [7, {"logRecords": "x"}]}]}\n'
        )
    [trace] = list(read_agent_traces_any(files))
    assert trace.variant_id == "v1"
    files[0].write_text('{"resourceSpans": [5, {"scopeSpans": 3}]}\n{"resourceSpans": 5}\n')
    with pytest.raises(TraceFormatError) as caught:
        list(read_agent_traces_any(files))
    assert str(files[0]) in str(caught.value)
