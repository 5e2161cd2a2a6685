"""The statistics, pure numpy (arrays in, numbers out; no I/O): seed-cluster sums, bootstrap
and multiplicity (:mod:`.seeds`), the within-seed contrasts, interval and threshold test
(:mod:`.inference`, its null draws in :mod:`.nulls`), the "any difference" permutation test
(:mod:`.permutation`), the exact discordance bound (:mod:`.bounds`), the upper bound PASS uses
and the MDE (:mod:`.precision`), per-group intervals and the missingness test
(:mod:`.groups`), and counterfactual stability's similarities (:mod:`.stability`)."""
