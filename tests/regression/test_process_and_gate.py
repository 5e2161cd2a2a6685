"""Process-aware cases from agent traces, and the ``check`` gate."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import write_jsonl
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, RetrievedDocument, ToolCall

from .runs import write_run

QUESTION = "How do I get a refund for order 1234?"
ANSWER = (
    "Refunds for order 1234 are issued to the original payment method within 5 business "
    "days once the return has been received."
)


def _trace(
    n: int,
    *,
    text: str = QUESTION,
    output: str = ANSWER,
    tools: tuple[str, ...] = ("lookup_order", "refund_policy"),
    escalated: bool = False,
    feedback: str | None = None,
) -> AgentTrace:
    return AgentTrace(
        trace_id=f"{n:032x}",
        request_id=f"req-{n}",
        input=text,
        output=output,
        latency_ms=800.0,
        cost_usd=0.0002,
        feedback=feedback,
        trace=ProcessTrace(
            tool_calls=tuple(ToolCall(t) for t in tools),
            retrieved_documents=(
                RetrievedDocument("kb-refunds", "policy", 1, 0.9),
                RetrievedDocument(f"kb-{n}", "misc", 2, 0.5),
            ),
            escalated=escalated,
        ),
    )


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _production(tmp_path: Path) -> Path:
    traces = [_trace(i) for i in range(1, 4)]
    traces.append(_trace(4, escalated=True, feedback="negative"))  # the complaint
    traces += [
        _trace(
            10 + i,
            text=f"unrelated question number {i} about shipping zones",
            output="We ship to every country in the EU within a week.",
            tools=("ship",),
        )
        for i in range(6)
    ]
    path = tmp_path / "production.jsonl"
    write_jsonl(path, [t.to_dict() for t in traces])
    return path


def test_agent_traces_give_cases_with_process_expectations(tmp_path: Path) -> None:
    result = _invoke("cases", "build", str(_production(tmp_path)), "-o", str(tmp_path / "ev"))
    assert result.exit_code == 0, result.stderr
    assert "  10 of them are agent traces with a process trace" in result.stdout
    cases = [
        json.loads(line) for line in (tmp_path / "ev" / "cases.jsonl").read_text().splitlines()
    ]
    # The escalated complaint is a different process from its three clean siblings: its own
    # case, with checks learned from the siblings; the siblings' path and the shipping
    # question get a case each too (every path of the traffic is covered).
    assert [(c["source_trace_id"], c["occurrences_in_log"]) for c in cases] == [
        ("req-4", 1),
        ("req-1", 3),
        ("req-10", 6),
    ]
    assert "coverage: 3 of 3 question(s) (100%), 10 of 10 request(s) (100%)" in result.stdout
    case = cases[0]
    assert "  1 cluster(s) of near-duplicate questions split by process" in result.stdout
    assert case["trace_checks"] == [
        {"type": "tools_include", "value": ["lookup_order", "refund_policy"]},
        {"type": "tool_sequence", "value": ["lookup_order", "refund_policy"]},
        {"type": "escalated", "value": False},
        {"type": "max_friction_points", "value": 0},
        {"type": "doc_in_top_k", "value": "kb-refunds", "k": 5},
    ]
    report = (tmp_path / "ev" / "report.md").read_text()
    assert (
        f"| {case['id']} | tools_include, tool_sequence, escalated, max_friction_points, "
        f"doc_in_top_k | {QUESTION} |"
    ) in report
    # The text was fine; the escalation is what reproduces the failure.
    assert case["self_check"] == {"passed": False, "failed_checks": ["escalated"], "verdict": "ok"}


def test_check_catches_an_agent_that_keeps_the_text_but_drops_a_tool_call(tmp_path: Path) -> None:
    assert (
        _invoke(
            "cases",
            "build",
            str(_production(tmp_path)),
            "-o",
            str(tmp_path / "ev"),
            "--select",
            "signals",
        ).exit_code
        == 0  # one case: the complaint's question
    )
    cases = str(tmp_path / "ev" / "cases.jsonl")
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_jsonl(good, [_trace(100).to_dict()])
    write_jsonl(bad, [_trace(101, tools=("refund_policy",)).to_dict()])  # same text, one tool less
    base = _invoke(
        "cases", "run", "--cases", cases, "--traces", str(good), "-o", str(tmp_path / "base.json")
    )
    assert base.exit_code == 0, base.stderr
    now = _invoke(
        "cases",
        "run",
        "--cases",
        cases,
        "--traces",
        str(bad),
        "-o",
        str(tmp_path / "now.json"),
        "--show-failures",
        "--junit",
        str(tmp_path / "run.xml"),
    )
    assert now.exit_code == 0
    (case_id,) = json.loads((tmp_path / "now.json").read_text())["case_results"]
    assert f"  {case_id}: tools_include, tool_sequence" in now.stdout
    suite = ET.parse(tmp_path / "run.xml").getroot()
    assert suite.get("failures") == "1"
    gate = _invoke(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        str(tmp_path / "base.json"),
        "--current",
        str(tmp_path / "now.json"),
        "--junit",
        str(tmp_path / "check.xml"),
        "--markdown",
        str(tmp_path / "check.md"),
    )
    assert gate.exit_code == 1
    # One case is too few for the aggregate rates to beat noise; the case itself fails the gate.
    assert (
        "trace_compliance_rate dropped by 1.0000 (allowed 0.0200), but within run-to-run "
        "noise (1 case(s) worse, 0 better, McNemar p=0.5 ≥ 0.05)" in gate.stdout
    )
    assert (
        f"| case_outcomes | 1 | 1 | 1 case(s) passed before and now fail a content or "
        f"process check: {case_id} |" in gate.stdout
    )
    assert f"cases that went from pass to fail (1): {case_id}" in gate.stdout
    assert (
        gate.stderr == "\nFAIL: 1 case(s) regressed (1 pass → fail); rule(s) failed: "
        "case_outcomes\n"
    )
    failures = [
        f.get("message") for f in ET.parse(tmp_path / "check.xml").getroot().iter("failure")
    ]
    assert f"{case_id} passed in the baseline and fails now" in failures
    assert (tmp_path / "check.md").read_text().startswith("baseline\n| Metric | Value |")


def test_gate_and_run_reject_bad_files_with_exit_2(tmp_path: Path) -> None:
    base = str(write_run(tmp_path / "b.json", {"c1": ()}))
    result = _invoke("check", "--baseline", base, "--current", base, "--tolerance-scale", "-1")
    assert (result.exit_code, result.stderr.strip()) == (
        2,
        "Error: --tolerance-scale: must be a finite number ≥ 0, got -1.0.",
    )
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    result = _invoke("check", "--baseline", base, "--current", str(listed))
    assert (result.exit_code, result.stderr.strip()) == (
        2,
        f"Error: {listed.as_posix()}: must hold a JSON object; `check` compares two run results "
        "written by `spanguard cases run -o FILE` (or trace2eval 0.5.1's `run -o FILE`).",
    )
    dup = tmp_path / "dup.json"
    dup.write_text('{"metrics": {"pass_rate": 1}, "case_results": {"c1": "pass", "c1": "fail"}}')
    result = _invoke("check", "--baseline", base, "--current", str(dup))
    assert result.exit_code == 2 and "repeats the key 'c1'" in result.stderr
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "checks": []}\n{"id": "a", "checks": []}\n')
    out = tmp_path / "o.jsonl"
    out.write_text('{"id": "a", "output": "x"}\n')
    result = _invoke("cases", "run", "--cases", str(cases), "--outputs", str(out))
    assert (result.exit_code, result.stderr.strip()) == (
        2,
        f"Error: {cases.as_posix()}:2: field 'id': repeats case id 'a' (first on line 1).",
    )
    cases.write_text('{"id": "a", "checks": []}\n{"id": "b", "checks": [}\n')
    result = _invoke("cases", "run", "--cases", str(cases), "--outputs", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {cases.as_posix()}:2: is not valid JSON")


def test_run_counts_unreadable_output_lines(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "checks": [{"type": "min_chars", "value": 2}]}\n')
    out = tmp_path / "o.jsonl"
    out.write_text('{"id": "a", "completion": "hello"}\n{oops\n')
    result = _invoke(
        "cases", "run", "--cases", str(cases), "--outputs", str(out), "-o", str(tmp_path / "m.json")
    )
    assert result.exit_code == 0
    assert (
        f"skipped: {out.as_posix()}:2: is not valid UTF-8 JSON (JSONDecodeError); line skipped."
        in result.stderr
    )
    metrics = json.loads((tmp_path / "m.json").read_text())["metrics"]
    assert (metrics["pass_rate"], metrics["skipped_output_lines"]) == (1.0, 1)


def test_span_files_and_stores_are_read_through_the_processor_readers(tmp_path: Path) -> None:
    from tests.agent_app import in_memory_spans
    from tests.inputs.test_readers import PY_EXPORTER, proto_file

    proto = proto_file(tmp_path / "spans.binpb", in_memory_spans(3).get_finished_spans())
    result = _invoke(
        "cases",
        "build",
        str(PY_EXPORTER),
        str(proto),
        "-o",
        str(tmp_path / "ev"),
        "--min-score",
        "0.5",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"read 4 traces from {PY_EXPORTER.as_posix()}, {proto.as_posix()}",
        "  4 of them are agent traces with a process trace",
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps(
            {
                "id": "c1",
                "input": "Question number 0: how do I reset my password?",
                "checks": [{"type": "not_fallback"}],
                "trace_checks": [
                    {"type": "tools_include", "value": ["kb_search"]},
                    {"type": "escalated", "value": True},
                ],
            }
        )
        + "\n"
    )
    run = _invoke(
        "cases",
        "run",
        "--cases",
        str(cases),
        "--traces",
        str(proto),
        "-o",
        str(tmp_path / "m.json"),
    )
    assert run.exit_code == 0, run.stderr
    metrics = json.loads((tmp_path / "m.json").read_text())["metrics"]
    assert (metrics["pass_rate"], metrics["trace_compliance_rate"]) == (1.0, 1.0)
