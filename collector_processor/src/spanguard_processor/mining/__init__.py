"""Counterfactual fairness suites mined from production traffic (docs/suite-mining.md).

Entry points: :func:`.run.run_mining` (one ``spanguard suite mine`` run: lexicons, redactor,
miner, suite file), :func:`.miner.mine` (the streaming pass over any traces with any
:class:`.swap.Swapper`), :func:`.lexicon.load_lexicon` and, for the fairness reports of a
mined suite, :mod:`.replay`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .lexicon import load_lexicon
    from .miner import mine
    from .run import run_mining

__all__ = [
    "load_lexicon",
    "mine",
    "run_mining",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "load_lexicon": ".lexicon",
        "mine": ".miner",
        "run_mining": ".run",
    },
)
