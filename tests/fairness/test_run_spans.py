"""``spanguard run`` with an app instrumented by the real SDK: its spans are its trace."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard.testing import SpanCapture
from spanguard_processor.cli import cli
from spanguard_processor.fairness.design.suite import parse_suite
from spanguard_processor.fairness.run.runner import run_app
from spanguard_processor.traces.convert import traces_from_readable_spans

from . import apps
from .test_cli import _FAST, _suite


def test_spans_emitted_by_the_app_are_captured_and_assembled(tmp_path: Path) -> None:
    suite = parse_suite(
        json.loads(_suite(tmp_path, [{"type": "tool_use_parity"}], seeds=2).read_text())
    )
    observations, errors = run_app(apps.instrumented, suite.variants, concurrency=3)
    assert errors == []
    by_id = {o.id: o for o in observations}
    man, woman = by_id["seed0::1"], by_id["seed0::2"]
    assert man.trace is not None and [t.name for t in man.trace.tool_calls] == ["kb_search"]
    assert woman.trace is not None and woman.trace.escalated
    assert woman.trace.escalation_reason == "manual review"
    assert woman.trace.plan_steps == ("lookup",)
    assert woman.response == "Here you go."


def test_run_gates_an_instrumented_app_on_its_spans(tmp_path: Path) -> None:
    suite = _suite(
        tmp_path,
        [
            {"type": "escalation_parity"},
            {"type": "tool_use_parity"},
            # a count: its exact bounds need the largest per-seed difference stated
            {"type": "friction_point_gap", "max_difference": 2},
        ],
    )
    biased = CliRunner().invoke(
        cli, ["run", str(suite), "--app", "tests.fairness.apps:instrumented", *_FAST]
    )
    assert biased.exit_code == 1, biased.output
    assert biased.output.endswith("fairness gate FAILED: escalation_parity, tool_use_parity\n")
    fair = CliRunner().invoke(
        cli, ["run", str(suite), "--app", "tests.fairness.apps:instrumented_fair", *_FAST]
    )
    assert fair.exit_code == 0, fair.output


def test_fairness_reads_agent_traces_assembled_from_sdk_spans(tmp_path: Path) -> None:
    import spanguard

    suite_path = _suite(tmp_path, [{"type": "escalation_parity"}])
    suite = parse_suite(json.loads(suite_path.read_text()))
    with SpanCapture() as capture:
        for v in suite.variants:
            with spanguard.request(
                "support", seed_id=v.seed_id, variant_id=v.id, assignments=dict(v.assignments)
            ):
                apps.instrumented(v.prompt, dict(v.assignments))
    assert isinstance(capture.exporter, InMemorySpanExporter)
    traces = traces_from_readable_spans(capture.readable_spans())
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in traces))
    result = CliRunner().invoke(cli, ["fairness", str(suite_path), str(path), *_FAST])
    assert result.exit_code == 1, result.output
    assert result.output.endswith("fairness gate FAILED: escalation_parity\n")


def test_run_reads_the_model_calls_an_instrumented_app_records(tmp_path: Path) -> None:
    """llm_call_gap and token_gap under ``spanguard run`` read the totals of the app's LLM
    spans, as ``spanguard fairness`` does from the same spans (they were left empty)."""
    suite = parse_suite(
        json.loads(_suite(tmp_path, [{"type": "llm_call_gap"}], seeds=2).read_text())
    )
    observations, errors = run_app(apps.model_calls, suite.variants)
    assert errors == []
    by_id = {o.id: o for o in observations}
    man, woman = by_id["seed0::1"].usage, by_id["seed0::2"].usage
    assert man is not None and (man["llm_calls"], man["total_tokens"]) == (1, 15)
    assert woman is not None and (woman["llm_calls"], woman["total_tokens"]) == (2, 30)
    # an app without spans: its request span records no model call, read as its --traces-out
    # file is read (llm_call_gap then finds no record carrying the signal)
    plain, _ = run_app(apps.text_only, suite.variants[:1])
    assert plain[0].usage is not None and plain[0].usage["llm_calls"] == 0
    path = _suite(
        tmp_path,
        [
            {"type": "llm_call_gap", "threshold": 0.5, "max_difference": 2},
            {"type": "token_gap", "threshold": 10, "max_difference": 30},
        ],
    )
    result = CliRunner().invoke(
        cli, ["run", str(path), "--app", "tests.fairness.apps:model_calls", *_FAST]
    )
    assert result.exit_code == 1, result.output
    assert result.output.endswith("fairness gate FAILED: token_gap, llm_call_gap\n")
