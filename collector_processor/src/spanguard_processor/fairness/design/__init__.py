"""Before any app call: the suite (:mod:`.suite`: syntax, validation, variants), the starter
suite ``spanguard init`` writes (:mod:`.starter`), the suite's expected variants for coverage
(:mod:`.coverage`) and its power (:mod:`.power`: design MDE, seeds needed; :mod:`.plan`: the
table ``spanguard suite plan`` prints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from ..stats.power import design_mde
    from .plan import plan_suite
    from .starter import starter_suite
    from .suite import Suite, load_suite

__all__ = [
    "Suite",
    "design_mde",
    "load_suite",
    "plan_suite",
    "starter_suite",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Suite": ".suite",
        "design_mde": "..stats.power",
        "load_suite": ".suite",
        "plan_suite": ".plan",
        "starter_suite": ".starter",
    },
)
