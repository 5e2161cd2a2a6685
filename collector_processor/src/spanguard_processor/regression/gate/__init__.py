"""Stage 3, gating: two run results → a verdict (``spanguard check``).

Two rule sets. From every case's repeats (the default): :func:`.verdict.decide` gives each
metric of :mod:`.measures` PASS, FAIL, INCONCLUSIVE or NO_SIGNAL with the paired statistics of
:mod:`.paired`, and :mod:`.evidence` writes the cases that moved; :mod:`.plan` sizes a replay
before it runs. trace2eval's rules: :func:`.gate.compare`, with :mod:`.rules` (one
:class:`~.rules.Rule` per aggregate figure), :mod:`.noise` (run-to-run noise) and :mod:`.diff`
(the two runs' evidence of each flipped case). :mod:`.runfile` reads and validates run files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .gate import compare
    from .runfile import load_run
    from .verdict import decide

__all__ = [
    "compare",
    "decide",
    "load_run",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "compare": ".gate",
        "decide": ".verdict",
        "load_run": ".runfile",
    },
)
