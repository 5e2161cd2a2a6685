"""One verdict on every path: ``run``, its ``--traces-out`` file through ``fairness``,
``ingest`` → store → ``traces export`` → ``fairness``, and ``fairness`` on the store give the
same metric results for the same spans (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .test_cli import _FAST, _suite

_APPS = "tests.fairness.signal_apps"
_METRICS = [
    "escalation_parity",
    "tool_count_gap",
    "tool_name_gap",
    "friction_point_gap",
    "refusal_gap",
    "verbosity_gap",
    "plan_length_gap",
    "llm_call_gap",
    "retrieval_exposure_gap",
    "escalation_reason_parity",
    "helpfulness_gap",
]


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _results(out: Path) -> list[dict[str, Any]]:
    report = json.loads((out / "report.json").read_text())
    return report["metric_results"]  # type: ignore[no-any-return]


def _by_metric(out: Path) -> dict[str, dict[str, Any]]:
    return {r["metric"]: r for r in _results(out)}


def _four_paths(tmp_path: Path, app: str, seeds: int = 30) -> dict[str, Path]:
    suite = _suite(tmp_path, [{"type": t} for t in _METRICS], seeds=seeds)
    spans, store, exported = tmp_path / "spans.jsonl", tmp_path / "spans.db", tmp_path / "t.jsonl"
    outs = {name: tmp_path / name for name in ("run", "file", "export", "store")}
    run = _invoke(
        "run", suite, "--app", f"{_APPS}:{app}", "--traces-out", spans, "-o", outs["run"], *_FAST
    )
    assert run.exit_code in (0, 1), run.output
    assert _invoke("ingest", spans, "--store", store).exit_code == 0
    assert _invoke("traces", "export", "--store", store, "-o", exported).exit_code == 0
    records = tmp_path / "records.jsonl"
    assert (
        _invoke("traces", "export", "--store", store, "-f", "fairtrace", "-o", records).exit_code
        == 0
    )
    outs["records"] = tmp_path / "records"
    for name, source in (
        ("file", spans),
        ("export", exported),
        ("store", store),
        ("records", records),
    ):
        result = _invoke("fairness", suite, source, "-o", outs[name], *_FAST)
        assert result.exit_code == run.exit_code, (name, result.output, run.output)
    return outs


@pytest.mark.parametrize(
    "app", ["plain_biased", "langfuse_biased", "lone_escalation", "returned_trace"]
)
def test_run_file_export_and_store_give_identical_metric_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, app: str
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    outs = _four_paths(tmp_path, app)
    expected = _results(outs["run"])
    assert [r["metric"] for r in expected]
    if app == "returned_trace":  # the returned trace and score reached the spans, and back
        got = {r["metric"]: r["score"] for r in expected}
        assert got["retrieval_exposure_gap"] == 1.0 and got["plan_length_gap"] == 1.0
        assert got["helpfulness_gap"] == pytest.approx(0.5)
    for name in ("file", "export", "store", "records"):  # records: fairtrace's format
        assert _results(outs[name]) == expected, name


def test_a_lone_escalation_is_read_as_process(tmp_path: Path) -> None:
    """escalate() is the app's only signal: the requests without one escalated nobody."""
    suite = _suite(tmp_path, [{"type": "escalation_parity"}], seeds=30)
    out = tmp_path / "out"
    result = _invoke("run", suite, "--app", f"{_APPS}:lone_escalation", "-o", out, *_FAST)
    assert result.exit_code == 1, result.output
    escalation = _by_metric(out)["escalation_parity"]
    assert escalation["score"] == 1.0
    assert escalation["verdict"] == "fail"


def test_traces_out_carries_the_prompt_and_answer_so_cases_can_be_mined(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "refusal_gap"}], seeds=6)
    spans = tmp_path / "spans.jsonl"
    run = _invoke("run", suite, "--app", f"{_APPS}:plain_biased", "--traces-out", spans, *_FAST)
    assert run.exit_code == 1, run.output
    text = spans.read_text()
    assert "Case 3: a woman customer asks." in text and "I cannot help with that." in text
    out = tmp_path / "evalset"
    built = _invoke("cases", "build", spans, "-o", out)
    assert built.exit_code == 0, built.output
    assert "no input text" not in built.output
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert cases and all(c["input"].startswith("Case ") for c in cases)


def test_traces_out_with_redact_leaves_the_text_out_but_run_still_reads_it(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "refusal_gap"}], seeds=6)
    spans, out = tmp_path / "spans.jsonl", tmp_path / "out"
    run = _invoke(
        "run",
        suite,
        "--app",
        f"{_APPS}:plain_biased",
        "--traces-out",
        spans,
        "--redact",
        "-o",
        out,
        *_FAST,
    )
    assert run.exit_code == 1, run.output
    assert _by_metric(out)["refusal_gap"]["score"] == 1.0
    text = spans.read_text()
    assert "customer asks" not in text and "cannot help" not in text
    assert "execute_tool credit_check" in text  # the process stays


def test_every_path_reads_the_same_signals_and_diagnosis(tmp_path: Path) -> None:
    """The signal counts and the NO_SIGNAL diagnosis (unread Langfuse keys) agree on the four
    paths too: the per-trace note survives the file, the store and the export."""
    from spanguard_processor.fairness.design.suite import load_suite
    from spanguard_processor.fairness.pipeline import evaluate_suite, read_inputs
    from spanguard_processor.fairness.run.runner import run_app

    from . import signal_apps
    from .conftest import FAST

    outs = _four_paths(tmp_path, "langfuse_biased", seeds=8)
    assert outs
    suite = load_suite(tmp_path / "suite.json")
    observations, errors = run_app(signal_apps.langfuse_biased, suite.variants)
    assert errors == []
    sources = {
        "run": observations,
        "file": read_inputs([tmp_path / "spans.jsonl"]),
        "export": read_inputs([tmp_path / "t.jsonl"]),
        "store": read_inputs([tmp_path / "spans.db"]),
    }
    seen = {}
    for name, obs in sources.items():
        ev, _ = evaluate_suite(suite, obs, FAST)
        seen[name] = sorted((r.metric, r.signal, r.signal_records, r.diagnosis) for r in ev.results)
    tools = next(row for row in seen["run"] if row[0] == "tool_count_gap")
    assert tools[2] == 0 and "8 span(s) named credit_check" in tools[3]
    for name in ("file", "export", "store"):
        assert seen[name] == seen["run"], name
