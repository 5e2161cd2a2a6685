"""What each metric reads: the records carrying its signal, and a diagnosis when none does
(issue 36: NO_SIGNAL with a diagnosis). Real SDK spans through ``spanguard run``; files through
``spanguard fairness``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness.design.suite import MetricConfig
from spanguard_processor.fairness.evaluate import evaluate
from spanguard_processor.fairness.metrics import get_metric, metric_names, register_record_metric
from spanguard_processor.fairness.metrics.registry import unregister_metric
from spanguard_processor.fairness.records import observation_from_record
from spanguard_processor.inputs.readers import read_agent_traces_any
from spanguard_processor.traces.formats import to_fairtrace_record

from .conftest import FAST
from .test_cli import _FAST, _suite

_APPS = "tests.fairness.signal_apps"


def _run_spans(tmp_path: Path, app: str, metrics: list[str], seeds: int = 12) -> Path:
    suite = _suite(tmp_path, [{"type": m} for m in metrics], seeds=seeds)
    spans = tmp_path / f"{app}.jsonl"
    result = CliRunner().invoke(
        cli, ["run", str(suite), "--app", f"{_APPS}:{app}", "--traces-out", str(spans), *_FAST]
    )
    assert result.exit_code in (0, 1), result.output
    return spans


def _evaluate(records: list[Any], metrics: list[str]) -> dict[str, Any]:
    ev = evaluate(
        records,
        [
            MetricConfig(type=m, threshold=get_metric(m).threshold)  # type: ignore[union-attr]
            for m in metrics
        ],
        FAST,
    )
    return {r.metric: r for r in ev.results}


def _observations(path: Path) -> list[Any]:
    from spanguard_processor.fairness.records import observation_from_trace

    return [observation_from_trace(t) for t in read_agent_traces_any([path])]


def test_every_builtin_metric_names_the_signal_it_reads() -> None:
    from spanguard_processor.fairness.metrics.diagnosis import SIGNALS

    for name in metric_names():
        definition = get_metric(name)
        assert definition is not None and definition.signal in SIGNALS, name


def test_unread_langfuse_spans_are_named_with_counts(tmp_path: Path) -> None:
    metrics = ["tool_count_gap", "escalation_parity", "friction_point_gap", "refusal_gap"]
    spans = _run_spans(tmp_path, "langfuse_biased", metrics)
    results = _evaluate(_observations(spans), metrics)
    tools = results["tool_count_gap"]
    assert (tools.signal, tools.signal_records) == ("tool calls", 0)
    assert (
        "12 span(s) named credit_check with traceloop.span.kind=task: not read" in tools.diagnosis
    )
    assert "docs/attributes.md#keys-spanguard-does-not-read" in tools.diagnosis
    escalation = results["escalation_parity"]
    assert (escalation.signal, escalation.signal_records) == ("escalations", 0)
    assert "12 span(s) named escalate with langfuse.observation.type=event" in (
        escalation.diagnosis
    )
    assert results["friction_point_gap"].signal_records == 0
    refusal = results["refusal_gap"]  # the harness recorded the answer on every request
    assert (refusal.signal, refusal.signal_records, refusal.diagnosis) == ("output text", 24, "")


def test_a_traced_request_without_an_escalation_is_signal(tmp_path: Path) -> None:
    """plain_biased escalates only women, but every request recorded a tool call: all 24
    records carry the escalation signal; lone_escalation's men recorded nothing at all, and
    its 12 escalated women carry it."""
    plain = _evaluate(
        _observations(_run_spans(tmp_path, "plain_biased", ["escalation_parity"])),
        ["escalation_parity"],
    )
    assert plain["escalation_parity"].signal_records == 24
    lone = _evaluate(
        _observations(_run_spans(tmp_path, "lone_escalation", ["escalation_parity"])),
        ["escalation_parity"],
    )
    assert lone["escalation_parity"].signal_records == 12
    assert lone["escalation_parity"].score == 1.0


def test_a_silent_app_carries_no_process_signal(tmp_path: Path) -> None:
    metrics = [
        "escalation_parity",
        "tool_use_parity",
        "plan_length_gap",
        "llm_call_gap",
        "retrieval_exposure_gap",
    ]
    results = _evaluate(_observations(_run_spans(tmp_path, "silent", metrics)), metrics)
    for name in metrics:
        assert results[name].signal_records == 0, name
        assert "nothing seen that might hold it" in results[name].diagnosis, name


def test_content_metrics_over_traces_without_output_text_have_no_signal(tmp_path: Path) -> None:
    spans = _run_spans(tmp_path, "plain_biased", ["refusal_gap"])
    lines = []
    for line in spans.read_text().splitlines():  # the file as recorded with capture off
        batch = json.loads(line)
        for rs in batch["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["attributes"] = [
                        a
                        for a in span["attributes"]
                        if a["key"] not in ("input.value", "output.value")
                    ]
        lines.append(json.dumps(batch))
    spans.write_text("\n".join(lines) + "\n")
    metrics = ["refusal_gap", "verbosity_gap", "helpfulness_gap", "counterfactual_stability"]
    results = _evaluate(_observations(spans), metrics)
    for name in metrics:
        assert results[name].signal_records == 0, name
    assert results["refusal_gap"].diagnosis.startswith(
        "no output text in 24 record(s): 24 were recorded from spans with content capture off"
    )
    assert "docs/sdk.md#privacy" in results["refusal_gap"].diagnosis
    tools = _evaluate(_observations(spans), ["tool_count_gap"])["tool_count_gap"]
    assert tools.signal_records == 24  # the process is content-free: still read


def test_the_unread_note_survives_fairtrace_records_and_agent_jsonl(tmp_path: Path) -> None:
    spans = _run_spans(tmp_path, "langfuse_biased", ["tool_count_gap"], seeds=3)
    traces = list(read_agent_traces_any([spans]))
    woman = next(t for t in traces if t.assignments.get("gender") == "woman")
    assert [n.to_dict() for n in woman.unread] == [
        {"key": "langfuse.observation.type=event", "span": "escalate", "count": 1},
        {"key": "traceloop.span.kind=task", "span": "credit_check", "count": 1},
    ]
    from spanguard_processor.traces.model import AgentTrace

    assert AgentTrace.from_dict(json.loads(json.dumps(woman.to_dict()))) == woman
    record = observation_from_record(json.loads(json.dumps(to_fairtrace_record(woman))))
    assert record.unread == woman.unread and record.has_output


def test_custom_metrics_leave_signal_records_unset() -> None:
    register_record_metric("answer_length_test", lambda r: len(r["response"]), threshold=5.0)
    try:
        records = [
            observation_from_record(
                {"id": f"s{i}::{g}", "seed_id": f"s{i}", "assignments": {"g": g}, "response": "ok"}
            )
            for i in range(3)
            for g in ("a", "b")
        ]
        result = _evaluate(records, ["answer_length_test"])["answer_length_test"]
        assert (result.signal, result.signal_records, result.diagnosis) == ("", None, "")
    finally:
        unregister_metric("answer_length_test")


def test_text_under_langfuse_keys_is_named_in_the_diagnosis() -> None:
    from spanguard_processor.fairness.records import observation_from_trace
    from spanguard_processor.traces.model import AgentTrace, Unread

    traces = [
        AgentTrace(
            trace_id=f"{i:032x}",
            seed_id=f"s{i // 2}",
            variant_id=f"v{i}",
            assignments={"g": "ab"[i % 2]},
            unread=(Unread("langfuse.trace.output", "loan-agent"),),
        )
        for i in range(8)
    ]
    result = _evaluate([observation_from_trace(t) for t in traces], ["refusal_gap"])
    diagnosis = result["refusal_gap"].diagnosis
    assert result["refusal_gap"].signal_records == 0
    assert diagnosis == (
        "no output text in 8 record(s): 8 were recorded from spans with the text under keys "
        "spanguard does not read, or with content capture off (see docs/sdk.md#privacy); "
        "8 span(s) named loan-agent with langfuse.trace.output: not read; "
        "see docs/attributes.md#keys-spanguard-does-not-read."
    )


def test_a_fairtrace_record_stating_no_escalation_carries_the_signal() -> None:
    """``"escalated": false`` in a fairtrace record is a recorded "no escalation"; the same
    value in a record spanguard wrote from spans (which states every key) is not."""

    def record(i: int, g: str, block: bool) -> Any:
        meta: dict[str, Any] = {"trace": {"escalated": False}}
        if block:
            meta["spanguard"] = {"trace_id": f"{i:032x}"}
        return observation_from_record(
            {
                "id": f"s{i}::{g}",
                "seed_id": f"s{i}",
                "assignments": {"g": g},
                "response": "ok",
                "response_metadata": meta,
            }
        )

    stated = _evaluate(
        [record(i, g, False) for i in range(4) for g in "ab"],
        ["escalation_parity", "friction_point_gap"],
    )
    assert stated["escalation_parity"].signal_records == 8
    assert stated["friction_point_gap"].signal_records == 0  # friction_points not stated
    from_spans = _evaluate(
        [record(i, g, True) for i in range(4) for g in "ab"], ["escalation_parity"]
    )
    assert from_spans["escalation_parity"].signal_records == 0
