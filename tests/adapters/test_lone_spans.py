"""``traces export`` says when many requests are one parentless span each (issue 40).

An app instrumented by genai-openai with no parent span per request leaves one trace per model
call; each became a one-span request silently. The export now counts them by span name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from .turns import serve_turns

pytestmark = pytest.mark.integration

TURNS = 3


@pytest.mark.slow
def test_export_counts_requests_that_are_a_single_parentless_span(tmp_path: Path) -> None:
    serve_turns(tmp_path / "spans.db", "genai-openai-bare", 2 * TURNS, TURNS)
    out = tmp_path / "traces.jsonl"
    result = CliRunner().invoke(
        cli, ["traces", "export", "--store", str(tmp_path / "spans.db"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"{2 * TURNS} of {2 * TURNS} request(s) are a single parentless span "
        f"('chat gpt-4o-mini' {2 * TURNS}): each model or tool call became a request of "
        "its own."
    ) in result.stderr


@pytest.mark.slow
def test_export_of_requests_with_a_parent_says_nothing_about_lone_spans(tmp_path: Path) -> None:
    serve_turns(tmp_path / "spans.db", "genai-openai", 3)
    result = CliRunner().invoke(
        cli,
        [
            "traces",
            "export",
            "--store",
            str(tmp_path / "spans.db"),
            "-o",
            str(tmp_path / "traces.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "parentless" not in result.stderr
