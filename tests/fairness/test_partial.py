"""Partial data: coverage per group, the coverage minimum, group-dependent missingness."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness import GateConfig, MetricConfig, Observation, evaluate
from spanguard_processor.traces.model import ProcessTrace

from .conftest import FAST

_METRIC = [MetricConfig("escalation_parity", 0.1)]


def _variants(seeds: int, groups: tuple[str, ...]) -> list[tuple[str, str, str]]:
    return [(f"s{s}::{g}", f"s{s}", f"group={g}") for s in range(seeds) for g in groups]


def _observations(
    expected: list[tuple[str, str, str]], keep: np.ndarray, rng: np.random.Generator
) -> list[Observation]:
    out = []
    for (variant, seed, label), kept in zip(expected, keep, strict=True):
        if kept:
            out.append(
                Observation(
                    id=variant,
                    seed_id=seed,
                    variant_id=variant,
                    assignments={"group": label.split("=")[1]},
                    prompt="",
                    response="ok",
                    trace=ProcessTrace(escalated=bool(rng.random() < 0.3)),
                )
            )
    return out


def test_coverage_below_the_minimum_fails_with_its_reason() -> None:
    # 20 of 64 variants recorded used to pass with only a note on stderr
    rng = np.random.default_rng(0)
    expected = _variants(32, ("a", "b"))
    keep = np.zeros(64, dtype=bool)
    keep[:20] = True
    ev = evaluate(_observations(expected, keep, rng), _METRIC, FAST, expected=expected)
    (result,) = ev.results
    assert result.coverage == {"group=a": 10 / 32, "group=b": 10 / 32}
    assert not result.passed and result.reason == "insufficient_coverage"
    assert result.reason_text == "not enough coverage: group=a has 31% of its variants (< 95%)"
    lenient = GateConfig(bootstrap_samples=400, permutation_samples=199, allow_partial=True)
    (accepted,) = evaluate(
        _observations(expected, keep, rng), _METRIC, lenient, expected=expected
    ).results
    assert accepted.reason != "insufficient_coverage"


def test_missingness_that_depends_on_the_group_fails_and_random_missingness_passes() -> None:
    rng = np.random.default_rng(1)
    expected = _variants(60, ("a", "b", "c"))
    group = np.tile(np.arange(3), 60)
    config = GateConfig(bootstrap_samples=400, permutation_samples=199, min_coverage=0.6)
    # group c loses 30% of its variants, a and b none
    keep = ~((group == 2) & (rng.random(180) < 0.3))
    (result,) = evaluate(
        _observations(expected, keep, rng), _METRIC, config, expected=expected
    ).results
    assert result.reason == "missingness_depends_on_group", result.reason_text
    assert result.p_missing is not None and result.p_missing < 0.05
    # every group loses 10% at random: nothing to flag
    keep = rng.random(180) >= 0.1
    (result,) = evaluate(
        _observations(expected, keep, rng), _METRIC, config, expected=expected
    ).results
    # (a noisy app on 60 seeds × 3 groups cannot show a gap under 0.1: inconclusive, not fail)
    assert result.verdict != "fail" and result.reason != "missingness_depends_on_group", (
        result.reason_text
    )
    assert result.p_missing is not None and result.p_missing >= 0.05


def test_fairness_cli_reports_coverage_and_fails_on_missing_variants(tmp_path: Path) -> None:
    variants = [
        {"id": f"s{s}::{g}", "seed_id": f"s{s}", "prompt": "p", "assignments": {"g": g}}
        for s in range(10)
        for g in ("a", "b")
    ]
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps({"dataset": {"variants": variants}, "metrics": [{"type": "refusal_gap"}]})
    )
    records = tmp_path / "records.jsonl"
    records.write_text(
        "".join(
            json.dumps({**v, "response": "Sure."}) + "\n"
            for v in variants
            if v["assignments"]["g"] == "a" or v["seed_id"] in ("s0", "s1")
        )
    )
    out = tmp_path / "out"
    args = [
        "fairness",
        str(suite),
        str(records),
        "-o",
        str(out),
        "--bootstrap",
        "200",
        "--permutations",
        "99",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "not enough coverage: g=b has 20% of its variants (< 95%)" in result.output
    report = json.loads((out / "report.json").read_text())
    assert report["metric_results"][0]["coverage"] == {"g=a": 1.0, "g=b": 0.2}
    # 2 complete seeds are too few to show the gap within 0.05 (inconclusive), so the run
    # passes only when inconclusive is allowed as well
    partial = CliRunner().invoke(cli, [*args, "--allow-partial"])
    assert partial.exit_code == 1 and "not enough coverage" not in partial.output
    allowed = CliRunner().invoke(cli, [*args, "--allow-partial", "--allow-inconclusive"])
    assert allowed.exit_code == 0, allowed.output
