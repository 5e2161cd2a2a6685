"""Issue 47, item 8: what a newcomer is told when the input is not what a command reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli


def _suite(tmp_path: Path, name: str = "suite.json", seeds: int = 3) -> Path:
    path = tmp_path / name
    prompts = [
        {
            "id": f"seed{i}",
            "prompt": f"Case {i}: a {{gender}} asks.",
            "attributes": {"gender": ["man", "woman"]},
        }
        for i in range(seeds)
    ]
    path.write_text(
        json.dumps({"dataset": {"prompts": prompts}, "metrics": [{"type": "escalation_parity"}]})
    )
    return path


def test_production_traffic_is_pointed_to_run_and_suite_mine(tmp_path: Path) -> None:
    # production requests: no variant of any suite, no protected attribute assigned
    traffic = tmp_path / "production.jsonl"
    rows: list[dict[str, Any]] = [
        {"id": f"req{i}", "seed_id": f"req{i}", "prompt": "Where is my order?", "response": "ok"}
        for i in range(3)
    ]
    traffic.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(cli, ["fairness", str(_suite(tmp_path)), str(traffic)])
    assert result.exit_code == 2
    assert "none of the 3 record(s) match a variant of the suite" in result.output
    assert "not a counterfactual suite's run" in result.output
    assert "spanguard run" in result.output and "spanguard suite mine" in result.output
    assert "Traceback" not in result.output


def _report(path: Path, digest: str, seeds: int) -> Path:
    path.write_text(
        json.dumps(
            {
                "metric_results": [
                    {
                        "metric": "escalation_parity",
                        "score": 0.0,
                        "threshold": 0.1,
                        "direction": "lower",
                        "passed": True,
                        "confidence_interval": [0.0, 0.05],
                        "interval_level": 0.95,
                        "verdict": "pass",
                    }
                ],
                "spanguard": {"suite_sha256": digest, "seeds": seeds},
            }
        )
    )
    return path


def test_compare_warns_when_the_reports_come_from_different_suites(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", "a" * 64, 40)
    b = _report(tmp_path / "b.json", "b" * 64, 12)
    result = CliRunner().invoke(cli, ["compare", "--baseline", str(a), "--current", str(b)])
    assert result.exit_code == 0
    assert "warning: the two reports come from different suites" in result.stderr
    assert "40 vs 12 seeds" in result.stderr
    same = CliRunner().invoke(cli, ["compare", "--baseline", str(a), "--current", str(a)])
    assert "different suites" not in same.output
    md = CliRunner().invoke(
        cli, ["compare", "--baseline", str(a), "--current", str(b), "--format", "markdown"]
    )
    assert "> ⚠️ the two reports come from different suites" in md.stdout
