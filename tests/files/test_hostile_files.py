"""Garbage files are bad input (exit 2, the file named), never a success nor a traceback.

The measured cases: ``ingest`` of 1,000 NUL bytes printed "ingested 0 span(s) in 250
batch(es)" and exit 0; ``traces export --store nul.jsonl`` wrote 0 records, exit 0;
``fairness`` on a 5,001-digit integer or 100,000 nested brackets was exit 3 with a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import parse_json

HOSTILE = {
    "digits": "1" * 5001,
    "nesting": "[" * 100_000 + "]" * 100_000,
}


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and "internal error" not in result.output
    return result


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("nul.jsonl", b"\x00" * 1000),
        ("empty-list.json", b"[]"),
        ("empty-document.json", b'{"resourceSpans": []}'),
        ("empty-lines.jsonl", b'{"resourceSpans": []}\n{"resourceSpans": []}\n'),
    ],
)
def test_a_file_without_spans_is_not_a_successful_ingest_or_export(
    tmp_path: Path, name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run("ingest", str(path), "--store", str(tmp_path / "s.db"))
    assert result.exit_code == 2
    assert f"Error: no spans found in {path}" in result.output
    result = run("traces", "export", "--store", str(path), "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 2
    assert f"Error: no spans found in {path}" in result.output
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_fairness_refuses_hostile_json_records_with_exit_2(tmp_path: Path, case: str) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {"id": "s", "prompt": "A {g} asks.", "attributes": {"g": ["man", "woman"]}}
                    ]
                },
                "metrics": [{"type": "counterfactual_stability"}],
            }
        )
    )
    records = tmp_path / "records.jsonl"
    records.write_text('{"seed_id": "s", "variant_id": ' + HOSTILE[case] + "}\n")
    result = run("fairness", str(suite), str(records))
    assert result.exit_code == 2
    assert f"{records}:1:" in result.output
    document = tmp_path / "records.json"
    document.write_text(HOSTILE[case])
    result = run("fairness", str(suite), str(document))
    assert result.exit_code == 2 and str(document) in result.output


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_fairness_suite_is_exit_2(tmp_path: Path, case: str) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text('{"dataset": ' + HOSTILE[case] + "}")
    records = tmp_path / "records.jsonl"
    records.write_text("")
    result = run("fairness", str(suite), str(records))
    assert result.exit_code == 2 and str(suite) in result.output


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_one_json_parser_raises_only_json_decode_errors(case: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_json(HOSTILE[case])
    with pytest.raises(json.JSONDecodeError):
        parse_json(HOSTILE[case], object_pairs_hook=dict)
    deep_but_allowed = "[" * 1010 + "]" * 1010  # orjson accepts it; the stdlib would recurse
    with pytest.raises(json.JSONDecodeError):
        parse_json(deep_but_allowed, object_pairs_hook=dict)
