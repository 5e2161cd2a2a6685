from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import click
import pytest

import spanguard
from spanguard.testing import SpanCapture


def call_captured(
    app: Callable[..., Any], prompt: str, assignments: Mapping[str, str]
) -> tuple[Any, list[dict[str, Any]]]:
    """Call an adapted app inside a spanguard request; return its result and spans (by start)."""
    with SpanCapture() as capture:
        with spanguard.request("adapter_test", assignments=dict(assignments)):
            if inspect.iscoroutinefunction(app):
                result = asyncio.run(app(prompt, assignments))
            else:
                result = app(prompt, assignments)
        spans = capture.spans()
    return result, spans


@pytest.fixture(autouse=True)
def _fresh_help_options() -> Iterator[None]:
    """click caches each command's help option the first time an error message is rendered
    (with the ``-h`` alias of the CLI's context settings); clear it after each test so the CLI
    reference rendered later in the session does not depend on which tests ran first."""
    yield
    from spanguard_processor.cli import COMMANDS, cli

    commands: list[Any] = [cli]
    for name in COMMANDS:
        commands.append(cli.get_command(click.Context(cli), name))
    for command in commands:
        if command is not None and hasattr(command, "_help_option"):
            command._help_option = None
