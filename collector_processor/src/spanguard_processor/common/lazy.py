"""A package's re-exports, loaded on first use: what every package ``__init__`` of the
processor uses, so that importing one module of a package does not import its siblings.

The style (docs/architecture.md, "Entry points"): the ``__init__`` imports its entry points
under ``TYPE_CHECKING`` (so they are typed for mypy and editors), lists them in a sorted
``__all__`` and hands their homes to :func:`lazy_exports`::

    if TYPE_CHECKING:
        from .server import serve_forever

    __all__ = ["serve_forever"]
    __getattr__, __dir__ = lazy_exports(__name__, {"serve_forever": ".server"})

``tests/test_entry_points.py`` holds each package to it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, whose name ``n`` lives in the
    module ``homes[n]`` (relative to the package); each is resolved once, then cached."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
