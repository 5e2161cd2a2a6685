"""The command-line side of the adapters: ``--adapter NAME --adapter-option KEY=VALUE``."""

from __future__ import annotations

from collections.abc import Sequence

from spanguard.exceptions import InputError

from ..adapters import AdaptedApp, AdapterError, load_adapted_app

__all__ = ["adapted_app"]


def adapted_app(reference: str, adapter: str | None, options: Sequence[str]) -> AdaptedApp:
    """The adapted app for ``--app reference --adapter adapter --adapter-option k=v …``."""
    if adapter is None:
        raise InputError(
            "needs --adapter NAME (openai-chat, openai-responses, openai-agents, "
            "langchain or langgraph).",
            field="--adapter-option",
        )
    pairs: dict[str, str] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise AdapterError(
                adapter,
                f"--adapter-option {option!r} must have the form "
                "KEY=VALUE, e.g. model=gpt-4o-mini.",
            )
        if key.strip() in pairs:
            raise AdapterError(adapter, f"--adapter-option '{key.strip()}' is given twice.")
        pairs[key.strip()] = value
    return load_adapted_app(reference, adapter, pairs, labels=("--app", "--adapter-option"))
