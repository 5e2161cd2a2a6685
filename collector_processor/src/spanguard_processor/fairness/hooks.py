"""Loading ``module:function`` references (evaluator hooks, apps, plugins) with clear errors."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from spanguard.exceptions import SuiteError

__all__ = ["load_callable"]


def load_callable(reference: str, what: str, *, field: str | None = None,
                  file: str | None = None) -> Callable[..., Any]:
    """Import ``module:function``; the working directory is importable, as with ``python -m``.

    Raises :class:`SuiteError` naming ``what`` (e.g. "the helpfulness_evaluator hook").
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise SuiteError(f"{what} '{reference}' must have the form module:function.",
                         file=file, field=field)
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SuiteError(f"{what} '{reference}' cannot be imported: {exc}.",
                         file=file, field=field) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise SuiteError(f"{what} '{reference}': module {module_name} has no attribute "
                             f"'{attribute}'.", file=file, field=field)
        target = getattr(target, part)
    if not callable(target):
        raise SuiteError(f"{what} '{reference}' is not callable.", file=file, field=field)
    return target
