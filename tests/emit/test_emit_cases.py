"""``cases run --emit-otlp`` and ``check --emit-otlp``: one gen_ai.evaluation.result per case of
the set, in the evaluated trace's root span (a case no record answered: in no trace); a real
OTLP/HTTP receiver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import write_jsonl
from tests.regression.test_process_and_gate import ANSWER, QUESTION, _production, _trace

from .logs_sinks import HttpLogsSink, Received

_TRACE = "0123456789abcdef0123456789abcdef"
_ROOT = "00000000000000a1"


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _span(
    span_id: str, parent: str, name: str, attrs: dict[str, str], start: int
) -> dict[str, Any]:
    return {
        "traceId": _TRACE,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1000),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }


def _span_file(tmp_path: Path, tools: tuple[str, ...]) -> Path:
    """One request as OTLP-JSON spans: the agent's root span, its tool calls and retrieval."""
    spans = [
        _span(
            _ROOT,
            "",
            "invoke_agent support",
            {
                "gen_ai.operation.name": "invoke_agent",
                "input.value": QUESTION,
                "output.value": ANSWER,
            },
            1_000_000,
        )
    ]
    for i, tool in enumerate(tools, start=1):
        spans.append(
            _span(
                f"00000000000000b{i}",
                _ROOT,
                f"execute_tool {tool}",
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
                1_000_000 + 10_000 * i,
            )
        )
    spans.append(
        _span(
            "00000000000000d1",
            _ROOT,
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.id": "chatcmpl-42",
            },
            1_000_900,
        )
    )
    documents = [{"id": "kb-refunds", "group": "policy", "rank": 1, "score": 0.9}]
    spans.append(
        _span(
            "00000000000000c1",
            _ROOT,
            "retrieval kb",
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.documents": json.dumps(documents),
            },
            1_000_500,
        )
    )
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return path


def _cases(tmp_path: Path) -> tuple[str, list[dict[str, Any]]]:
    """``cases build``'s default case set (a case for every question and process path: the
    refund question's two paths and the shipping question) and its cases."""
    result = _invoke("cases", "build", str(_production(tmp_path)), "-o", str(tmp_path / "ev"))
    assert result.exit_code == 0, result.output
    path = tmp_path / "ev" / "cases.jsonl"
    return str(path), [json.loads(line) for line in path.read_text().splitlines()]


def _by_case(records: list[Received], cases: list[dict[str, Any]]) -> dict[str, Received]:
    """The records keyed by case: exactly one per case of the set, nothing else."""
    by_case = {r.attributes["spanguard.case.id"]: r for r in records}
    assert len(records) == len(cases) and sorted(by_case) == sorted(c["id"] for c in cases)
    return by_case


def _sent(stderr: str, cases: list[dict[str, Any]]) -> None:
    """The command said the records went (a delivered export is never told as a failure)."""
    assert "not sent" not in stderr
    assert f"sent {len(cases)} gen_ai.evaluation.result record(s) to http://127.0.0.1:" in stderr


def test_cases_run_sends_each_case_into_the_root_span_of_its_trace(tmp_path: Path) -> None:
    cases, built = _cases(tmp_path)
    asked = [c for c in built if c["input"] == QUESTION]  # the cases the trace answers
    assert asked and len(asked) < len(built)  # and one (the shipping question) it does not
    spans = _span_file(tmp_path, ("lookup_order", "refund_policy"))
    with HttpLogsSink() as sink:
        result = _invoke(
            "cases", "run", "--cases", cases, "--traces", str(spans), "--emit-otlp", sink.url
        )
        records = sink.wait_for(len(built), timeout=5)
    assert result.exit_code == 0, result.output
    _sent(result.stderr, built)
    by_case = _by_case(records, built)
    for case in built:
        record = by_case[case["id"]]
        assert record.event_name == "gen_ai.evaluation.result"
        assert record.attributes["gen_ai.evaluation.name"] == "spanguard.case"
        if case in asked:
            assert (record.trace_id, record.span_id) == (_TRACE, _ROOT)
            assert record.attributes["gen_ai.evaluation.score.label"] == "pass"
            assert record.attributes["gen_ai.evaluation.score.value"] == 1.0
            assert record.attributes["gen_ai.response.id"] == "chatcmpl-42"
        else:  # no record answered it: missing, in no trace
            assert (record.trace_id, record.span_id) == ("", "")
            assert record.attributes["gen_ai.evaluation.score.label"] == "missing"
            assert (
                record.attributes["gen_ai.evaluation.explanation"] == "no record matched the case"
            )


def test_cases_run_from_agent_trace_jsonl_sends_the_root_span_id(tmp_path: Path) -> None:
    """The same request, exported first as agent-trace JSONL (``traces export``): the records
    still land on the evaluated request's root span, not on its trace alone."""
    cases, built = _cases(tmp_path)
    asked = [c for c in built if c["input"] == QUESTION]
    spans = _span_file(tmp_path, ("lookup_order", "refund_policy"))
    jsonl = tmp_path / "traces.jsonl"
    exported = _invoke("traces", "export", "--store", str(spans), "-o", str(jsonl))
    assert exported.exit_code == 0, exported.output
    (line,) = jsonl.read_text().splitlines()
    assert json.loads(line)["root_span_id"] == _ROOT
    with HttpLogsSink() as sink:
        result = _invoke(
            "cases", "run", "--cases", cases, "--traces", str(jsonl), "--emit-otlp", sink.url
        )
        records = sink.wait_for(len(built), timeout=5)
    assert result.exit_code == 0, result.output
    _sent(result.stderr, built)
    by_case = _by_case(records, built)
    for case in asked:
        record = by_case[case["id"]]
        assert (record.trace_id, record.span_id) == (_TRACE, _ROOT)
        assert record.attributes["gen_ai.evaluation.score.label"] == "pass"


def test_check_sends_the_regressed_case_with_why_in_the_current_trace(tmp_path: Path) -> None:
    cases, built = _cases(tmp_path)
    asked = [c for c in built if c["input"] == QUESTION]
    assert asked and len(asked) < len(built)
    good = tmp_path / "good.jsonl"
    write_jsonl(good, [_trace(100).to_dict()])
    spans = _span_file(tmp_path, ("refund_policy",))  # lookup_order dropped
    for name, traces in (("base", good), ("now", spans)):
        result = _invoke(
            "cases",
            "run",
            "--cases",
            cases,
            "--traces",
            str(traces),
            "-o",
            str(tmp_path / f"{name}.json"),
        )
        assert result.exit_code == 0, result.output
    with HttpLogsSink() as sink:
        gate = _invoke(
            "check",
            "--rules",
            "trace2eval",
            "--baseline",
            str(tmp_path / "base.json"),
            "--current",
            str(tmp_path / "now.json"),
            "--emit-otlp",
            sink.url,
        )
        records = sink.wait_for(len(built), timeout=5)
    assert gate.exit_code == 1, gate.output  # the regression, exactly as without --emit-otlp
    _sent(gate.stderr, built)
    by_case = _by_case(records, built)
    for case in asked:  # each path of the refund question lost its tool: regressed
        record = by_case[case["id"]]
        assert (record.trace_id, record.span_id) == (_TRACE, _ROOT)
        assert record.attributes["gen_ai.evaluation.score.label"] == "fail"
        assert record.attributes["gen_ai.evaluation.score.value"] == 0.0
        assert record.attributes["gen_ai.evaluation.explanation"].startswith(
            "passed in the baseline, fails now: tools_include"
        )
    for case in (c for c in built if c not in asked):  # missing in both runs: not regressed
        record = by_case[case["id"]]
        assert record.attributes["gen_ai.evaluation.score.label"] == "missing"
        assert not record.attributes["gen_ai.evaluation.explanation"].startswith("passed")
