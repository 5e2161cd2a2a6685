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


def test_library_parameter_names_become_the_options_of_the_running_command() -> None:
    import click

    from spanguard.exceptions import ConfigError, InputError
    from spanguard_processor.cli._common import in_cli_terms, option_names

    @click.group()
    def group() -> None: ...

    @group.command()
    @click.option("-o", "--out-dir", "out")
    @click.option("--tls-cert")
    @click.option("--tls-key")
    @click.option("--limit")
    def one(**_: object) -> None: ...

    @group.command()
    @click.option("--max-limit", "limit")
    def two(**_: object) -> None: ...

    names = option_names(group, click.Context(group))
    assert names == {
        "out": "--out-dir",
        "out_dir": "--out-dir",
        "tls_cert": "--tls-cert",
        "tls_key": "--tls-key",
        "max_limit": "--max-limit",
    }  # limit: ambiguous
    assert in_cli_terms(ConfigError("tls_cert/tls_key", "give both."), names) == (
        "--tls-cert/--tls-key: give both."
    )
    assert in_cli_terms(ConfigError("limit", "too big."), names) == "limit: too big."
    assert in_cli_terms(InputError("exists; pass `out` or `other`.", file="f"), names) == (
        "f: exists; pass --out-dir or `other`."
    )


def test_a_library_sentence_is_spelled_in_the_running_commands_options() -> None:
    import click

    from spanguard_processor.cli._common import in_command_terms, spell_options
    from spanguard_processor.cli.serve import serve

    with click.Context(serve):
        warning = in_command_terms("set `token_file` or SPANGUARD_TOKEN, and `tls_cert`/`tls_key`")
        reason = in_command_terms("`mode=point` applies it; `gate` is none here", mode="--gate")
    assert warning == "set --token-file or SPANGUARD_TOKEN, and --tls-cert/--tls-key"
    assert reason == "--gate point applies it; `gate` is none here"
    assert spell_options("`mode=point`, `other=1`", {}) == "`mode=point`, `other=1`"
