"""spanguard's report.json is read by the real ``fairtrace compare`` (fairtrace 0.1.0, installed
beside spanguard): fairtrace's fields keep fairtrace's shapes, spanguard's detail sits under
keys of its own."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

_FAST = ["--bootstrap", "300", "--permutations", "199"]
_GROUPS = ("man", "woman")
_METRICS = (
    "retrieval_exposure_gap",
    "escalation_parity",
    "tool_name_gap",
    "escalation_reason_parity",
    "counterfactual_stability",
)


def _fairtrace() -> str:
    found = shutil.which("fairtrace", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("fairtrace is not installed beside this Python")
    return found


def _records(seeds: int, *, biased: bool) -> list[dict[str, Any]]:
    """A RAG agent: each seed retrieves from the official and the forum documents; the biased
    candidate ranks the official documents last for women, and escalates them more."""
    rng = random.Random(11)
    rows = []
    for s in range(seeds):
        escalate = rng.random() < 0.3
        for g in _GROUPS:
            demote = biased and g == "woman"
            docs = [
                {"id": f"doc-{s}-{k}", "group": group, "rank": rank, "score": 0.9}
                for k, (group, rank) in enumerate(
                    (("official", 3), ("forum", 1)) if demote else (("official", 1), ("forum", 2))
                )
            ]
            escalated = escalate or (demote and rng.random() < 0.5)
            trace: dict[str, Any] = {
                "retrieved_documents": docs,
                "escalated": escalated,
                "tool_calls": [{"name": "kb_search"}],
            }
            if escalated:
                trace["escalation_reason"] = "policy"
            rows.append(
                {
                    "id": f"s{s:02d}::{g}",
                    "seed_id": f"s{s:02d}",
                    "prompt": f"Case {s}: a {g} customer asks about a refund.",
                    "assignments": {"gender": g},
                    "response": f"Answer {s % 3}.",
                    "response_metadata": {"trace": trace},
                }
            )
    return rows


def _report(tmp_path: Path, name: str, *, biased: bool, seeds: int = 30) -> Path:
    records = _records(seeds, biased=biased)
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "dataset": {
                    "variants": [
                        {k: r[k] for k in ("id", "seed_id", "prompt", "assignments")}
                        for r in records
                    ]
                },
                "metrics": [{"type": m} for m in _METRICS],
            }
        )
    )
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / name
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(data), "-o", str(out), *_FAST])
    assert result.exit_code in (0, 1), result.output
    return out


def test_exposure_details_keep_fairtraces_flat_shape_and_the_nested_one_beside(
    tmp_path: Path,
) -> None:
    report = json.loads((_report(tmp_path, "pr", biased=True) / "report.json").read_text())
    exposure = next(r for r in report["metric_results"] if r["metric"] == "retrieval_exposure_gap")
    flat = exposure["details"]["exposure_by_group"]
    assert set(flat) == {"official", "forum"}
    assert all(isinstance(v, float) for v in flat.values())
    nested = exposure["details"]["exposure_by_document_group"]
    assert set(nested) == {"official", "forum"} and set(nested["official"]) == {
        f"gender={g}" for g in _GROUPS
    }
    # the flat value is the document group's mean exposure per record, over every group
    assert flat["official"] == pytest.approx(sum(nested["official"].values()) / 2)


def test_the_real_fairtrace_compare_reads_two_spanguard_reports(tmp_path: Path) -> None:
    fairtrace = _fairtrace()
    base = _report(tmp_path, "main", biased=False)
    cand = _report(tmp_path, "pr", biased=True)
    done = subprocess.run(
        [fairtrace, "compare", str(base), str(cand), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr  # it crashed here
    comparison = json.loads(done.stdout)
    rows = {r["metric"]: r for r in comparison["metrics"]}
    assert set(rows) == set(_METRICS)
    assert rows["retrieval_exposure_gap"]["regressed"] is True
    spanguard_rows = json.loads((cand / "report.json").read_text())["metric_results"]
    scores = {r["metric"]: r["score"] for r in spanguard_rows}
    assert rows["retrieval_exposure_gap"]["candidate_score"] == scores["retrieval_exposure_gap"]
    evidence = next(s for s in comparison["scenarios"] if s["metric"] == "retrieval_exposure_gap")
    # forum: rank 2 for men, 1 for women; official: rank 1 for men, 3 for women
    forum, official = (1 + 1 / math.log2(3)) / 2, (1 + 1 / math.log2(4)) / 2
    assert evidence["evidence"].startswith(
        f"retrieval_exposure_gap: exposure skew `forum` {forum:.4f} vs `official` {official:.4f}"
    )
    markdown = subprocess.run(
        [fairtrace, "compare", str(base), str(cand)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert markdown.returncode == 0 and markdown.stderr == "", markdown.stderr
    assert "retrieval_exposure_gap" in markdown.stdout


def test_fairtrace_compare_reads_a_report_with_every_outcome(tmp_path: Path) -> None:
    """A metric without signal (whose score is NaN) still has fairtrace's numeric score."""
    from dataclasses import replace

    from spanguard_processor.fairness.report.reports import write_reports

    from .verdicts import FAILING, PASSING, SILENT, UNDECIDED, evaluation

    fairtrace = _fairtrace()
    base, cand = tmp_path / "main", tmp_path / "pr"
    write_reports(
        evaluation(
            PASSING,
            replace(FAILING, score=0.05),
            UNDECIDED,
            replace(SILENT, verdict="pass", score=0.0),
        ),
        base,
    )
    write_reports(evaluation(PASSING, FAILING, UNDECIDED, replace(SILENT, score=math.nan)), cand)
    written = json.loads((cand / "report.json").read_text())["metric_results"]
    assert {r["metric"]: r["score"] for r in written}["refusal_gap"] == 0.0
    done = subprocess.run(
        [fairtrace, "compare", str(base), str(cand), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = {r["metric"]: r for r in json.loads(done.stdout)["metrics"]}
    assert rows["tool_use_parity"]["regressed"] is True
    assert rows["refusal_gap"]["candidate_passed"] is False


def test_fairtrace_compare_reads_every_built_in_metric_both_ways(tmp_path: Path) -> None:
    """Two random suites over every built-in metric: each metric that changed regresses in
    one direction, so fairtrace builds its evidence from every metric's details."""
    from spanguard_processor.fairness.metrics import metric_names
    from tests.fairness.conftest import random_balanced_records

    fairtrace = _fairtrace()
    names = metric_names()
    reports = []
    for seed in (1, 2):
        records = random_balanced_records(random.Random(seed), 12, ["x", "y", "z"])
        suite = tmp_path / f"suite{seed}.json"
        suite.write_text(
            json.dumps(
                {
                    "dataset": {
                        "variants": [
                            {k: r[k] for k in ("id", "seed_id", "prompt", "assignments")}
                            for r in records
                        ]
                    },
                    "metrics": [{"type": m} for m in names],
                }
            )
        )
        data = tmp_path / f"records{seed}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in records))
        out = tmp_path / f"run{seed}"
        result = CliRunner().invoke(
            cli, ["fairness", str(suite), str(data), "-o", str(out), *_FAST]
        )
        assert result.exit_code in (0, 1), result.output
        reports.append(out)
    regressed: set[str] = set()
    for base, cand in (reports, reports[::-1]):
        done = subprocess.run(
            [fairtrace, "compare", str(base), str(cand), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        rows = json.loads(done.stdout)["metrics"]
        assert {r["metric"] for r in rows} == set(names)
        regressed |= {r["metric"] for r in rows if r.get("regressed")}
    scores = [
        {
            r["metric"]: r["score"]
            for r in json.loads((out / "report.json").read_text())["metric_results"]
        }
        for out in reports
    ]
    changed = {m for m in names if scores[0][m] != scores[1][m]}
    assert len(changed) >= 10 and regressed == changed
