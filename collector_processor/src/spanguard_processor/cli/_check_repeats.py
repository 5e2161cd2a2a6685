"""``check --rules spanguard``: the repeats gate's verdict printed, written and exited on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..common.jsonio import write_text_atomic
from ..common.markdown import console_text
from ..regression.gate.gate import GateOptions, check_comparable
from ..regression.gate.runfile import RunFile
from ..regression.gate.verdict import RegressionOptions, decide
from ..regression.report.verdict_report import (
    render_verdict,
    render_verdict_html,
    verdict_junit,
    verdict_markdown,
    verdict_summary,
)
from ._common import exit_gate, in_command_terms
from ._emit import send_case_events

if TYPE_CHECKING:
    from ..emit.otlp import Endpoint

__all__ = ["compare_repeats"]


def compare_repeats(
    base: RunFile,
    cur: RunFile,
    gate: GateOptions,
    options: RegressionOptions,
    outputs: tuple[Path | None, Path | None, Path | None],
    endpoint: Endpoint | None = None,
) -> None:
    """Decide, print the table and the evidence, write the reports, exit 0/1."""
    gate.validate()
    check_comparable(base, cur, gate.allow_different_cases)
    verdict = decide(base, cur, options)
    text = in_command_terms(render_verdict(verdict))
    summary = verdict_summary(verdict)
    click.echo(console_text(text))  # app text: no terminal escapes
    markdown, junit, html = outputs
    if markdown is not None:
        write_text_atomic(markdown, verdict_markdown(text, summary, base.path, cur.path))
    if junit is not None:
        write_text_atomic(junit, verdict_junit(verdict))
    if html is not None:
        write_text_atomic(html, render_verdict_html(verdict, base.path, cur.path))
    moved = list(dict.fromkeys(c.case_id for c in verdict.changes))
    send_case_events(endpoint, (cur.case_details or {}).values(), moved)
    click.echo(f"\n{summary}", err=not verdict.passed)
    exit_gate(verdict.passed)
