"""Pieces every command shares: the exit codes and the one gate exit, the bad-input exception,
the library's errors in the command line's terms, and the check that no output overwrites an
input."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from spanguard.exceptions import ConfigError, InputError

if TYPE_CHECKING:
    from ..inputs.guard import FileKind, Slot

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "BadInput",
           "check_files", "exit_gate", "in_cli_terms", "in_command_terms", "option_names",
           "refuse_overwrite", "spell_options"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

#: A parameter the library mentions in a sentence: `force`, or with a value, `mode=point`.
_MENTION = re.compile(r"`([a-z_][a-z0-9_]*)(?:=([^`\s]+))?`")


class BadInput(click.ClickException):
    """A user mistake: printed as ``Error: <message>`` with exit code 2, never a traceback."""

    exit_code = EXIT_BAD_INPUT


def exit_gate(passed: bool, ctx: click.Context | None = None) -> NoReturn:
    """The one way a gating command ends once its verdict is printed: exit 0 when the gate
    passed, 1 when it failed (``fairness``, ``run``, ``compare``, ``cases run``, ``check``)."""
    (ctx or click.get_current_context()).exit(EXIT_OK if passed else EXIT_FAILED)


def option_names(command: click.Command, ctx: click.Context) -> dict[str, str]:
    """Parameter name → its long option (``max_cases`` → ``--max-cases``) over ``command`` and,
    for a group, every subcommand. The option's own name counts too (``--app`` stored as
    ``app_ref`` is also ``app``); a name two commands spell differently is left out."""
    found: dict[str, set[str]] = {}
    stack = [command]
    while stack:
        current = stack.pop()
        for param in current.params:
            longs = [o for o in param.opts if o.startswith("--")]
            if param.name and longs:
                option = max(longs, key=len)
                for name in {param.name, option[2:].replace("-", "_")}:
                    found.setdefault(name, set()).add(option)
        if isinstance(current, click.Group):
            for name in current.list_commands(ctx):
                sub = current.get_command(ctx, name)
                if sub is not None:
                    stack.append(sub)
    return {name: opts.pop() for name, opts in found.items() if len(opts) == 1}


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


def refuse_overwrite(inputs: Iterable[Path | None], outputs: Iterable[Path | None] = (), *,
                     directories: Iterable[tuple[Path | None, Iterable[str]]] = ()) -> None:
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
                raise BadInput(f"{out} is an output and also an input{same}; writing it would "
                               "destroy the input. Choose another output path.")
        for key in (real, inode):
            if key is not None and key in seen:
                both = (f"{out} is given twice as an output" if str(out) == str(seen[key])
                        else f"{out} and {seen[key]} are the same output file")
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


def check_files(inputs: Iterable[tuple[Slot, Path | Sequence[Path] | None]],
                outputs: Iterable[Path | None] = (), *,
                directories: Iterable[tuple[Path | None, Iterable[str]]] = ()
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
