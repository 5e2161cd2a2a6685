"""One option vocabulary across the commands (cli/_common): ``-o/--output`` for the main
output, ``--format`` only for what is printed on stdout, one ``--redact``, ``--baseline``/
``--current`` for two inputs compared. Each old spelling still works as a hidden alias that
says, in one line on stderr, what to type instead; its results are those of the new one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from spanguard_processor.cli import cli
from spanguard_processor.cli._common import RenamedOption

from .files.conftest import FAST, Workspace, build_workspace

#: what ``--format`` may choose among: renderings of the result on stdout, never a file format
STDOUT_FORMATS = {"text", "json", "markdown"}


def _commands() -> Iterator[tuple[str, click.Command]]:
    """Every ``spanguard`` command (groups too), by the path a user types."""
    stack: list[tuple[str, click.Command]] = [("spanguard", cli)]
    while stack:
        path, command = stack.pop()
        yield path, command
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            stack += [
                (f"{path} {name}", sub)
                for name in command.list_commands(ctx)
                if (sub := command.get_command(ctx, name)) is not None
            ]


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


def _visible(command: click.Command) -> list[click.Option]:
    return [p for p in _options(command) if not p.hidden]


def test_the_walk_reaches_every_command() -> None:
    paths = {path for path, _ in _commands()}
    assert {
        "spanguard cases build",
        "spanguard cases run",
        "spanguard check",
        "spanguard compare",
        "spanguard demo",
        "spanguard traces export",
        "spanguard ingest",
        "spanguard serve",
        "spanguard fairness",
    } <= paths


def test_every_main_output_is_dash_o_output_and_no_option_is_spelled_out() -> None:
    wrong = []
    for path, command in _commands():
        for option in _visible(command):
            if "--out" in option.opts or "--out" in option.secondary_opts:
                wrong.append(f"{path}: {option.opts} spells an output --out")
            if "-o" in option.opts and "--output" not in option.opts:
                wrong.append(f"{path}: -o is {option.opts}, not -o/--output")
            if "--output" in option.opts and "-o" not in option.opts:
                wrong.append(f"{path}: --output without -o")
    assert wrong == []


def test_format_only_renders_stdout() -> None:
    wrong = [
        f"{path}: --format chooses {option.type}"
        for path, command in _commands()
        for option in _visible(command)
        if "--format" in option.opts
        and not (
            isinstance(option.type, click.Choice) and set(option.type.choices) <= STDOUT_FORMATS
        )
    ]
    assert wrong == []


def test_no_visible_spelling_twice_and_old_ones_are_hidden_aliases_of_a_visible_option() -> None:
    wrong = []
    for path, command in _commands():
        spellings = [
            o for option in _options(command) for o in (*option.opts, *option.secondary_opts)
        ]
        wrong += [
            f"{path}: {o} given twice" for o in sorted(set(spellings)) if spellings.count(o) > 1
        ]
        names = [option.name for option in _visible(command)]
        wrong += [
            f"{path}: parameter {n} set by two visible options"
            for n in sorted(set(names))
            if names.count(n) > 1
        ]
        visible = {option.name: option for option in _visible(command)}
        for alias in (p for p in command.params if isinstance(p, RenamedOption)):
            target = visible.get(alias.target)
            if not alias.hidden or target is None or alias.renamed_to not in target.opts:
                wrong.append(f"{path}: {alias.opts} is no hidden alias of {alias.renamed_to}")
    assert wrong == []


def test_the_old_names_of_the_vocabulary_are_nowhere_visible() -> None:
    old = {"--out", "--redact-content", "--tolerance"}
    shown = [
        f"{path}: {o}"
        for path, command in _commands()
        for option in _visible(command)
        for o in option.opts
        if o in old
    ]
    assert shown == []


def test_two_inputs_compared_are_baseline_and_current() -> None:
    for path, command in _commands():
        opts = {o for option in _visible(command) for o in option.opts}
        if "--baseline" in opts:
            assert "--current" in opts, path
            assert not [
                p
                for p in command.params
                if isinstance(p, click.Argument) and p.get_usage_pieces(click.Context(command))
            ], path
    check = dict(_commands())["spanguard compare"]
    assert {"--baseline", "--current"} <= {o for p in _visible(check) for o in p.opts}


def test_strict_and_skip_bad_are_flags_of_their_own() -> None:
    for path, command in _commands():
        for option in _visible(command):
            if {"--strict", "--skip-bad"} & set(option.opts):
                assert option.is_flag and not option.secondary_opts, path


# --- the old spellings, at the command line ------------------------------------------------


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_workspace(tmp_path_factory.mktemp("vocabulary"))


def _invoke(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(
        cli, [str(a) for a in args], env=env, auto_envvar_prefix="SPANGUARD"
    )
    assert "Traceback" not in result.output, result.output
    return result


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_cases_build_out_is_output_with_a_note(ws: Workspace, tmp_path: Path) -> None:
    new = _invoke("cases", "build", ws.log, "--output", tmp_path / "new")
    old = _invoke("cases", "build", ws.log, "--out", tmp_path / "old")
    assert (new.exit_code, old.exit_code) == (0, 0)
    assert new.stderr == ""
    assert old.stderr == "note: --out is deprecated; use --output\n"
    assert old.stdout == new.stdout.replace(str(tmp_path / "new"), str(tmp_path / "old"))
    assert _files(tmp_path / "old") == _files(tmp_path / "new")


def test_both_spellings_at_once_are_a_usage_error(ws: Workspace, tmp_path: Path) -> None:
    both = _invoke("cases", "build", ws.log, "--out", tmp_path / "a", "-o", tmp_path / "b")
    assert both.exit_code == 2
    assert "Error: --out and --output set the same option; give only --output." in both.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_an_old_environment_variable_still_works_with_a_note(ws: Workspace, tmp_path: Path) -> None:
    result = _invoke(
        "cases", "build", ws.log, env={"SPANGUARD_CASES_BUILD_OUT": str(tmp_path / "env")}
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: SPANGUARD_CASES_BUILD_OUT is deprecated; use SPANGUARD_CASES_BUILD_OUTPUT\n"
    )
    assert (tmp_path / "env" / "cases.jsonl").is_file()
    typed = _invoke(
        "cases",
        "build",
        ws.log,
        "-o",
        tmp_path / "typed",
        env={"SPANGUARD_CASES_BUILD_OUT": str(tmp_path / "env2")},
    )
    assert typed.exit_code == 0 and typed.stderr == ""  # the command line wins, silently
    assert (tmp_path / "typed" / "cases.jsonl").is_file() and not (tmp_path / "env2").exists()


def test_cases_run_out_is_output_with_a_note(ws: Workspace, tmp_path: Path) -> None:
    args = ("cases", "run", "--cases", ws.cases, "--outputs", ws.outputs)
    new = _invoke(*args, "--output", tmp_path / "new.json")
    old = _invoke(*args, "--out", tmp_path / "old.json")
    assert (new.exit_code, old.exit_code) == (0, 0)
    assert old.stderr == "note: --out is deprecated; use --output\n" and new.stderr == ""
    assert (tmp_path / "old.json").read_bytes() == (tmp_path / "new.json").read_bytes()


def test_traces_format_is_output_format_with_a_note(ws: Workspace, tmp_path: Path) -> None:
    new = _invoke("traces", "convert", ws.traces, "-f", "fairtrace", "-o", tmp_path / "n.jsonl")
    old = _invoke(
        "traces", "convert", ws.traces, "--format", "fairtrace", "-o", tmp_path / "o.jsonl"
    )
    assert (new.exit_code, old.exit_code) == (0, 0)
    assert old.stderr == "note: --format is deprecated; use --output-format\n"
    assert (tmp_path / "o.jsonl").read_bytes() == (tmp_path / "n.jsonl").read_bytes()
    assert b'"response_metadata"' in (tmp_path / "o.jsonl").read_bytes()  # fairtrace, not agent


def test_ingest_redact_content_is_redact_with_a_note(ws: Workspace, tmp_path: Path) -> None:
    exported = {}
    for spelling in ("--redact", "--redact-content"):
        store, out = tmp_path / f"{spelling}.db", tmp_path / f"{spelling}.jsonl"
        result = _invoke("ingest", ws.spans, "--store", store, spelling)
        assert result.exit_code == 0, result.output
        assert _invoke("traces", "export", "--store", store, "-o", out).exit_code == 0
        exported[spelling] = (result.stderr, out.read_text())
    assert exported["--redact-content"][0] == (
        "note: --redact-content is deprecated; use --redact\n"
    )
    assert exported["--redact"][0] == ""
    assert exported["--redact-content"][1] == exported["--redact"][1]
    plain = tmp_path / "plain.db"
    assert _invoke("ingest", ws.spans, "--store", plain).exit_code == 0
    assert _invoke("traces", "export", "--store", plain, "-o", tmp_path / "p.jsonl").exit_code == 0
    assert (tmp_path / "p.jsonl").read_text() != exported["--redact"][1]  # it did redact


def test_an_error_names_the_spelling_the_user_typed(ws: Workspace) -> None:
    via = ("ingest", ws.spans, "--via", "http://127.0.0.1:9")
    old = _invoke(*via, "--redact-content")
    new = _invoke(*via, "--redact")
    assert (old.exit_code, new.exit_code) == (2, 2)
    assert old.stderr.endswith(
        "Error: --via: the serve receiving the spans redacts them with "
        "its own settings; leave out --redact-content/--redact-hook.\n"
    )
    assert new.stderr == (
        "Error: --via: the serve receiving the spans redacts them with its "
        "own settings; leave out --redact/--redact-hook.\n"
    )


def test_serve_redact_content_is_accepted_with_a_note() -> None:
    result = _invoke("serve", "--redact-content", "--wait-duration", "-1")
    assert result.exit_code == 2
    assert result.stderr == (
        "note: --redact-content is deprecated; use --redact\n"
        "Error: --wait-duration: must not be negative.\n"
    )


def _reports(ws: Workspace, tmp_path: Path) -> tuple[Path, Path]:
    fair = tmp_path / "fair.jsonl"
    rows = [json.loads(line) for line in ws.records.read_text().splitlines()]
    for row in rows:  # every group calls the tool and none escalates: the gaps close
        row["response_metadata"]["trace"].update(tool_calls=[{"name": "t"}], escalated=False)
    fair.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _invoke("fairness", ws.suite, fair, "-o", tmp_path / "cand", *FAST).exit_code in (0, 1)
    return ws.report, tmp_path / "cand" / "report.json"


def test_compare_positionals_are_baseline_and_current_with_a_note(
    ws: Workspace, tmp_path: Path
) -> None:
    base, cand = _reports(ws, tmp_path)
    new = _invoke("compare", "--baseline", base, "--current", cand, "--format", "json")
    old = _invoke("compare", base, cand, "--format", "json")
    assert new.exit_code == old.exit_code, new.output
    assert new.stdout == old.stdout
    assert old.stderr.startswith(
        "note: compare BASELINE CANDIDATE is deprecated; use compare "
        "--baseline BASELINE --current CANDIDATE\n"
    )
    assert old.stderr.splitlines()[1:] == new.stderr.splitlines()
    rows = json.loads(new.stdout)["metrics"]
    assert [r["baseline_score"] != r["candidate_score"] for r in rows] == [True, True]


def test_compare_tolerance_is_min_change_with_a_note(ws: Workspace, tmp_path: Path) -> None:
    base, cand = _reports(ws, tmp_path)
    pair = ("compare", "--baseline", base, "--current", cand, "--format", "json")
    new = _invoke(*pair, "--min-change", "1")
    old = _invoke(*pair, "--tolerance", "1")
    assert new.exit_code == old.exit_code, new.output
    assert new.stdout == old.stdout
    assert {r["noise_margin"] for r in json.loads(old.stdout)["metrics"]} == {1.0}
    assert old.stderr.startswith("note: --tolerance is deprecated; use --min-change\n")
    bad = _invoke(*pair, "--tolerance", "-1")
    assert bad.exit_code == 2 and "Invalid value for '--tolerance'" in bad.stderr


def test_compare_still_needs_both_inputs(ws: Workspace) -> None:
    none = _invoke("compare")
    assert none.exit_code == 2 and "Missing option '--baseline'." in none.stderr
    one = _invoke("compare", ws.report)
    assert one.exit_code == 2 and "Missing argument 'CANDIDATE'." in one.stderr
    mixed = _invoke("compare", ws.report, ws.report, "--baseline", ws.report)
    assert mixed.exit_code == 2 and "not also as arguments" in mixed.stderr
