"""``check --rules spanguard``: the repeats gate's verdict printed and exited on."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..common.markdown import console_text
from ..evaluation.case_run import conclude_verdict
from ..regression.gate.gate import GateOptions
from ..regression.gate.runfile import RunFile
from ..regression.gate.verdict import RegressionOptions
from ..regression.report.run_files import CheckFiles
from ._common import exit_gate, in_command_terms
from ._emit import send_case_events

if TYPE_CHECKING:
    from ..emit.otlp import Endpoint

__all__ = ["compare_repeats"]


def compare_repeats(
    base: RunFile,
    cur: RunFile,
    gate: tuple[GateOptions, RegressionOptions],
    files: CheckFiles,
    endpoint: Endpoint | None = None,
) -> None:
    """Decide and write the reports (the library), print the table and the evidence, exit 0/1."""
    outcome = conclude_verdict(base, cur, gate, files, in_command_terms)
    click.echo(console_text(outcome.text))  # app text: no terminal escapes
    send_case_events(endpoint, (cur.case_details or {}).values(), outcome.moved)
    click.echo(f"\n{outcome.summary}", err=not outcome.passed)
    exit_gate(outcome.passed)
