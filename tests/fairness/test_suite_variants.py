"""Suites are public: ``spanguard suite variants`` and ``suite_variants()`` expand a suite so
any harness can send its traffic through its own stack with the right identity."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import spanguard
from spanguard.testing import capture_spans
from spanguard_processor.cli import cli
from spanguard_processor.fairness import suite_variants
from spanguard_processor.traces.convert import traces_from_readable_spans

SUITE = {
    "dataset": {
        "prompts": [
            {
                "id": "reset",
                "prompt": "Help a {gender} customer in {region} reset a password.",
                "attributes": {"region": ["EU", "US"], "gender": ["man", "woman"]},
            },
            {"id": "plain", "prompt": "What are your opening hours?"},
        ]
    },
    "metrics": [{"type": "escalation_parity", "threshold": 0.1}],
}


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(SUITE), encoding="utf-8")
    return path


def test_the_python_function_expands_the_suite_in_order(tmp_path: Path) -> None:
    rows = suite_variants(_suite(tmp_path))
    assert [r["id"] for r in rows] == [
        "reset::1",
        "reset::2",
        "reset::3",
        "reset::4",
        "plain::base",
    ]
    assert rows[0] == {
        "id": "reset::1",
        "seed_id": "reset",
        "prompt": "Help a man customer in EU reset a password.",
        "assignments": {"gender": "man", "region": "EU"},
    }
    assert rows[-1] == {
        "id": "plain::base",
        "seed_id": "plain",
        "prompt": "What are your opening hours?",
        "assignments": {},
    }


def test_the_command_writes_the_same_rows_as_jsonl(tmp_path: Path) -> None:
    suite, out = _suite(tmp_path), tmp_path / "variants.jsonl"
    result = CliRunner().invoke(cli, ["suite", "variants", str(suite), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote 5 variant(s) to {out}\n"
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == suite_variants(suite)
    stdout = CliRunner().invoke(cli, ["suite", "variants", str(suite)])
    assert stdout.exit_code == 0
    assert stdout.output == out.read_text(encoding="utf-8")  # byte-identical, every run


def test_a_bad_suite_is_a_one_line_message_with_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [{"id": "x", "prompt": "{g}", "attributes": {"g": "not a list"}}]
                },
                "metrics": [],
            }
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["suite", "variants", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.output and "attributes" in result.output
    assert "Traceback" not in result.output


def test_traffic_sent_from_the_rows_carries_each_variants_identity(tmp_path: Path) -> None:
    @spanguard.request("my_agent")
    def app(prompt: str) -> str:  # the user's app, called by the user's own harness
        return prompt.upper()

    rows = suite_variants(_suite(tmp_path))
    with capture_spans() as capture:
        for row in rows:
            with spanguard.request(
                seed_id=row["seed_id"], variant_id=row["id"], assignments=row["assignments"]
            ):
                app(row["prompt"])
    traces = traces_from_readable_spans(capture.readable_spans())
    assert [(t.variant_id, t.seed_id, dict(t.assignments)) for t in traces] == [
        (r["id"], r["seed_id"], r["assignments"]) for r in rows
    ]
