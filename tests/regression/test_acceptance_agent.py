"""Acceptance: the regression gate on a templated agent of our own, as a new user would use it.

Per trial: the loan agent serves 72 templated applications (baseline, ±30 % latency jitter),
cases are built from that traffic, and the cases are replayed against a second run of the same,
unchanged agent (new jitter) and against runs with one planted behaviour change. The unchanged
agent must pass 20 trials out of 20; the dropped tool call must fail 20 out of 20.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .loan_agent import Application, LoanAgent, applications, serve

TRIALS = 20


def _write(path: Path, traces: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _run(folder: Path, name: str, traces: list[dict[str, Any]]) -> Path:
    log = _write(folder / f"{name}.jsonl", traces)
    result = _cli(
        "cases",
        "run",
        "--cases",
        folder / "ev" / "cases.jsonl",
        "--traces",
        log,
        "-o",
        folder / f"{name}.json",
    )
    assert result.exit_code == 0, result.output
    return folder / f"{name}.json"


def _pairs(apps: list[Application]) -> dict[str, tuple[int, str]]:
    decide = LoanAgent(lambda ms: None, 0).decide
    return {a.prompt: (a.template, decide(a)) for a in apps}


def _trial(
    folder: Path,
    trial: int,
    count: int = 72,
    expect: bool = True,
    changes: tuple[str, ...] = ("drop_offer_tool", "escalate_self_employed"),
) -> dict[str, int]:
    folder.mkdir()
    apps = applications(count, seed=trial)
    base_log = _write(
        folder / "traffic.jsonl", serve(apps, jitter_seed=1000 + trial, expect=expect)
    )
    built = _cli("cases", "build", base_log, "-o", folder / "ev")
    assert built.exit_code == 0, built.output
    cases = [json.loads(line) for line in (folder / "ev" / "cases.jsonl").read_text().splitlines()]
    pairs = _pairs(apps)
    assert {pairs[c["input"]] for c in cases} == set(pairs.values())  # every (template, outcome)
    baseline = _run(
        folder, "baseline", [json.loads(line) for line in base_log.read_text().splitlines()]
    )
    verdicts = {"cases": len(cases)}
    for name, change in (("unchanged", None), *((c, c) for c in changes)):
        current = _run(
            folder, name, serve(apps, jitter_seed=2000 + trial, change=change, expect=expect)
        )
        checked = _cli(
            "check", "--rules", "trace2eval", "--baseline", baseline, "--current", current
        )
        verdicts[name] = checked.exit_code
        # trace2eval's p95-latency rule compares unpaired timings: "no case regressed"
        verdicts[f"{name} cases"] = int(
            checked.exit_code != 0 and "no case regressed" not in checked.output
        )
    return verdicts


@pytest.mark.slow
def test_traffic_without_any_signal_is_covered_path_by_path_over_20_trials(
    tmp_path: Path,
) -> None:
    """64 applications with no expect block (nothing signals a failure): every (template,
    outcome) path still gets a case, so dropping the bureau call or the offer tool fails, and
    escalating every self-employed applicant meets a case of a self-employed applicant that
    was not escalated (15 and 18 of 20 before the representatives spread over input groups)."""
    changes = ("no_bureau", "drop_offer_tool", "escalate_self_employed")
    results = [_trial(tmp_path / f"t{trial}", trial, 64, False, changes) for trial in range(TRIALS)]
    assert min(r["cases"] for r in results) >= 8
    for name in changes[:2]:
        assert Counter(r[name] for r in results) == {1: TRIALS}, name
    # The unchanged agent fails no case. Its exit code is 0 in 19 of these 20 trials and in 99
    # of 100: with fewer cases (wording variants of a template are one question), trace2eval's
    # unpaired p95-latency rule saw the ±30 % latency jitter as a rise once (trial 8, 10 cases;
    # `--rules spanguard` pairs the timings). On main, with more cases: 0 of 100.
    assert Counter(r["unchanged cases"] for r in results) == {0: TRIALS}
    assert Counter(r["unchanged"] for r in results)[0] >= TRIALS - 1
    # Caught only through a case whose representative is a self-employed applicant on a path
    # that did not escalate, and that asserts it: see the test below.
    assert Counter(r["escalate_self_employed"] for r in results)[1] >= TRIALS - 3


@pytest.mark.slow
def test_unchanged_agent_passes_and_planted_changes_fail_over_20_trials(tmp_path: Path) -> None:
    results = [_trial(tmp_path / f"t{trial}", trial) for trial in range(TRIALS)]
    unchanged = Counter(r["unchanged"] for r in results)
    dropped = Counter(r["drop_offer_tool"] for r in results)
    escalated = Counter(r["escalate_self_employed"] for r in results)
    assert unchanged == {0: TRIALS}, unchanged
    assert dropped == {1: TRIALS}, dropped
    # An escalation for one group is caught when some case's question comes from that group
    # and was not escalated before: luck of the representatives (issue 46, item 4). Since a
    # path needs 3 requests explained by the input to be a case of its own (docs/regression.md,
    # "Outcome paths"), there are fewer cases: 18 of these 20 trials have such a case (all 20
    # before, with a case per path seen once). And the case must assert "not escalated": a
    # cluster too small to tell "never" from the rate the log shows escalation varying at has it
    # as a rate, which these trace2eval rules do not compare (docs/regression.md, "Stable
    # properties and rates"): 16 of 20 (18 before).
    assert escalated[1] >= TRIALS - 4, escalated


def test_templated_traffic_is_split_by_process_not_collapsed(tmp_path: Path) -> None:
    apps = applications(72, seed=0)
    log = _write(tmp_path / "traffic.jsonl", serve(apps, jitter_seed=1))
    built = _cli("cases", "build", log, "-o", tmp_path / "ev")
    assert built.exit_code == 0
    cases = [
        json.loads(line) for line in (tmp_path / "ev" / "cases.jsonl").read_text().splitlines()
    ]
    assert len(cases) >= 9
    split = [line for line in built.output.splitlines() if "split by process" in line]
    assert split and int(split[0].split()[0]) >= 3
    report = (tmp_path / "ev" / "report.md").read_text()
    assert "| Questions split into several cases by process |" in report
    # The same build twice gives the same bytes.
    again = _cli("cases", "build", log, "-o", tmp_path / "ev2")
    assert again.exit_code == 0
    assert (tmp_path / "ev" / "cases.jsonl").read_bytes() == (
        tmp_path / "ev2" / "cases.jsonl"
    ).read_bytes()
