"""The verdicts: :func:`.decide.apply_gate` turns each metric's bounds and p-values into
PASS, FAIL, INCONCLUSIVE or NO_SIGNAL under :class:`.config.GateConfig`; :mod:`.results` holds
what an evaluation returns (:class:`~.results.MetricResult`, :class:`~.results.Evaluation`,
:class:`~.results.Verdict`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .config import GateConfig
    from .decide import apply_gate
    from .results import Evaluation, MetricResult, Verdict

__all__ = [
    "Evaluation",
    "GateConfig",
    "MetricResult",
    "Verdict",
    "apply_gate",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Evaluation": ".results",
        "GateConfig": ".config",
        "MetricResult": ".results",
        "Verdict": ".results",
        "apply_gate": ".decide",
    },
)
