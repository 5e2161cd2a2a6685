"""check gates on cases that flip from pass to fail, not only on aggregate rates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli


def metrics(path: Path, outcomes: dict[str, str], failed: dict[str, list[str]]) -> Path:
    passed = sum(1 for o in outcomes.values() if o == "pass")
    payload: dict[str, Any] = {
        "version": "0.5",
        "metrics": {
            "total": len(outcomes), "passed": passed, "failed": len(outcomes) - passed,
            "missing": 0, "pass_rate": round(passed / len(outcomes), 4),
            "failures": [{"case_id": c, "reason": "check_failed", "failed_checks": checks}
                         for c, checks in failed.items()],
        },
        "case_results": outcomes,
    }
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def check(base: Path, cur: Path) -> Any:
    return CliRunner().invoke(cli, ["check", "--baseline", str(base), "--current", str(cur)])


def test_a_case_that_starts_failing_a_process_check_fails_the_gate_even_if_others_improve(
    tmp_path: Path,
) -> None:
    base = metrics(tmp_path / "b.json", {"a": "pass", "b": "fail", "c": "fail"},
                   {"b": ["min_chars"], "c": ["min_chars"]})
    cur = metrics(tmp_path / "c.json", {"a": "fail", "b": "pass", "c": "pass"},
                  {"a": ["tools_include"]})
    result = check(base, cur)
    assert result.exit_code == 1
    assert "| case_outcomes | 1 | 1 | 1 case(s) passed before" in result.output
    assert "cases that went from pass to fail (1): a" in result.output


def test_a_timing_only_flip_is_listed_but_left_to_the_latency_tolerance(tmp_path: Path) -> None:
    base = metrics(tmp_path / "b.json", {"a": "pass", "b": "fail"}, {"b": ["min_chars"]})
    cur = metrics(tmp_path / "c.json", {"a": "fail", "b": "pass"}, {"a": ["max_latency_ms"]})
    result = check(base, cur)
    assert result.exit_code == 0, result.output
    assert "cases that went from pass to fail (1): a" in result.output
