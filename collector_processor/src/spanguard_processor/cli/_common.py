"""Pieces every command shares: the bad-input exception and the library's errors in the
command line's terms."""

from __future__ import annotations

import re

import click

from spanguard.exceptions import ConfigError, InputError

__all__ = ["BadInput", "in_cli_terms", "in_command_terms", "option_names", "spell_options"]

#: A parameter the library mentions in a sentence: `force`, or with a value, `mode=point`.
_MENTION = re.compile(r"`([a-z_][a-z0-9_]*)(?:=([^`\s]+))?`")


class BadInput(click.ClickException):
    """A user mistake: printed as ``Error: <message>`` with exit code 2, never a traceback."""

    exit_code = 2


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
