"""Mining reads an agent trace from its typed fields: the rows it makes are those of the same
trace written as a trace2eval row, and its problems read the same."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from spanguard.exceptions import TraceFormatError
from spanguard_processor.regression.mine.loader import LoadResult, Row, load_logs
from spanguard_processor.traces.formats import to_trace2eval_row
from spanguard_processor.traces.model import AgentTrace

from .loan_agent import applications, serve

SPANS = Path(__file__).parents[1] / "data" / "otel" / "python_otlp_json_file_exporter.jsonl"

# What an agent trace may hold that the row reading treats specially: ids to fall back from,
# feedback labels and numbers (scaled over the log), a missing answer, a retry, expect blocks
# (none, empty, one, a bad one).
_PATCHES: list[dict[str, Any]] = [
    {},
    {"request_id": "  "},
    {"request_id": None},
    {"feedback": 3},
    {"feedback": 5},
    {"feedback": 0.2},
    {"feedback": "bad"},
    {"feedback": True},
    {"feedback": "  "},
    {"output": None},
    {"output": ""},
    {"latency_ms": None, "cost_usd": 0.5},
    {"retried": True},
    {"expect": {}},
    {"expect": {"contains": "loan", "min_chars": 5}},
    {"expect": {"min_chars": "many"}},
    {"latency_ms": 12},
]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _agent_traces() -> list[dict[str, Any]]:
    served = serve(applications(6), 3)
    traces = []
    for i, patch in enumerate(_PATCHES):
        trace = {**served[i % len(served)], **patch, "trace_id": f"t{i:02d}"}
        traces.append(trace)
    return traces


def _comparable(result: LoadResult, name: str) -> tuple[list[Row], list[str]]:
    rows = [replace(row, file="") for row in result.rows]
    problems = [
        p.message.replace(name, "FILE") + ("" if p.skipped else " (kept)") for p in result.problems
    ]
    return rows, problems


def test_agent_traces_mine_the_rows_of_their_trace2eval_rows(tmp_path: Path) -> None:
    traces = _agent_traces()
    agent = _write(tmp_path / "agent.jsonl", traces)
    rows = _write(
        tmp_path / "rows.jsonl", [to_trace2eval_row(AgentTrace.from_dict(t)) for t in traces]
    )
    from_agent = load_logs([agent])
    from_rows = load_logs([rows])
    assert _comparable(from_agent, agent.as_posix()) == _comparable(from_rows, rows.as_posix())
    assert from_agent.agent_traces == len(traces) and from_rows.agent_traces == 0
    # the patches do reach the rows: ids fall back, numeric feedback is scaled, one is skipped
    ids = [row.id for row in from_agent.rows]
    assert ids[:3] == [traces[0]["request_id"], "t01", "t02"]
    assert {row.feedback for row in from_agent.rows} == {None, "negative", "positive"}
    assert len(from_agent.rows) == len(traces) - 1
    assert all(
        row.process == AgentTrace.from_dict(t).trace
        for row, t in zip(
            from_agent.rows, [t for t in traces if "many" not in str(t["expect"])], strict=True
        )
    )


def test_a_trace_without_input_is_skipped_with_the_export_s_message(tmp_path: Path) -> None:
    trace = {**_agent_traces()[0], "input": " "}
    with pytest.raises(TraceFormatError) as raised:
        to_trace2eval_row(AgentTrace.from_dict(trace))
    log = _write(tmp_path / "agent.jsonl", [trace])
    result = load_logs([log])
    assert result.rows == [] and result.agent_traces == 0
    assert [p.message for p in result.problems] == [
        f"{log.as_posix()}:1: field 'input': {raised.value.detail.rstrip('.')}; line skipped."
    ]


def test_a_span_file_s_unnamed_tool_span_leaves_the_process_out_with_a_warning(
    tmp_path: Path,
) -> None:
    lines = []
    for line in SPANS.read_text(encoding="utf-8").splitlines():
        document = json.loads(line)
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["name"].startswith("execute_tool"):
                        span["name"] = "   "
                        span["attributes"] = [
                            a
                            for a in span["attributes"]
                            if a["key"] not in ("gen_ai.tool.name", "tool.name")
                        ]
        lines.append(json.dumps(document))
    spans = tmp_path / "spans.jsonl"
    spans.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = load_logs([spans])
    assert [row.process for row in result.rows] == [None]
    assert [(p.message, p.skipped) for p in result.problems] == [
        (
            f"{spans.as_posix()}:1: field 'trace.tool_calls[0].name': must not be empty. "
            "The process trace is ignored.",
            False,
        )
    ]
    assert load_logs([SPANS]).rows[0].process is not None
