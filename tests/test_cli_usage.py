"""Usage mistakes at the command line: a suggestion for a mistyped command, and option errors
that name the option as the user typed it. Exit code 2 for both."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from spanguard_processor.cli import cli


def test_a_mistyped_command_suggests_the_right_one() -> None:
    result = CliRunner().invoke(cli, ["fairnes"])
    assert result.exit_code == 2
    assert "No such command 'fairnes'" in result.output
    assert "'fairness'" in result.output


def test_a_mistyped_subcommand_suggests_the_right_one() -> None:
    result = CliRunner().invoke(cli, ["cases", "biuld"])
    assert result.exit_code == 2
    assert "Did you mean 'build'?" in result.output


def test_an_option_error_names_the_option_as_typed(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text("{}")
    result = CliRunner().invoke(cli, ["fairness", "--alpha", "3", str(suite), str(suite)])
    assert result.exit_code == 2
    assert "Invalid value for '--alpha'" in result.output
    assert "Traceback" not in result.output
