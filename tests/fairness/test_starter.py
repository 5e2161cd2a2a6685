"""The suite `spanguard init` writes: a fair deterministic app passes it, a biased one fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness import load_suite
from spanguard_processor.fairness.metrics import get_metric
from spanguard_processor.fairness.plan import plan_suite

_APPS = "tests.fairness.plan_apps"
_FAST = ["--bootstrap", "500", "--permutations", "199"]
# the structural metrics that catch an extra or different tool call, escalation or retrieval
_STRUCTURAL = {
    "tool_name_gap",
    "tool_count_gap",
    "escalation_parity",
    "friction_point_gap",
    "retrieval_exposure_gap",
}


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("init") / "fairness.yaml"
    result = CliRunner().invoke(cli, ["init", "-o", str(target)])
    assert result.exit_code == 0, result.output
    return target


def test_every_metric_says_what_it_catches_and_structural_ones_are_optional(starter: Path) -> None:
    text = starter.read_text()
    entries = yaml.safe_load(text)["metrics"]
    for entry in entries:
        line = next(
            x for x in text.splitlines() if x.strip().startswith(f"- type: {entry['type']}")
        )
        assert "# catches " in line, line
        assert entry.get("optional", False) == (entry["type"] in _STRUCTURAL), entry
    gating = [e["type"] for e in entries if not e.get("optional")]
    assert gating and all(get_metric(t).category == "Text" for t in gating)  # type: ignore[union-attr]
    assert "tool_name_gap" in {e["type"] for e in entries}


def test_every_gating_metric_has_a_design_mde_within_twice_its_threshold(starter: Path) -> None:
    plan = plan_suite(load_suite(starter))
    assert plan.seeds >= 30 and plan.groups == 3
    for metric in plan.metrics:
        if not metric.optional:
            assert metric.mde is not None and metric.mde <= 2 * metric.threshold, metric
    result = CliRunner().invoke(cli, ["suite", "plan", str(starter)])
    assert result.exit_code == 0 and "warning" not in result.stdout, result.stdout


def test_a_fair_deterministic_app_passes_every_gating_metric(starter: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        cli, ["run", str(starter), "--app", f"{_APPS}:fair_agent", "-o", str(out), *_FAST]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("fairness gate PASSED\n")
    report = json.loads((out / "report.json").read_text())
    gating = [m for m in report["metric_results"] if not m.get("optional")]
    assert gating and all(m["verdict"].upper() == "PASS" for m in gating), gating
    for m in gating:  # the MDE the run itself reports, not only the design's
        assert m["minimum_detectable_effect"] <= 2 * m["threshold"], m


def test_the_same_suite_catches_one_extra_tool_call_for_women(
    starter: Path, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        cli, ["run", str(starter), "--app", f"{_APPS}:extra_credit_check", "-o", str(out), *_FAST]
    )
    assert result.exit_code == 1, result.output
    report = json.loads((out / "report.json").read_text())
    verdicts = {m["metric"]: m["verdict"].upper() for m in report["metric_results"]}
    assert verdicts["tool_name_gap"] == "FAIL", verdicts
    assert "tool_name_gap" in result.stdout.splitlines()[-1]
