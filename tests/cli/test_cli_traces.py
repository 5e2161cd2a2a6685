from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from spanguard_processor.cli import cli
from tests.traces.test_model import full_trace


def test_convert_writes_fairtrace_records(tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    src.write_text(json.dumps(full_trace().to_dict()) + "\n\n")
    out = tmp_path / "records.jsonl"
    result = CliRunner().invoke(
        cli, ["traces", "convert", str(src), "-f", "fairtrace", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote 1 fairtrace record(s) to {out}\n"
    assert json.loads(out.read_text())["seed_id"] == "loan"


def test_malformed_trace_line_names_file_line_and_field_and_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    good = json.dumps(full_trace().to_dict())
    bad = full_trace().to_dict()
    bad["trace"]["retrieved_documents"][0]["rank"] = 0
    src.write_text(good + "\n" + json.dumps(bad) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    result = CliRunner().invoke(cli, ["traces", "convert", str(src), "-o", str(out)])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {src}:2: field 'trace.retrieved_documents[0].rank': "
        "expected a positive integer, got the number 0.\n"
    )
    assert out.read_text() == "keep me\n"


def test_invalid_json_line_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    src.write_text('{"trace_id": "a"}\n{oops\n')
    result = CliRunner().invoke(cli, ["traces", "convert", str(src), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"{src}:2: is not valid JSON" in result.output


def test_invalid_utf8_line_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    src.write_bytes(b'{"trace_id": "a"}\n{"trace_id": "\xff"}\n')
    result = CliRunner().invoke(cli, ["traces", "convert", str(src), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"{src}:2: is not valid UTF-8" in result.output
