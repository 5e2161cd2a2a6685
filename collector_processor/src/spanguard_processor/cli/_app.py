"""The options of a command that calls an app in-process (``run``, ``cases run --app``), the
app they name (plain or adapted, its signature read once), and the progress bar of its calls.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..adapters import AdaptedApp
    from ..harness.calls import App

__all__ = ["app_options", "call_progress", "load_app"]

F = TypeVar("F", bound=Callable[..., Any])


def app_options(
    *, unit: str, required: bool = True, repeats_help: str | None = None
) -> Callable[[F], F]:
    """``--app``, ``--adapter``, ``--adapter-option``, ``--repeats`` and ``--concurrency``;
    ``unit`` names what one call answers ("variant", "case"). With ``repeats_help``,
    ``--repeats`` has no default (None: the command picks one) and that help."""
    options = (
        click.option(
            "--app",
            "app_ref",
            required=required,
            default=None,
            metavar="MODULE:FUNCTION",
            help="The app: app(prompt) or app(prompt, assignments) -> str or "
            "{'text', 'metadata'}; plain or async.",
        ),
        click.option(
            "--adapter",
            "adapter",
            default=None,
            metavar="NAME",
            help="Adapt a framework object named by --app: openai-chat, openai-responses, "
            "openai-agents, langchain or langgraph (see docs/adapters.md).",
        ),
        click.option(
            "--adapter-option",
            "adapter_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="An option of the adapter, e.g. model=gpt-4o-mini (repeatable).",
        ),
        click.option(
            "--repeats",
            type=click.IntRange(min=1),
            default=None if repeats_help else 1,
            show_default=not repeats_help,
            help=repeats_help or f"Calls per {unit} (for stochastic apps).",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help=f"{unit.capitalize()}s in flight at once (threads, or tasks for an async app).",
        ),
    )

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def load_app(
    app_ref: str, adapter: str | None, adapter_options: tuple[str, ...]
) -> tuple[App, AdaptedApp | None]:
    """The app ``--app`` names (adapted by ``--adapter`` when given), its signature read once:
    an app that cannot be imported or whose signature fits no form is bad input (exit 2)."""
    from spanguard.exceptions import SuiteError

    from ..common.references import resolve
    from ..harness.calls import as_app

    adapted = None
    if adapter is not None or adapter_options:
        from ._adapters import adapted_app

        adapted = adapted_app(app_ref, adapter, adapter_options)
        return as_app(adapted.call), adapted
    function = resolve(app_ref, "the app", error=lambda message: SuiteError(message, field="--app"))
    return as_app(function), adapted


@contextmanager
def call_progress(total: int) -> Iterator[Callable[[int], None] | None]:
    """A progress callback for ``total`` app calls, drawn on a terminal (never in logs);
    None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    lock = threading.Lock()
    with click.progressbar(length=total, label="calling the app", file=sys.stderr) as bar:

        def tick(done: int) -> None:
            with lock:  # worker threads report concurrently
                bar.update(done)

        yield tick
