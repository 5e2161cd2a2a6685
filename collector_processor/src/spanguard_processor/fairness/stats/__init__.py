"""The statistics, pure numpy (arrays in, numbers out; no I/O): seed-cluster sums, bootstrap
and multiplicity (:mod:`.seeds`), the within-seed contrasts, interval and threshold test
(:mod:`.inference`, its null draws in :mod:`.nulls`), the "any difference" permutation test
(:mod:`.permutation`), the exact discordance bound (:mod:`.bounds`), the upper bound PASS uses
and the MDE (:mod:`.precision`), design power before any data (:mod:`.power`), per-group
intervals and the missingness test (:mod:`.groups`), counterfactual stability's similarities
(:mod:`.stability`) and the gate's input reduced to sufficient statistics (:mod:`.sufficient`).
One module is not numpy: :mod:`.sufficient_sql` builds the SQL that fills those statistics
inside an engine and reads its rows back. Imports nothing of fairness above it: only the shared
types (``fairness/vocabulary``, ``fairness/records``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.lazy import lazy_exports

if TYPE_CHECKING:
    from .bounds import discordance_bound
    from .groups import group_stats
    from .inference import infer_gap
    from .permutation import permutation_p
    from .precision import Precision

__all__ = [
    "Precision",
    "discordance_bound",
    "group_stats",
    "infer_gap",
    "permutation_p",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Precision": ".precision",
        "discordance_bound": ".bounds",
        "group_stats": ".groups",
        "infer_gap": ".inference",
        "permutation_p": ".permutation",
    },
)
