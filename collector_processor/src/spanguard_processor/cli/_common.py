"""Pieces every command shares: the option vocabulary (one spelling per meaning, the old
spellings as hidden aliases that say so), the exit codes and the one gate exit, the bad-input
exception, the library's errors in the command line's terms, and the check that no output
overwrites an input.

The vocabulary, for every command:

* ``-o/--output PATH`` — the command's main output: a file, or a folder where the command
  writes a set of reports (``fairness``, ``run``, ``cases build``, ``demo``). Further outputs
  are named by what they hold: ``--markdown``/``--junit``/``--html FILE`` (one rendering
  each), ``--traces-out``, ``--records-out``.
* ``--format`` — how the result is printed on stdout (text, json, markdown) and nothing else;
  the format of a written file is ``-f/--output-format``.
* ``--redact`` — leave prompts, responses and document text out of everything written.
* two inputs compared: ``--baseline FILE --current FILE`` (``check``, ``compare``).
* ``--tolerance-scale`` multiplies trace2eval's tolerances; ``--min-*`` is a change too small
  to count as a regression (``--min-change``, ``--min-latency-change-ms``).
* ``--skip-bad`` skips bad input lines instead of stopping at the first; ``--strict`` (a flag of
  its own, not the negation of ``--skip-bad``) exits 2 when a command that skips by default
  skipped any.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from click.core import ParameterSource

from spanguard.exceptions import ConfigError, InputError

if TYPE_CHECKING:
    from ..inputs.guard import FileKind, Slot

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "TYPED",
    "BadInput",
    "RenamedOption",
    "check_files",
    "exit_gate",
    "in_cli_terms",
    "in_command_terms",
    "option_names",
    "output_option",
    "refuse_overwrite",
    "renamed",
    "renamed_arguments",
    "spell_options",
    "stored_redact_option",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

#: ``ctx.meta`` key: parameter name → the deprecated option the user typed for it (``--out``),
#: so an error about the parameter names what the user typed (:mod:`._options`).
TYPED = "spanguard.typed"

#: A parameter the library mentions in a sentence: `force`, or with a value, `mode=point`.
_MENTION = re.compile(r"`([a-z_][a-z0-9_]*)(?:=([^`\s]+))?`")


class BadInput(click.ClickException):
    """A user mistake: printed as ``Error: <message>`` with exit code 2, never a traceback."""

    exit_code = EXIT_BAD_INPUT


def exit_gate(passed: bool, ctx: click.Context | None = None) -> NoReturn:
    """The one way a gating command ends once its verdict is printed: exit 0 when the gate
    passed, 1 when it failed (``fairness``, ``run``, ``compare``, ``cases run``, ``check``)."""
    (ctx or click.get_current_context()).exit(EXIT_OK if passed else EXIT_FAILED)


class RenamedOption(click.Option):
    """An old spelling of an option, kept working but left out of ``--help``: its value goes
    to the parameter ``target`` of the option now spelled ``renamed_to``."""

    def __init__(
        self, param_decls: Sequence[str], *, target: str, renamed_to: str, **attrs: Any
    ) -> None:
        super().__init__(param_decls, hidden=True, **attrs)
        self.target = target
        self.renamed_to = renamed_to


class _HiddenArguments(click.Argument):
    """Old positional inputs, still accepted, left out of the usage line."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


#: where a value the user gave comes from, the stronger first
_PRECEDENCE = {ParameterSource.COMMANDLINE: 2, ParameterSource.ENVIRONMENT: 1}


def _envvar(ctx: click.Context, name: str) -> str:
    """The environment variable click reads for the parameter ``name`` of this command."""
    return f"{ctx.auto_envvar_prefix}_{name}".upper()


def _deprecated(old: str, new: str) -> None:
    click.echo(f"note: {old} is deprecated; use {new}", err=True)


def _adopt(ctx: click.Context, option: RenamedOption, kwargs: dict[str, Any]) -> None:
    """Move a value given under the old spelling to its parameter, saying so on stderr. The
    command line wins over the environment; given both ways at once, the new spelling wins
    (both typed on the command line: exit 2)."""
    assert option.name is not None
    value = kwargs.pop(option.name)
    source = ctx.get_parameter_source(option.name)
    if source not in _PRECEDENCE:
        return
    old = max(option.opts, key=len)
    target = ctx.get_parameter_source(option.target)
    if target is source is ParameterSource.COMMANDLINE:
        raise click.UsageError(
            f"{old} and {option.renamed_to} set the same option; give only {option.renamed_to}.",
            ctx,
        )
    if target is not None and _PRECEDENCE.get(target, 0) >= _PRECEDENCE[source]:
        return
    if source is ParameterSource.ENVIRONMENT and ctx.auto_envvar_prefix:
        _deprecated(_envvar(ctx, option.name), _envvar(ctx, option.target))
    else:
        _deprecated(old, option.renamed_to)
        ctx.meta.setdefault(TYPED, {}).update({option.target: old, option.name: old})
    kwargs[option.target] = value


def renamed(*old: str, target: str, renamed_to: str, **attrs: Any) -> Callable[[F], F]:
    """Keep ``old`` (``"--out"``) working as a hidden alias of the option ``renamed_to``
    (``"--output"``, parameter ``target``): its value is passed as ``target`` and a one-line
    note on stderr says to use the new spelling. ``attrs`` are the option's (type, is_flag…);
    the alias's parameter is the old one (``out``), so its environment variable still works
    (with a note too)."""
    name = max(old, key=len).lstrip("-").replace("-", "_")
    alias = RenamedOption([*old, name], target=target, renamed_to=renamed_to, **attrs)

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def call(*args: Any, **kwargs: Any) -> Any:
            _adopt(click.get_current_context(), alias, kwargs)
            return command(*args, **kwargs)

        call.__dict__.setdefault("__click_params__", []).append(alias)
        return call  # type: ignore[return-value]

    return decorate


def renamed_arguments(*targets: str, usage: str, metavars: Sequence[str]) -> Callable[[F], F]:
    """Keep positional inputs (``compare BASELINE CANDIDATE``) working, hidden from the usage
    line, for the options ``targets`` (``baseline``, ``current``) that replace them: their
    values go to those options, with a one-line note on stderr; ``usage`` is the new way.
    The options themselves are then required here rather than by click."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def call(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            given = kwargs.pop("legacy_inputs")
            if given:
                _positional(ctx, given, targets, metavars, usage, kwargs)
            for target in targets:
                if kwargs[target] is None:
                    raise click.UsageError(f"Missing option '--{target.replace('_', '-')}'.", ctx)
            return command(*args, **kwargs)

        argument = _HiddenArguments(
            ["legacy_inputs"], nargs=-1, required=False, type=click.Path(path_type=Path)
        )
        call.__dict__.setdefault("__click_params__", []).append(argument)
        return call  # type: ignore[return-value]

    return decorate


def _positional(
    ctx: click.Context,
    given: tuple[Path, ...],
    targets: Sequence[str],
    metavars: Sequence[str],
    usage: str,
    kwargs: dict[str, Any],
) -> None:
    if len(given) > len(targets):
        extra = " ".join(str(path) for path in given[len(targets) :])
        raise click.UsageError(f"Got unexpected extra argument ({extra})", ctx)
    if len(given) < len(targets):
        raise click.UsageError(f"Missing argument '{metavars[len(given)]}'.", ctx)
    for target in targets:
        if kwargs[target] is not None:
            raise click.UsageError(f"give the inputs as {usage} only, not also as arguments.", ctx)
    _deprecated(f"{ctx.info_name} {' '.join(metavars)}", f"{ctx.info_name} {usage}")
    kwargs.update(zip(targets, given, strict=True))


def output_option(*, help: str, directory: bool = False, **attrs: Any) -> Callable[[F], F]:
    """``-o/--output PATH``, the command's main output (a file, or a folder of reports)."""
    kind = click.Path(file_okay=not directory, dir_okay=directory, path_type=Path)
    return click.option("-o", "--output", "output", type=kind, help=help, **attrs)


def stored_redact_option(command: F) -> F:
    """``--redact`` of the commands that store spans (``serve``, ``ingest``), with its old
    spelling ``--redact-content`` kept as a hidden alias."""
    command = renamed("--redact-content", target="redact", renamed_to="--redact", is_flag=True)(
        command
    )
    return click.option(
        "--redact",
        is_flag=True,
        help="Drop prompt, response and document text before anything is stored.",
    )(command)


def option_names(command: click.Command, ctx: click.Context) -> dict[str, str]:
    """Parameter name → its long option (``max_cases`` → ``--max-cases``) over ``command`` and,
    for a group, every subcommand. The option's own name counts too (``--app`` stored as
    ``app_ref`` is also ``app``); a name two commands spell differently is left out. A hidden
    old spelling (:class:`RenamedOption`) leads to the new one, unless the user typed the old
    one: then the parameter is spelled as typed (``--out``)."""
    found: dict[str, set[str]] = {}
    aliases: dict[str, str] = {}
    stack = [command]
    while stack:
        current = stack.pop()
        for param in current.params:
            longs = [o for o in param.opts if o.startswith("--")]
            if not param.name or not longs:
                continue
            option = max(longs, key=len)
            names = {param.name, option[2:].replace("-", "_")}
            renamed_to = getattr(param, "renamed_to", None)
            if renamed_to is not None:  # a deprecated spelling: its names lead to the new one
                aliases.update(dict.fromkeys(names, renamed_to))
                continue
            for name in names:
                found.setdefault(name, set()).add(option)
        if isinstance(current, click.Group):
            for name in current.list_commands(ctx):
                sub = current.get_command(ctx, name)
                if sub is not None:
                    stack.append(sub)
    spelled = {name: opts.pop() for name, opts in found.items() if len(opts) == 1}
    for name, option in aliases.items():
        spelled.setdefault(name, option)
    typed: dict[str, str] = ctx.meta.get(TYPED, {})  # what the user typed, if an old spelling
    return {name: typed.get(name, option) for name, option in spelled.items()}


def in_cli_terms(exc: InputError | ConfigError, options: dict[str, str]) -> str:
    """The error's message with the parameter it names spelled as the option the user typed.

    The library names parameters (``ConfigError("max_cases", …)``, or ``tls_cert/tls_key``
    for a pair) and, inside a sentence, mentions one in backticks ("pass `force` to replace
    it"); the user typed ``--max-cases`` and ``--force``. A name that is no option of the
    running command stays as it is."""
    if isinstance(exc, ConfigError):
        spelled = "/".join(options.get(part, part) for part in exc.parameter.split("/"))
        text = f"{spelled}: {exc.detail}"
    else:
        text = str(exc)
    return spell_options(text, options)


def spell_options(text: str, options: dict[str, str]) -> str:
    """``text`` with every parameter it mentions in backticks spelled as its option: "pass
    `force`" → "pass --force", "`mode=point`" → "--gate point" (given ``mode`` → ``--gate``).
    A mention that is no option stays as written, backticks and all."""

    def spell(match: re.Match[str]) -> str:
        option = options.get(match[1])
        if option is None:
            return match[0]
        return option if match[2] is None else f"{option} {match[2]}"

    return _MENTION.sub(spell, text)


def in_command_terms(text: str, **aliases: str) -> str:
    """A library sentence (a warning, a gate reason, report text) as the running command's
    user reads it: its parameters spelled as that command's options. ``aliases`` name what
    the command passes on under another name (``mode="--gate"``: ``--gate`` sets
    ``GateConfig.mode``)."""
    ctx = click.get_current_context()
    return spell_options(text, {**option_names(ctx.command, ctx), **aliases})


def _identity(path: Path) -> tuple[str, tuple[int, int] | None]:
    """Where ``path`` leads: its resolved path, and (device, inode) when it exists — a hard
    link or a bind mount has another path but the same inode."""
    try:
        status = os.stat(path)
    except OSError:
        return os.path.realpath(path), None
    return os.path.realpath(path), (status.st_dev, status.st_ino)


def _input_files(paths: Iterable[Path | None]) -> list[Path]:
    """The inputs, a directory standing for the files in it (readers take a folder of files)."""
    files: list[Path] = []
    for path in paths:
        if path is None:
            continue
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file()))
        else:
            files.append(path)
    return files


def refuse_overwrite(
    inputs: Iterable[Path | None],
    outputs: Iterable[Path | None] = (),
    *,
    directories: Iterable[tuple[Path | None, Iterable[str]]] = (),
) -> None:
    """Exit 2 before anything is read when an output would replace an input, or two outputs
    are the same file.

    ``outputs`` are files the command writes; ``directories`` pairs an output folder with the
    names the command writes in it (``fairness -o DIR`` writes DIR/report.json, …). Paths are
    compared resolved (symbolic links, ``..``) and by device and inode (hard links)."""
    written = [path for path in outputs if path is not None]
    for folder, names in directories:
        if folder is not None:
            written.extend(folder / name for name in names)
    read = [(path, _identity(path)) for path in _input_files(inputs)]
    seen: dict[object, Path] = {}
    for out in written:
        real, inode = _identity(out)
        for source, (source_real, source_inode) in read:
            if real == source_real or (inode is not None and inode == source_inode):
                same = "" if str(out) == str(source) else f" (it is the input {source})"
                raise BadInput(
                    f"{out} is an output and also an input{same}; writing it would "
                    "destroy the input. Choose another output path."
                )
        for key in (real, inode):
            if key is not None and key in seen:
                both = (
                    f"{out} is given twice as an output"
                    if str(out) == str(seen[key])
                    else f"{out} and {seen[key]} are the same output file"
                )
                raise BadInput(f"{both}; give each output its own path.")
        seen[real] = out
        if inode is not None:
            seen[inode] = out


def _command() -> str:
    """The running command as the user typed it, without the program: ``cases run``."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "spanguard"
    parts = ctx.command_path.split()
    return " ".join(parts[1:]) or parts[0]


def check_files(
    inputs: Iterable[tuple[Slot, Path | Sequence[Path] | None]],
    outputs: Iterable[Path | None] = (),
    *,
    directories: Iterable[tuple[Path | None, Iterable[str]]] = (),
) -> list[tuple[Path, FileKind]]:
    """What every command does first, before it reads a byte past the first KiB: refuse an
    output that would replace an input (:func:`refuse_overwrite`), then every input that is no
    regular file, is too large to be read whole, is binary where text belongs, holds no
    records or is of another kind than its slot takes (:func:`~..inputs.guard.check_input`:
    "evalset/cases.jsonl is a case set (from `cases build`); `fairness` wants agent traces,
    fairtrace records or a span file here"). Returns each input with the kind found."""
    from ..inputs.guard import check_input

    slots: list[tuple[Slot, Path]] = []
    for slot, given in inputs:
        if given is None:
            continue
        slots.extend((slot, path) for path in ([given] if isinstance(given, Path) else given))
    refuse_overwrite([path for _, path in slots], outputs, directories=directories)
    command = _command()
    return [(path, check_input(path, slot, command)) for slot, path in slots]
