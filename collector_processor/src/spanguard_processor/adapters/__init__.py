"""Adapters: run the frameworks teams already use under ``spanguard run``.

Each adapter turns a framework object into fairtrace's app signature ``app(prompt,
assignments) -> str | {"text", "metadata"}``, records what the framework did as spanguard
spans (which become the variant's agent trace), and takes a ``trace_mapper`` hook:

=====================  ==========================================  =========================
name                   framework object                            function
=====================  ==========================================  =========================
``openai-chat``        ``openai.OpenAI`` / ``AsyncOpenAI`` client  :func:`openai_chat`
``openai-responses``   ``openai.OpenAI`` / ``AsyncOpenAI`` client  :func:`openai_responses`
``openai-agents``      ``agents.Agent``                            :func:`openai_agent`
``langchain``          a LangChain ``Runnable``                    :func:`langchain_runnable`
``langgraph``          a compiled LangGraph graph                  :func:`langgraph_graph`
=====================  ==========================================  =========================

From the command line: ``spanguard run SUITE --adapter langgraph --app mymod:graph``, with
``--adapter-option key=value`` for the adapter's keyword options. See docs/adapters.md.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._base import AdapterError, App, TraceMapper

__all__ = ["ADAPTERS", "AdaptedApp", "AdapterError", "App", "TraceMapper", "adapt",
           "langchain_runnable", "langgraph_graph", "load_adapted_app", "openai_agent",
           "openai_chat", "openai_responses"]

# name -> "module:function" (modules import their framework lazily)
ADAPTERS: dict[str, str] = {
    "langchain": "spanguard_processor.adapters.langchain:langchain_runnable",
    "langgraph": "spanguard_processor.adapters.langchain:langgraph_graph",
    "openai-agents": "spanguard_processor.adapters.openai_agents:openai_agent",
    "openai-chat": "spanguard_processor.adapters.openai_client:openai_chat",
    "openai-responses": "spanguard_processor.adapters.openai_client:openai_responses",
}
# options given as text on the command line, by their type
_BOOL_OPTIONS = frozenset({"send_assignments", "use_async"})
_INT_OPTIONS = frozenset({"max_turns"})
_TEXT_OPTIONS = frozenset({"model", "system", "instructions", "input_key", "output_key"})
_HOOK_OPTIONS = frozenset({"trace_mapper", "input_builder", "context_builder"})


def _factory(name: str) -> Callable[..., App]:
    target = ADAPTERS.get(name)
    if target is None:
        raise AdapterError(name, f"there is no adapter named '{name}'; choose one of "
                                 f"{', '.join(sorted(ADAPTERS))}.")
    module, _, attribute = target.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    assert callable(factory)
    return factory


def adapt(name: str, target: Any, **options: Any) -> App:
    """The app for framework object ``target`` through the adapter called ``name``."""
    return _factory(name)(target, **options)


def openai_chat(client: Any, **options: Any) -> App:
    """See :func:`spanguard_processor.adapters.openai_client.openai_chat`."""
    return adapt("openai-chat", client, **options)


def openai_responses(client: Any, **options: Any) -> App:
    """See :func:`spanguard_processor.adapters.openai_client.openai_responses`."""
    return adapt("openai-responses", client, **options)


def openai_agent(agent: Any, **options: Any) -> App:
    """See :func:`spanguard_processor.adapters.openai_agents.openai_agent`."""
    return adapt("openai-agents", agent, **options)


def langchain_runnable(runnable: Any, **options: Any) -> App:
    """See :func:`spanguard_processor.adapters.langchain.langchain_runnable`."""
    return adapt("langchain", runnable, **options)


def langgraph_graph(graph: Any, **options: Any) -> App:
    """See :func:`spanguard_processor.adapters.langchain.langgraph_graph`."""
    return adapt("langgraph", graph, **options)


def _option(name: str, key: str, text: str, allowed: set[str]) -> Any:
    if key not in allowed:
        raise AdapterError(name, f"unknown option '{key}'; this adapter takes "
                                 f"{', '.join(sorted(allowed)) or 'no options'}.")
    if key in _BOOL_OPTIONS:
        lowered = text.strip().lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no"):
            raise AdapterError(name, f"option '{key}' must be true or false, not {text!r}.")
        return lowered in ("true", "1", "yes")
    if key in _INT_OPTIONS:
        try:
            return int(text)
        except ValueError:
            raise AdapterError(name, f"option '{key}' must be an integer, not {text!r}.") from None
    if key in _HOOK_OPTIONS:
        from ..fairness.hooks import load_callable

        return load_callable(text, f"the {name} adapter's {key}", field="--adapter-option")
    return text


def parse_options(name: str, pairs: Mapping[str, str]) -> dict[str, Any]:
    """Command-line ``key=value`` options as the adapter's keyword arguments."""
    parameters = inspect.signature(_factory(name)).parameters
    allowed = {p for p in parameters if p in _BOOL_OPTIONS | _INT_OPTIONS | _TEXT_OPTIONS
               | _HOOK_OPTIONS}
    return {key: _option(name, key, value, allowed) for key, value in sorted(pairs.items())}


@dataclass
class AdaptedApp:
    """An adapted app for ``spanguard run``: ``call`` is the app; an :class:`AdapterError`
    raised by a response (e.g. one without text) is kept in ``problems`` as well."""

    call: App
    problems: list[AdapterError] = field(default_factory=list)

    def raise_problems(self) -> None:
        """Raise the first response-shape problem, so the run exits 2 naming the adapter."""
        if self.problems:
            first = self.problems[0]
            more = len(self.problems) - 1
            suffix = f" ({more} more call(s) failed the same way.)" if more else ""
            raise AdapterError(first.adapter, first.detail.removeprefix(
                f"the {first.adapter} adapter: ") + suffix)


def _keeping(app: App, problems: list[AdapterError]) -> App:
    if inspect.iscoroutinefunction(app):
        async def call_async(prompt: str, assignments: Mapping[str, str]) -> Any:
            try:
                return await app(prompt, assignments)
            except AdapterError as exc:
                problems.append(exc)
                raise

        return call_async

    def call(prompt: str, assignments: Mapping[str, str]) -> Any:
        try:
            return app(prompt, assignments)
        except AdapterError as exc:
            problems.append(exc)
            raise

    return call


def _import_object(name: str, module_name: str, attribute: str, reference: str) -> Any:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # like ``python -m``: the working directory is importable
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise AdapterError(name, f"--app '{reference}' cannot be imported: {exc}.") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise AdapterError(name, f"--app '{reference}': module {module_name} has no "
                                     f"attribute '{attribute}'.")
        target = getattr(target, part)
    return target


def load_adapted_app(reference: str, name: str, options: Mapping[str, str]) -> AdaptedApp:
    """Import ``module:object`` and adapt it; every mistake is an :class:`AdapterError` or a
    :class:`~spanguard.exceptions.SuiteError` naming the adapter or the reference."""
    kwargs = parse_options(name, options)
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise AdapterError(name, f"--app '{reference}' must have the form module:object.")
    target = _import_object(name, module_name, attribute, reference)
    problems: list[AdapterError] = []
    return AdaptedApp(_keeping(adapt(name, target, **kwargs), problems), problems)
