"""Pieces every command shares: the bad-input exception and the library's errors in the
command line's terms."""

from __future__ import annotations

import click

from spanguard.exceptions import ConfigError, InputError

__all__ = ["BadInput", "in_cli_terms", "option_names"]


class BadInput(click.ClickException):
    """A user mistake: printed as ``Error: <message>`` with exit code 2, never a traceback."""

    exit_code = 2


def option_names(command: click.Command, ctx: click.Context) -> dict[str, str]:
    """Parameter name → its long option (``max_cases`` → ``--max-cases``) over ``command`` and,
    for a group, every subcommand; a name two commands spell differently is left out."""
    found: dict[str, set[str]] = {}
    stack = [command]
    while stack:
        current = stack.pop()
        for param in current.params:
            longs = [o for o in param.opts if o.startswith("--")]
            if param.name and longs:
                found.setdefault(param.name, set()).add(max(longs, key=len))
        if isinstance(current, click.Group):
            for name in current.list_commands(ctx):
                sub = current.get_command(ctx, name)
                if sub is not None:
                    stack.append(sub)
    return {name: opts.pop() for name, opts in found.items() if len(opts) == 1}


def in_cli_terms(exc: InputError | ConfigError, options: dict[str, str]) -> str:
    """The error's message with the parameter it names spelled as the option the user typed.

    The library names parameters (``ConfigError("max_cases", …)``, or ``tls_cert/tls_key``
    for a pair); the user typed ``--max-cases``. A name that is no option stays as it is."""
    if isinstance(exc, ConfigError):
        spelled = "/".join(options.get(part, part) for part in exc.parameter.split("/"))
        return f"{spelled}: {exc.detail}"
    return str(exc)
