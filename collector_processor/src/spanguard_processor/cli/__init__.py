"""The ``spanguard`` command: a thin client of the library.

Subcommands are imported lazily, so ``spanguard --help`` stays fast and a command's heavy
imports (numpy, grpc) load only when it runs. Exit codes, for every command:

* 0 — success, the gate passed;
* 1 — the gate failed (a fairness metric or a regression check);
* 2 — bad input or usage (the message names the file, line and field), including an input
  with no records, an output that would replace an input and an output that could not be
  written (then nothing the command wrote is left behind);
* 3 — an internal error, i.e. a bug in spanguard (with a traceback to report).
"""

from __future__ import annotations

import os
import pkgutil
import sys
import traceback
from typing import Any

import click

from spanguard.exceptions import ConfigError, InputError

from ..common.writes import output_transaction
from ._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    BadInput,
    in_cli_terms,
    option_names,
)

__all__ = [
    "COMMANDS",
    "ENV_PREFIX",
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "SUMMARIES",
    "main",
]

# Every option can also come from the environment: SPANGUARD_<COMMAND>_<OPTION>, e.g.
# SPANGUARD_DEMO_QUESTIONS=20 or SPANGUARD_FAIRNESS_GATE=point (handy in CI).
ENV_PREFIX = "SPANGUARD"

# name -> "module:attribute" of a click command; modules are imported on first use.
COMMANDS: dict[str, str] = {
    "cases": "spanguard_processor.cli.cases:cases",
    "check": "spanguard_processor.cli.check:check",
    "compare": "spanguard_processor.cli.compare:compare",
    "demo": "spanguard_processor.cli.demo:demo",
    "fairness": "spanguard_processor.cli.fairness:fairness",
    "history": "spanguard_processor.cli.history:history",
    "import": "spanguard_processor.cli.importers:import_command",
    "ingest": "spanguard_processor.cli.ingest:ingest",
    "init": "spanguard_processor.cli.init:init",
    "run": "spanguard_processor.cli.run:run",
    "serve": "spanguard_processor.cli.serve:serve",
    "store": "spanguard_processor.cli.store:store",
    "suite": "spanguard_processor.cli.suite:suite",
    "traces": "spanguard_processor.cli.traces:traces",
}


# name -> the command's one-line help as `spanguard --help` lists it (its docstring's first
# sentence), so that listing imports no command module (they load numpy, scipy, grpc);
# tests/test_cli_start.py checks each against the command's own help.
SUMMARIES: dict[str, str] = {
    "cases": "Mine regression cases from traces (trace2eval-compatible) and run them.",
    "check": "Compare two run results of `spanguard cases run`; exit 0 only when every gating "
    "metric PASSes.",
    "compare": "Compare two fairness reports: report.json files, the directories holding them, "
    "or a run of a history (history.jsonl@N).",
    "demo": "Run an instrumented support agent over DiscrimEval, end to end.",
    "fairness": "Evaluate the fairness SUITE over recorded TRACES and gate on it.",
    "history": "List the runs recorded in DIR and below it, and each metric's trend, per suite.",
    "import": "Import SRC (a SOURCE file) as a suite of explicit variants written to OUT.",
    "ingest": "Read span FILES into a span store and assemble their traces.",
    "init": "Write a starter fairness suite that a fair app can pass: 16 questions × 6 channels "
    "(96 seeds) × 3 groups, two gating text metrics and five optional process metrics, each "
    "with a comment saying what it catches (`spanguard suite plan` shows its power).",
    "run": "Run the app over every variant of SUITE, capture its spans, evaluate and gate.",
    "serve": "Receive OTLP spans and log records, assemble whole agent traces and store them "
    "durably.",
    "store": "Check span stores, and copy what is readable out of a damaged one.",
    "suite": "Expand fairness suites for your own harness, plan their power, and mine them from "
    "production traffic.",
    "traces": "Convert agent-trace JSONL, and export assembled traces from span stores.",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        command = pkgutil.resolve_name(target)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click would import every command for its one-line help; the summaries hold it
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        # a stand-in command shortens the summary to the width as the command's help would be
        rows = [
            (name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests from the commands it holds; ours load lazily, so suggest from all
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=COMMANDS, ctx=ctx
            ) from None

    def invoke(self, ctx: click.Context) -> Any:
        # a command's outputs are written all or none: a failure (a bad input met late, a full
        # disk) puts back every file it wrote; a deliberate exit keeps them
        kept = (click.exceptions.Exit, click.ClickException, SystemExit)
        try:
            with output_transaction(keep=kept):
                return super().invoke(ctx)
        except (InputError, ConfigError) as exc:
            name = ctx.invoked_subcommand
            command = self.get_command(ctx, name) if name else None
            options = option_names(command, ctx) if command is not None else {}
            raise BadInput(in_cli_terms(exc, options)) from None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spanguard", prog_name="spanguard")
def cli() -> None:
    """spanguard: counterfactual fairness and regression gates for LLM agents, from OTel spans.

    \b
    Quick tour:
      spanguard demo                          instrumented agent -> OTLP -> reports
      spanguard traces convert t.jsonl -f fairtrace -o records.jsonl

    Every option can also be set as SPANGUARD_<COMMAND>_<OPTION> in the environment
    (e.g. SPANGUARD_DEMO_QUESTIONS=20).

    Exit codes: 0 pass, 1 gate failed, 2 bad input or usage, 3 internal error.
    """
    # Like ``python -m``: the working directory is importable, so --app myapp:answer, hooks,
    # matchers and plugins next to the suite load. The library itself never edits sys.path.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        cli.main(
            args=argv, prog_name="spanguard", standalone_mode=True, auto_envvar_prefix=ENV_PREFIX
        )
    except SystemExit:
        raise
    except Exception:  # a bug, not a user mistake: say so, keep the traceback, exit 3
        click.echo("spanguard: internal error (this is a bug; please report it):", err=True)
        traceback.print_exc(file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
