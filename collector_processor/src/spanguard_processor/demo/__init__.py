"""``spanguard demo``: an instrumented agent over real counterfactual data, end to end."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .run import DemoOptions, run_demo

__all__ = [
    "DemoOptions",
    "run_demo",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DemoOptions": ".run",
        "run_demo": ".run",
    },
)
