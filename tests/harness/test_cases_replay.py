"""``cases run --app``: the candidate app replayed on every case's input K times, through the
harness ``spanguard run`` uses, its spans captured through the SDK (issue 46, Replay)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

_APPS = "tests.harness.apps"

CASES = [
    {
        "id": "case-human",
        "input": "Please put me through to a human about my account.",
        "checks": [{"type": "min_chars", "value": 5}],
        "trace_checks": [
            {"type": "escalated", "value": True},
            {"type": "tools_include", "value": ["lookup_order"]},
        ],
    },
    {
        "id": "case-order",
        "input": "Where is my order A-1?",
        "checks": [{"type": "contains", "value": "shipped"}],
        "trace_checks": [{"type": "escalated", "value": False}],
    },
    {
        "id": "case-refund",
        "input": "I want a refund for order A-2.",
        "checks": [{"type": "min_chars", "value": 5}],
        "trace_checks": [{"type": "tools_include", "value": ["lookup_order"]}],
    },
]


def _cases(tmp_path: Path, cases: list[dict[str, Any]] = CASES) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def _replay(tmp_path: Path, app: str, *extra: str) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / f"{app}.json"
    args = ["--cases", str(_cases(tmp_path)), "--app", f"{_APPS}:{app}", "-o", str(out)]
    result = CliRunner().invoke(cli, ["cases", "run", *args, *extra])
    return result, json.loads(out.read_text()) if out.exists() else {}


@pytest.mark.parametrize("app", ["answer", "answer_async", "answer_two", "answer_two_async"])
def test_replay_calls_one_and_two_argument_apps_sync_and_async(tmp_path: Path, app: str) -> None:
    result, run = _replay(tmp_path, app, "--repeats", "3", "--concurrency", "8")
    assert result.exit_code == 0, result.output
    # the cost first: the calls, and the smallest change each metric can detect (cases plan)
    assert "replay: 3 case(s) × 3 repeat(s) = 9 app call(s) per version" in result.output
    assert "| Metric | Smallest detectable change | Tolerance | Can PASS |" in result.output
    assert "calling the app 9 time(s), 8 at a time" in result.output
    assert run["producer"] == "spanguard cases run"
    assert run["case_results"] == {
        "case-human": "pass",
        "case-order": "pass",
        "case-refund": "pass",
    }
    for case_id, repeats in run["repeats"].items():
        assert len(repeats) == 3, case_id
        for repeat in repeats:
            # the process came from the captured spans: the tool and the escalation
            assert repeat["tools"] == ["lookup_order"]
            assert repeat["escalated"] is (case_id == "case-human")
            assert repeat["latency_ms"] is not None and repeat["latency_ms"] >= 0
            assert repeat["error"] is None


def test_a_candidate_that_drops_the_escalation_fails_its_case(tmp_path: Path) -> None:
    result, run = _replay(tmp_path, "no_escalation", "--repeats", "2")
    assert result.exit_code == 0, result.output  # the run scores; `check` gates
    assert run["case_results"]["case-human"] == "fail"
    assert [r["failed_checks"] for r in run["repeats"]["case-human"]] == [["escalated"]] * 2


def test_a_raising_call_is_a_failed_repeat_not_a_crash(tmp_path: Path) -> None:
    result, run = _replay(tmp_path, "raises_on_refund", "--repeats", "2", "--concurrency", "8")
    assert result.exit_code == 0, result.output
    assert "2 of 6 app call(s) failed; each is counted as a failed repeat of its case:" in (
        result.output
    )
    assert "  case-refund (repeat 0): ValueError: the refund service is down" in result.output
    assert "  case-refund (repeat 1): ValueError: the refund service is down" in result.output
    repeats = run["repeats"]["case-refund"]
    assert [r["outcome"] for r in repeats] == ["error", "error"]
    assert repeats[0]["error"] == {"type": "ValueError", "message": "the refund service is down"}
    assert run["case_results"]["case-refund"] == "missing"  # no run of it answered
    assert [r["outcome"] for r in run["repeats"]["case-order"]] == ["pass", "pass"]


def test_an_app_that_raises_on_every_call_is_bad_input(tmp_path: Path) -> None:
    result, _ = _replay(tmp_path, "always_raises", "--repeats", "2")
    assert result.exit_code == 2
    assert "every one of the 6 app call(s) failed (first, on case-human repeat 0: " in (
        result.output
    )
    assert "RuntimeError: model timeout on" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "always_raises.json").exists()


def test_replay_refuses_bad_signatures_cases_without_input_and_mixed_sources(
    tmp_path: Path,
) -> None:
    bad, _ = _replay(tmp_path, "three_arguments")
    assert bad.exit_code == 2
    assert bad.output.startswith(
        "Error: --app: the app three_arguments(prompt, assignments, user) fits neither "
        "app(prompt) nor app(prompt, assignments)"
    )
    assert "replay:" not in bad.output and "calling the app" not in bad.output  # before any call
    no_input = _cases(tmp_path, [{"id": "c1", "checks": []}])
    result = CliRunner().invoke(
        cli, ["cases", "run", "--cases", str(no_input), "--app", f"{_APPS}:answer"]
    )
    assert result.exit_code == 2
    assert "case 'c1' has no input to replay" in result.output
    args = ["--cases", str(no_input), "--app", f"{_APPS}:answer", "--outputs", str(no_input)]
    both = CliRunner().invoke(cli, ["cases", "run", *args])
    assert both.exit_code == 2
    assert "give exactly one of --outputs, --traces, --source or --app." in both.output
    stray = CliRunner().invoke(
        cli,
        ["cases", "run", "--cases", str(no_input), "--outputs", str(no_input), "--repeats", "3"],
    )
    assert stray.exit_code == 2
    assert "--repeats and --concurrency go with --app." in stray.output


def test_ctrl_c_stops_the_replay_with_nothing_written(tmp_path: Path) -> None:
    result, run = _replay(tmp_path, "interrupted", "--repeats", "2")
    assert result.exit_code == 130
    assert "interrupted: no new app call was started" in result.output
    assert run == {}  # no run file


def test_the_default_replay_size_is_the_one_cases_plan_calibrated(tmp_path: Path) -> None:
    result, run = _replay(tmp_path, "answer", "--concurrency", "8")
    assert result.exit_code == 0, result.output
    assert "replay: 3 case(s) × 16 repeat(s) = 48 app call(s) per version" in result.output
    assert {len(repeats) for repeats in run["repeats"].values()} == {16}
