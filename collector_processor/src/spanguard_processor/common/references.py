"""Loading what a user names as ``module:attribute``: evaluator hooks, apps, adapter options,
redaction hooks, similarity matchers and metric plugins, with one rule and one set of messages.

The reference is resolved by :func:`pkgutil.resolve_name` (the attribute may be dotted,
``module:Class.method``). Every mistake becomes the caller's own error type through ``error``,
with the message written here, so a hook in a suite and a hook on the command line fail alike:

* ``<what> 'x' must have the form module:function.``
* ``<what> 'x:f' cannot be imported: No module named 'x'.``
* ``<what> 'os:nope': module os has no attribute 'nope'.``
* ``<what> 'os:sep' is not callable.``

The library never edits ``sys.path``: the ``spanguard`` command makes the working directory
importable (as ``python -m`` does) before any command runs; a library caller imports from
wherever its own ``sys.path`` reaches.
"""

from __future__ import annotations

import pkgutil
import sys
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["import_module", "resolve"]

ErrorFactory = Callable[[str], Exception]


def resolve(
    reference: str,
    what: str,
    *,
    error: ErrorFactory,
    kind: Literal["function", "object"] = "function",
) -> Any:
    """The object ``reference`` names; with ``kind="function"`` it must be callable.

    ``what`` starts every message (e.g. "the helpfulness_evaluator hook"); ``error`` turns a
    message into the exception to raise.
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise error(f"{what} '{reference}' must have the form module:{kind}.")
    try:
        target = pkgutil.resolve_name(reference)
    except ValueError:
        raise error(f"{what} '{reference}' must have the form module:{kind}.") from None
    except AttributeError as exc:
        if module_name not in sys.modules:  # raised while the module itself was running
            raise error(f"{what} '{reference}' cannot be imported: {_describe(exc)}.") from None
        raise error(
            f"{what} '{reference}': module {module_name} has no attribute '{attribute}'."
        ) from None
    except Exception as exc:
        raise error(f"{what} '{reference}' cannot be imported: {_describe(exc)}.") from None
    if kind == "function" and not callable(target):
        raise error(f"{what} '{reference}' is not callable.")
    return target


def import_module(name: str, what: str, *, error: ErrorFactory) -> Any:
    """Import the module ``name`` for its side effects (e.g. a plugin registering metrics)."""
    if not name or ":" in name:
        raise error(f"{what} '{name}' must be a module name, e.g. my_metrics.")
    try:
        return pkgutil.resolve_name(name)
    except Exception as exc:
        raise error(f"{what} '{name}' cannot be imported: {_describe(exc)}.") from None


def _describe(exc: Exception) -> str:
    return str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
