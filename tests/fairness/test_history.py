"""Run history: ``spanguard run -o DIR`` appends to DIR/history.jsonl, the reports show the
trend, and ``spanguard compare`` reads history entries."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli

_FAST = ["--bootstrap", "200", "--permutations", "99"]
_APPS = "tests.fairness.apps"


def _suite(tmp_path: Path) -> Path:
    # 40 agreeing seeds bound a fair app's gap under 0.1 (1 − 0.05^(1/40) = 0.072): it can PASS
    path = tmp_path / "suite.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {
                            "id": f"seed{i}",
                            "prompt": f"Case {i}: a {{gender}} customer asks.",
                            "attributes": {"gender": ["man", "woman"]},
                        }
                        for i in range(40)
                    ]
                },
                "metrics": [{"type": "tool_use_parity"}, {"type": "escalation_parity"}],
            }
        )
    )
    return path


def _run(suite: Path, app: str, out: Path) -> int:
    result = CliRunner().invoke(
        cli, ["run", str(suite), "--app", f"{_APPS}:{app}", "-o", str(out), *_FAST]
    )
    return result.exit_code


def test_each_run_appends_history_and_reports_show_the_trend(tmp_path: Path) -> None:
    suite, out = _suite(tmp_path), tmp_path / "out"
    assert _run(suite, "fair", out) == 0
    first_md = (out / "report.md").read_text()
    assert "## Trend (against the previous 0 run(s))" in first_md
    assert "| tool_use_parity | – | 0.0000 PASS | new |" in first_md
    assert _run(suite, "biased", out) == 1
    lines = (out / "history.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["failure_count"] == 0 and second["failure_count"] == 2
    assert second["failed_metrics"] == ["escalation_parity", "tool_use_parity"]
    assert set(second["metrics"]["tool_use_parity"]) >= {
        "score",
        "passed",
        "direction",
        "threshold",
        "confidence_interval",
    }
    md = (out / "report.md").read_text()
    assert "| tool_use_parity | 0.0000 PASS | 1.0000 FAIL | ↑ worse (+1.0000) |" in md
    report = json.loads((out / "report.json").read_text())
    trend = report["spanguard"]["trend"]
    assert trend["previous_runs"] == 1
    assert {r["metric"]: r["change"] for r in trend["metrics"]} == {
        "escalation_parity": "worse",
        "tool_use_parity": "worse",
    }
    assert '<section id="trend">' in (out / "report.html").read_text()


def test_compare_reads_history_entries(tmp_path: Path) -> None:
    suite, out = _suite(tmp_path), tmp_path / "out"
    _run(suite, "fair", out)
    _run(suite, "biased", out)
    history = out / "history.jsonl"
    worse = CliRunner().invoke(cli, ["compare", f"{history}@-2", str(history), "--format", "json"])
    assert worse.exit_code == 1, worse.output
    assert json.loads(worse.stdout)["regressed"] == ["escalation_parity", "tool_use_parity"]
    same = CliRunner().invoke(cli, ["compare", str(history), str(out)])
    assert same.exit_code == 0 and same.output.endswith("no fairness regression\n")
    better = CliRunner().invoke(cli, ["compare", f"{history}@1", f"{history}@0"])
    assert better.exit_code == 0
    missing = CliRunner().invoke(
        cli, ["compare", "--baseline", f"{history}@5", "--current", str(out)]
    )
    assert missing.exit_code == 2
    assert missing.output == f"Error: {history}: has 2 run(s); there is no run @5.\n"


def test_compare_reads_fairtrace_history_json(tmp_path: Path) -> None:
    entries = [
        {
            "generated_at": "2026-11-29T23:20:08+00:00",
            "variant_count": 4,
            "failure_count": 0,
            "failed_metrics": [],
            "metrics": {"tool_use_parity": {"score": 0.0, "passed": True, "direction": "lower"}},
        },
        {
            "generated_at": "2026-11-29T23:30:08+00:00",
            "variant_count": 4,
            "failure_count": 1,
            "failed_metrics": ["tool_use_parity"],
            "metrics": {"tool_use_parity": {"score": 1.0, "passed": False, "direction": "lower"}},
        },
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(entries, indent=2))
    result = CliRunner().invoke(cli, ["compare", f"{path}@0", f"{path}@-1"])
    assert result.exit_code == 1
    assert result.output.endswith("fairness regressed: tool_use_parity\n")


def test_a_corrupt_history_line_is_bad_input_and_keeps_the_runs(tmp_path: Path) -> None:
    suite, out = _suite(tmp_path), tmp_path / "out"
    _run(suite, "fair", out)
    history = out / "history.jsonl"
    good = history.read_text()
    history.write_text(good + "{not json\n")
    result = CliRunner().invoke(
        cli, ["run", str(suite), "--app", f"{_APPS}:fair", "-o", str(out), *_FAST]
    )
    assert result.exit_code == 2
    assert result.output.endswith(
        f"Error: {history}:2: is not valid JSON (unexpected character, expected a string key); "
        "each line of a history file is one run.\n"
    )
    assert history.read_text() == good + "{not json\n"


def test_trends_never_mix_suites_and_history_lists_runs_per_suite(tmp_path: Path) -> None:
    suite, out = _suite(tmp_path), tmp_path / "out"
    first = CliRunner().invoke(
        cli,
        ["run", str(suite), "--app", f"{_APPS}:fair", "-o", str(out), "--label", "main", *_FAST],
    )
    assert first.exit_code == 0 and "trend " not in first.output
    second = CliRunner().invoke(
        cli,
        ["run", str(suite), "--app", f"{_APPS}:biased", "-o", str(out), "--label", "pr-7", *_FAST],
    )
    assert (
        "trend tool_use_parity                0.0000 PASS → 1.0000 FAIL  ↑ worse (+1.0000)"
        in second.output
    )
    other = tmp_path / "other.json"  # another suite in the same folder: a trend of its own
    other.write_text(suite.read_text().replace("asks.", "asks again."))
    third = CliRunner().invoke(
        cli,
        ["run", str(other), "--app", f"{_APPS}:fair", "-o", str(out), "--label", "pr-8", *_FAST],
    )
    assert third.exit_code == 0 and "trend " not in third.output
    report = json.loads((out / "report.json").read_text())
    assert report["spanguard"]["trend"]["previous_runs"] == 0
    entries = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert [e["label"] for e in entries] == ["main", "pr-7", "pr-8"]
    listed = CliRunner().invoke(cli, ["history", str(out)])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].startswith("suite 1 (sha256 ") and lines[0].endswith("): 2 run(s)")
    assert lines[1].split()[:2] == ["@0", "main"] and lines[1].endswith("PASSED")
    assert lines[2].split()[:2] == ["@1", "pr-7"]
    assert lines[2].endswith("FAILED: escalation_parity, tool_use_parity")
    assert "  trend tool_use_parity                0.0000 PASS → 1.0000 FAIL" in lines
    assert any(
        line.startswith("suite 2 (sha256 ") and line.endswith("): 1 run(s)") for line in lines
    )
    empty = CliRunner().invoke(cli, ["history", str(tmp_path / "nowhere")])
    assert empty.exit_code == 2
    assert empty.output == (
        f"Error: {tmp_path / 'nowhere' / 'history.jsonl'}: there is no run "
        "history here or below it; `spanguard run -o DIR` and `spanguard "
        "fairness -o DIR` record one.\n"
    )


def test_the_label_defaults_to_the_git_commit(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    commit = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    suite, out = _suite(tmp_path), tmp_path / "out"
    assert _run(suite, "fair", out) == 0
    entry = json.loads((out / "history.jsonl").read_text())
    assert entry["label"] == commit


def test_history_finds_the_runs_below_a_folder_of_branches(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """docs/quickstart.md writes reports/main and reports/pr; `spanguard history reports/`
    lists both, each with its own runs and trends (never mixed)."""
    monkeypatch.chdir(tmp_path)
    suite = _suite(tmp_path)
    assert _run(suite, "fair", Path("reports/main")) == 0
    assert _run(suite, "biased", Path("reports/pr")) == 1
    assert _run(suite, "fair", Path("reports/pr")) == 0
    (tmp_path / "reports" / ".cache").mkdir()  # a hidden folder is not searched
    (tmp_path / "reports" / ".cache" / "history.jsonl").write_text("{not json\n")
    listed = CliRunner().invoke(cli, ["history", "reports/"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0] == "reports/main/history.jsonl:"
    assert lines[1].startswith("  suite 1 (sha256 ") and lines[1].endswith("): 1 run(s)")
    pr = lines.index("reports/pr/history.jsonl:")
    assert lines[pr + 1].endswith("): 2 run(s)")
    assert lines[pr + 2].split()[0] == "@0"
    assert lines[pr + 2].endswith("FAILED: escalation_parity, tool_use_parity")
    assert lines[pr + 3].endswith("PASSED")
    assert "    trend tool_use_parity                1.0000 FAIL → 0.0000 PASS" in lines
    data = json.loads(CliRunner().invoke(cli, ["history", "reports", "--format", "json"]).stdout)
    assert [h["file"] for h in data["histories"]] == [
        "reports/main/history.jsonl",
        "reports/pr/history.jsonl",
    ]
    assert data["histories"][1]["suites"][0]["verdicts"]["tool_use_parity"] == ["fail", "pass"]
    # a folder with its own history lists it as before, without a header
    own = CliRunner().invoke(cli, ["history", "reports/pr"])
    assert own.exit_code == 0 and own.output.startswith("suite 1 (sha256 ")


def test_history_and_trends_say_every_outcome(tmp_path: Path) -> None:
    from spanguard_processor.fairness.report.history import record_run
    from spanguard_processor.fairness.report.reports import write_reports
    from tests.reports.verdicts import PASSING, SILENT, UNDECIDED, evaluation

    out = tmp_path / "out"
    silent = replace(SILENT, metric="escalation_parity")
    runs = [
        evaluation(PASSING, UNDECIDED),
        evaluation(silent, UNDECIDED),
        evaluation(PASSING, replace(UNDECIDED, score=0.1)),
    ]
    rows = []
    for number, ev in enumerate(runs):
        write_reports(ev, out)
        rows.append(record_run(ev, out, "test", label=f"run{number}"))
    lost = {r["metric"]: r for r in rows[1]}["escalation_parity"]
    assert (lost["score"], lost["verdict"], lost["change"]) == (None, "no_signal", "no signal")
    back = {r["metric"]: r for r in rows[2]}["escalation_parity"]
    assert back["previous_scores"] == [0.02, None]  # the NO_SIGNAL run measured nothing
    assert back["change"] == "unchanged"
    md = (out / "report.md").read_text()
    assert (
        "| escalation_parity | 0.0200 PASS → – NO_SIGNAL | 0.0200 PASS | = unchanged (+0.0000) |"
    ) in md
    listed = CliRunner().invoke(cli, ["history", str(out)])
    lines = listed.output.splitlines()
    assert lines[1].endswith("FAILED: friction_point_gap (INCONCLUSIVE)")
    assert lines[2].endswith(
        "FAILED: escalation_parity (NO_SIGNAL), friction_point_gap (INCONCLUSIVE)"
    )
    assert "  trend escalation_parity              0.0200 PASS → – NO_SIGNAL → 0.0200 PASS" in lines
    # compare reads the entries' verdicts: losing the signal is a regression
    history = out / "history.jsonl"
    compared = CliRunner().invoke(cli, ["compare", f"{history}@0", f"{history}@1"])
    assert compared.exit_code == 1
    assert compared.output.endswith("fairness regressed: escalation_parity\n")


def test_a_first_run_without_signal_has_no_trend_line(tmp_path: Path) -> None:
    from spanguard_processor.fairness.report.history import record_run, trend_lines
    from tests.reports.verdicts import SILENT, evaluation

    rows = record_run(evaluation(SILENT), tmp_path, "test", label="first")
    assert rows[0]["change"] == "no signal" and trend_lines(rows) == []
    again = record_run(evaluation(SILENT), tmp_path, "test", label="second")
    assert trend_lines(again) == [
        "trend refusal_gap                    – NO_SIGNAL → – NO_SIGNAL  no signal"
    ]
