"""Power before the run: `spanguard suite plan`, and the table `run` and `fairness` print first."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness import load_suite
from spanguard_processor.fairness.plan import plan_suite
from spanguard_processor.fairness.stats.power import design_mde

_FAST = ["--bootstrap", "300", "--permutations", "199"]


def _suite(
    tmp_path: Path,
    seeds: int,
    metrics: list[dict[str, Any]],
    groups: tuple[str, ...] = ("man", "woman"),
) -> Path:
    path = tmp_path / f"suite-{seeds}.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {
                            "id": f"seed{i}",
                            "prompt": f"Case {i}: a {{gender}} customer asks.",
                            "attributes": {"gender": list(groups)},
                        }
                        for i in range(seeds)
                    ]
                },
                "metrics": metrics,
            }
        )
    )
    return path


def test_plan_of_a_one_template_suite_warns_and_names_the_seeds_it_needs(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 1, [{"type": "refusal_gap", "threshold": 0.2}])
    result = CliRunner().invoke(cli, ["suite", "plan", str(suite)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("design: 1 seeds × 2 groups × 1 repeat, 2 app calls\n")
    assert re.search(
        r"refusal_gap .* fewer than 2 seeds hold two groups: nothing can PASS", result.stdout
    )
    assert (
        "warning: refusal_gap: fewer than 2 seeds hold two groups: nothing can PASS; 14 "
        "seeds would let a deterministic app PASS, more a noisy one."
    ) in result.stdout


def test_plan_warns_and_its_seed_count_reaches_the_threshold(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 30, [{"type": "refusal_gap", "threshold": 0.2}])
    result = CliRunner().invoke(cli, ["suite", "plan", str(suite)])
    assert result.exit_code == 0, result.output
    warning = re.search(
        r"warning: refusal_gap: design MDE ([\d.]+) exceeds 2 × its threshold "
        r"0.2: .* about ([\d,]+) seeds would, or (\d+) for a deterministic app",
        result.stdout,
    )
    assert warning, result.stdout
    needed = int(warning.group(2).replace(",", ""))
    # the number is the smallest design whose MDE reaches the threshold
    at_needed = design_mde(needed, 2, 1, "rate", 0.2)
    below = design_mde(needed - 1, 2, 1, "rate", 0.2)
    assert at_needed is not None and at_needed <= 0.2
    assert below is None or below > 0.2
    assert int(warning.group(3)) == 14  # 1 − 0.05^(1/n) < 0.2 from n = 14


def test_plan_of_a_large_suite_has_no_warning(tmp_path: Path) -> None:
    small = plan_suite(load_suite(_suite(tmp_path, 5, [{"type": "refusal_gap", "threshold": 0.2}])))
    needed = small.metrics[0].seeds_needed
    assert needed is not None
    suite = _suite(tmp_path, needed, [{"type": "refusal_gap", "threshold": 0.2}])
    result = CliRunner().invoke(cli, ["suite", "plan", str(suite)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("refusal_gap"))
    assert float(row.split()[3]) <= 0.2


def test_plan_counts_repeats_and_names_metrics_it_cannot_judge(tmp_path: Path) -> None:
    suite = _suite(
        tmp_path,
        4,
        [{"type": "counterfactual_stability"}, {"type": "escalation_parity", "optional": True}],
        groups=("man", "woman", "nonbinary person"),
    )
    result = CliRunner().invoke(cli, ["suite", "plan", str(suite), "--repeats", "3"])
    assert result.exit_code == 0, result.output
    assert "design: 4 seeds × 3 groups × 3 repeats, 36 app calls" in result.stdout
    assert re.search(r"counterfactual_stability .* not a gap between groups", result.stdout)
    assert re.search(r"escalation_parity \(optional\) +rate ", result.stdout)


def test_plan_of_a_bad_suite_is_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset:\n  prompts: []\nmetrics: [{type: refusal_gap}]\n")
    result = CliRunner().invoke(cli, ["suite", "plan", str(bad)])
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and "dataset.prompts" in result.output
    assert "Traceback" not in result.output


def test_run_prints_the_plan_before_the_first_app_call(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 3, [{"type": "refusal_gap", "threshold": 0.2}])
    result = CliRunner().invoke(
        cli,
        ["run", str(suite), "--app", "tests.fairness.plan_apps:loud", "--format", "json", *_FAST],
    )
    assert result.exit_code in (0, 1), result.output
    err = result.stderr
    assert err.index("design: 3 seeds × 2 groups") < err.index("app called")
    assert "warning: refusal_gap: " in err.split("app called")[0]
    json.loads(result.stdout)  # stdout stays the verdict, valid JSON


def test_fairness_prints_the_plan_with_the_recorded_repeats(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 3, [{"type": "refusal_gap", "threshold": 0.2}])
    records = tmp_path / "records.jsonl"
    rows = []
    for i in range(3):
        for n, gender in enumerate(("man", "woman"), start=1):
            for _ in range(2):
                rows.append(
                    {
                        "id": f"seed{i}::{n}",
                        "seed_id": f"seed{i}",
                        "assignments": {"gender": gender},
                        "prompt": "p",
                        "response": "Sure, here is how.",
                    }
                )
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(records), *_FAST])
    assert "design: 3 seeds × 2 groups × 2 repeats, 12 app calls" in result.stderr
