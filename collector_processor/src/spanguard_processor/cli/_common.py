"""Pieces every command shares: the bad-input exception and common options."""

from __future__ import annotations

import click

__all__ = ["BadInput"]


class BadInput(click.ClickException):
    """A user mistake: printed as ``Error: <message>`` with exit code 2, never a traceback."""

    exit_code = 2
