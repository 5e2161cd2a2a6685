"""Pieces every command shares: the bad-input exception and the library's errors in the
command line's terms."""

from __future__ import annotations

import re

import click

from spanguard.exceptions import ConfigError, InputError

__all__ = ["BadInput", "in_cli_terms", "option_names"]

_MENTION = re.compile(r"`([a-z_][a-z0-9_]*)`")


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
    return _MENTION.sub(lambda m: options.get(m[1], m[0]), text)
