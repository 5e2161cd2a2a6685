"""Starting the command line loads only what the command needs (issue 50: `--help` in ≤ 0.5 s).

The time itself is measured by bench/bench_cli_start.py; here the structure that keeps it
short: help never imports numpy or scipy (about a second of imports) nor the OpenTelemetry
SDK, and the command list
that `spanguard --help` prints without importing the commands is the one click would print
after importing them all.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from spanguard_processor.cli import COMMANDS, SUMMARIES, cli

# numpy + scipy ≈ 1 s of imports; the OpenTelemetry SDK ≈ 0.07 s (`spanguard.exceptions` used
# to load it through the SDK package's eager __init__)
_HEAVY = ("numpy", "scipy", "grpc", "uvicorn", "opentelemetry.sdk.trace")

_CHILD = """
import json, sys
from spanguard_processor._entry import main
loaded = {}
for argv in (["--help"], ["fairness", "--help"], ["cases", "--help"], ["run", "--help"]):
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code == 0, (argv, exc.code)
    loaded[" ".join(argv)] = sorted(m for m in %r if m in sys.modules)
print(json.dumps(loaded))
"""


def test_help_imports_neither_numpy_nor_scipy() -> None:
    child = _CHILD % (_HEAVY,)
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {
        "--help": [],
        "fairness --help": [],
        "cases --help": [],
        "run --help": [],
    }


def test_every_command_has_the_summary_its_help_starts_with() -> None:
    assert sorted(SUMMARIES) == sorted(COMMANDS)
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None and not command.hidden, name
        assert SUMMARIES[name] == command.get_short_help_str(limit=10**6), name


@pytest.mark.parametrize("width", [40, 80, 120])
def test_the_command_list_is_the_one_click_prints_from_the_commands(width: int) -> None:
    ctx = click.Context(cli, terminal_width=width)
    ours = click.HelpFormatter(width=width)
    cli.format_commands(ctx, ours)
    theirs = click.HelpFormatter(width=width)
    click.Group.format_commands(cli, ctx, theirs)  # imports every command for its help
    assert ours.getvalue() == theirs.getvalue()
    assert "\n  fairness  Evaluate the" in ours.getvalue()
