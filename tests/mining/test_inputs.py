"""What ``suite mine`` reads: stores, trace2eval logs, bad lines; and ``--observe``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .traffic import record

_TEXTS = ["My wife wants to open an account for the kids?"] * 3 + [
    "My husband wants to open an account for the kids?"
] * 3


def test_a_span_store_is_mined_like_the_span_file(tmp_path: Path) -> None:
    spans = record(_TEXTS, tmp_path)
    store = tmp_path / "spans.db"
    assert CliRunner().invoke(cli, ["ingest", str(spans), "--store", str(store)]).exit_code == 0
    out = tmp_path / "mined.yaml"
    result = CliRunner().invoke(cli, ["suite", "mine", "--store", str(store), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "read 6 request(s)" in result.output
    assert "wrote 1 seed(s)" in result.output


def test_a_trace2eval_log_is_mined_and_its_bad_lines_reported(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    rows = [{"id": f"r{i}", "input": text, "output": "ok"} for i, text in enumerate(_TEXTS)]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n", encoding="utf-8")
    out = tmp_path / "mined.yaml"
    result = CliRunner().invoke(cli, ["suite", "mine", str(log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"skipped: {log}:7: is not valid JSON" in result.output
    assert "production_trace_ids:\n        - r0\n        - r1" in out.read_text(encoding="utf-8")


def test_observe_reports_production_rates_by_value_labelled_observational(
    tmp_path: Path,
) -> None:
    texts = ["Can she close the old account today?"] * 10 + [
        "Can he close the old account today?"
    ] * 10
    spans = record(texts, tmp_path, escalate=frozenset(range(8)))
    result = CliRunner().invoke(
        cli, ["suite", "mine", str(spans), "-o", str(tmp_path / "m.yaml"), "--observe"]
    )
    assert result.exit_code == 0, result.output
    assert "confounded by what people ask — not a fairness verdict" in result.output
    lines = {
        line.split()[1]: line for line in result.output.splitlines() if line.startswith("  gender ")
    }
    assert "80.0% [49%, 94%]" in lines["female"]
    assert "0.0% [0%, 28%]" in lines["male"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--attribute", "colour"], "Error: --attribute: unknown attribute 'colour'; the lexicons"),
        (["--metric", "bogus"], "Error: --metric: unknown metric type 'bogus'; known types"),
        (["--redact-hook", "nomod:fn"], "Error: --redact-hook: the redaction hook 'nomod:fn'"),
    ],
)
def test_bad_options_exit_2_naming_the_option(
    tmp_path: Path, args: list[str], message: str
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"id": "r", "input": _TEXTS[0], "output": "ok"}) + "\n")
    result = CliRunner().invoke(
        cli, ["suite", "mine", str(log), "-o", str(tmp_path / "m.yaml"), *args]
    )
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "m.yaml").exists()


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("not sqlite\n", "unrecognised"),
        (json.dumps({"id": "r", "input": _TEXTS[0], "output": "ok"}) + "\n", "a trace log"),
    ],
)
def test_store_takes_only_a_span_store(tmp_path: Path, body: str, kind: str) -> None:
    fake = tmp_path / "spans.db"
    fake.write_text(body, encoding="utf-8")
    out = tmp_path / "m.yaml"
    result = CliRunner().invoke(cli, ["suite", "mine", "--store", str(fake), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"Error: {fake}: field '--store': is {kind}" in result.output
    assert "not a span store" in result.output
    assert "read 0 request(s)" not in result.output
    assert not out.exists()


def test_a_store_recorded_without_content_says_so(tmp_path: Path) -> None:
    spans = record(_TEXTS, tmp_path, content=False)
    store = tmp_path / "spans.db"
    assert CliRunner().invoke(cli, ["ingest", str(spans), "--store", str(store)]).exit_code == 0
    out = tmp_path / "mined.yaml"
    result = CliRunner().invoke(cli, ["suite", "mine", "--store", str(store), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert (
        "Error: all 6 request(s) read were recorded without content: there is no text to mine "
        "(record with spanguard.configure(capture_content=True))" in result.output
    )
    assert not out.exists()


def test_a_file_named_twice_is_read_once_so_min_requests_holds(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"id": "r", "input": _TEXTS[0], "output": "ok"}) + "\n")
    out = tmp_path / "m.yaml"
    same = [str(log), str(tmp_path / "." / "log.jsonl"), str(log)]
    result = CliRunner().invoke(cli, ["suite", "mine", *same, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "read 1 request(s)" in result.output
    assert not out.exists()
