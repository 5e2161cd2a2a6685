"""Before any app call: the suite (:mod:`.suite`: syntax, validation, variants) and the starter
suite ``spanguard init`` writes (:mod:`.starter`). Its power comes from the statistics
(:mod:`..stats.power`: design MDE, seeds needed; ``design_mde`` is re-exported here), the
table ``spanguard suite plan`` prints from :mod:`..plan` (which asks each metric's kind), and
its expected variants' coverage is measured at evaluation (:mod:`..kinds.coverage`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from ..stats.power import design_mde
    from .starter import starter_suite
    from .suite import Suite, load_suite

__all__ = [
    "Suite",
    "design_mde",
    "load_suite",
    "starter_suite",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Suite": ".suite",
        "design_mde": "..stats.power",
        "load_suite": ".suite",
        "starter_suite": ".starter",
    },
)
