"""Stage 2, running: cases + candidate outputs or agent traces → a run result (``cases run``).

:func:`.run.run_cases` (recorded traffic) and :func:`.run.score_repeats` (K runs per case, e.g.
a replay) are the entry points: :mod:`.outputs` reads the candidate runs into typed records,
the checks (:mod:`..checks`) score each case and each of its repeats (:mod:`.repeats`), and
:mod:`.results` holds what a run file says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .run import run_cases, score_repeats

__all__ = [
    "run_cases",
    "score_repeats",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "run_cases": ".run",
        "score_repeats": ".run",
    },
)
