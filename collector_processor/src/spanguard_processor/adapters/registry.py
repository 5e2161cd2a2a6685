"""The adapters by name (:data:`ADAPTERS`), their option parsing and :func:`load_adapted_app`
(``spanguard run --adapter``); the package re-exports them (see its docstring)."""

from __future__ import annotations

import inspect
import json
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from spanguard.exceptions import InputError

from ..common.references import resolve
from ._base import AdapterError, App

__all__ = [
    "ADAPTERS",
    "AdaptedApp",
    "adapt",
    "langchain_runnable",
    "langgraph_graph",
    "load_adapted_app",
    "openai_agent",
    "openai_chat",
    "openai_responses",
    "parse_options",
]


# name -> "module:function" (modules import their framework lazily)
ADAPTERS: dict[str, str] = {
    "langchain": "spanguard_processor.adapters.langchain:langchain_runnable",
    "langgraph": "spanguard_processor.adapters.langchain:langgraph_graph",
    "openai-agents": "spanguard_processor.adapters.openai_agents:openai_agent",
    "openai-chat": "spanguard_processor.adapters.openai_client:openai_chat",
    "openai-responses": "spanguard_processor.adapters.openai_client:openai_responses",
}
# options given as text on the command line, by their type
_BOOL_OPTIONS = frozenset({"send_assignments", "use_async", "store"})
_INT_OPTIONS = frozenset({"max_turns"})
_TEXT_OPTIONS = frozenset(
    {"model", "system", "instructions", "input_key", "output_key", "escalate_on"}
)
_HOOK_OPTIONS = frozenset({"trace_mapper", "input_builder", "context_builder"})
_OBJECT_OPTIONS = frozenset({"tool_functions"})  # module:attribute, any object
_JSON_FILE_OPTIONS = frozenset({"tools"})  # a path to a JSON file


def _factory(name: str) -> Callable[..., App]:
    target = ADAPTERS.get(name)
    if target is None:
        raise AdapterError(
            name,
            f"there is no adapter named '{name}'; choose one of {', '.join(sorted(ADAPTERS))}.",
        )
    factory: object = pkgutil.resolve_name(target)
    assert callable(factory)
    return cast("Callable[..., App]", factory)  # each entry of ADAPTERS is an adapter factory


def adapt(name: str, target: object, **options: object) -> App:
    """The app for framework object ``target`` through the adapter called ``name``."""
    return _factory(name)(target, **options)


def openai_chat(client: object, **options: object) -> App:
    """See :func:`spanguard_processor.adapters.openai_client.openai_chat`."""
    return adapt("openai-chat", client, **options)


def openai_responses(client: object, **options: object) -> App:
    """See :func:`spanguard_processor.adapters.openai_client.openai_responses`."""
    return adapt("openai-responses", client, **options)


def openai_agent(agent: object, **options: object) -> App:
    """See :func:`spanguard_processor.adapters.openai_agents.openai_agent`."""
    return adapt("openai-agents", agent, **options)


def langchain_runnable(runnable: object, **options: object) -> App:
    """See :func:`spanguard_processor.adapters.langchain.langchain_runnable`."""
    return adapt("langchain", runnable, **options)


def langgraph_graph(graph: object, **options: object) -> App:
    """See :func:`spanguard_processor.adapters.langchain.langgraph_graph`."""
    return adapt("langgraph", graph, **options)


def _option(name: str, key: str, text: str, allowed: set[str], label: str) -> object:
    if key not in allowed:
        raise AdapterError(
            name,
            f"unknown option '{key}'; this adapter takes "
            f"{', '.join(sorted(allowed)) or 'no options'}.",
        )
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
        return resolve(text, f"{label} {key}", error=_adapter_error(name))
    if key in _OBJECT_OPTIONS:
        return resolve(text, f"{label} {key}", error=_adapter_error(name), kind="object")
    if key in _JSON_FILE_OPTIONS:
        return _json_file(name, key, text, label)
    return text


def _json_file(name: str, key: str, text: str, label: str) -> object:
    path = Path(text)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(
            f"the {name} adapter's {key} file cannot be read ({exc.strerror or exc}).",
            file=text,
            field=label,
        ) from None
    except UnicodeDecodeError:
        raise InputError(
            f"the {name} adapter's {key} file is not UTF-8 text.", file=text, field=label
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the {name} adapter's {key} file is not valid JSON ({exc.msg}).",
            file=text,
            line=exc.lineno,
            field=label,
        ) from None


def parse_options(name: str, pairs: Mapping[str, str], label: str = "options") -> dict[str, object]:
    """Textual ``key=value`` options as the adapter's keyword arguments; ``label`` names them in
    messages (the command line passes its option's name)."""
    parameters = inspect.signature(_factory(name)).parameters
    allowed = {
        p
        for p in parameters
        if p
        in _BOOL_OPTIONS
        | _INT_OPTIONS
        | _TEXT_OPTIONS
        | _HOOK_OPTIONS
        | _OBJECT_OPTIONS
        | _JSON_FILE_OPTIONS
    }
    return {key: _option(name, key, value, allowed, label) for key, value in sorted(pairs.items())}


@dataclass
class AdaptedApp:
    """An adapted app for ``spanguard run``: ``call`` is the app; an :class:`AdapterError`
    raised by a response (e.g. one without text) is kept in ``problems`` as well."""

    call: App
    problems: list[AdapterError] = field(default_factory=list)
    adapter: str = ""
    target: object = None

    def raise_problems(self) -> None:
        """Raise the first response-shape problem, so the run exits 2 naming the adapter."""
        if self.problems:
            first = self.problems[0]
            more = len(self.problems) - 1
            suffix = f" ({more} more call(s) failed the same way.)" if more else ""
            raise AdapterError(
                first.adapter, first.detail.removeprefix(f"the {first.adapter} adapter: ") + suffix
            )

    def all_failed(self, errors: Sequence[Mapping[str, object]]) -> AdapterError:
        """The error for a run in which no call succeeded: the first errors and a hint."""
        shown = "".join(f"\n  {e['id']}: {str(e['error']).splitlines()[0]}" for e in errors[:3])
        more = f"\n  ({len(errors) - 3} more)" if len(errors) > 3 else ""
        return AdapterError(
            self.adapter,
            f"none of the {len(errors)} call(s) succeeded, so "
            "there is nothing to judge. "
            f"{_hint(self.adapter, self.target, errors)}"
            f"\nFirst error(s):{shown}{more}",
        )


def _hint(adapter: str, target: object, errors: Sequence[Mapping[str, object]]) -> str:
    if adapter == "langchain" and type(target).__module__.startswith("langgraph"):
        return (
            "Hint: `app` names a compiled LangGraph graph; use `adapter` langgraph, which "
            "sends {'messages': [('user', prompt)]}."
        )
    text = " ".join(str(e["error"]) for e in errors[:3])
    if "APIConnectionError" in text or "Connection" in text:
        return (
            "Hint: the model server is not reachable; check the client's base_url and that "
            "the server is running."
        )
    if "AuthenticationError" in text or "API key" in text:
        return "Hint: the model server refused the API key; check OPENAI_API_KEY."
    return (
        "Hint: call the adapted app on one prompt in Python (see docs/adapters.md) to see "
        "the full traceback."
    )


def _keeping(app: App, problems: list[AdapterError]) -> App:
    if inspect.iscoroutinefunction(app):

        async def call_async(prompt: str, assignments: Mapping[str, str]) -> object:
            try:
                return await app(prompt, assignments)
            except AdapterError as exc:
                problems.append(exc)
                raise

        return call_async

    def call(prompt: str, assignments: Mapping[str, str]) -> object:
        try:
            return app(prompt, assignments)
        except AdapterError as exc:
            problems.append(exc)
            raise

    return call


def _adapter_error(name: str) -> Callable[[str], AdapterError]:
    return lambda message: AdapterError(name, message)


def load_adapted_app(
    reference: str,
    name: str,
    options: Mapping[str, str],
    *,
    labels: tuple[str, str] = ("app", "options"),
) -> AdaptedApp:
    """Import ``module:object`` and adapt it; every mistake is an :class:`AdapterError` or a
    :class:`~spanguard.exceptions.SuiteError` naming the adapter or the reference. ``labels``
    name the reference and the options in messages (the command line passes its options')."""
    app_label, options_label = labels
    kwargs = parse_options(name, options, options_label)
    target = resolve(reference, app_label, error=_adapter_error(name), kind="object")
    problems: list[AdapterError] = []
    return AdaptedApp(_keeping(adapt(name, target, **kwargs), problems), problems, name, target)
