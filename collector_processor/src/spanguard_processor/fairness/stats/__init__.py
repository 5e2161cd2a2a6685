"""The statistics, pure numpy (arrays in, numbers out; no I/O): seed-cluster sums, bootstrap
and multiplicity (:mod:`.seeds`), the within-seed contrasts, interval and threshold test
(:mod:`.inference`, its null draws in :mod:`.nulls`), the "any difference" permutation test
(:mod:`.permutation`), the exact discordance bound (:mod:`.bounds`), the upper bound PASS uses
and the MDE (:mod:`.precision`), per-group intervals and the missingness test
(:mod:`.groups`), counterfactual stability's similarities (:mod:`.stability`) and the gate's
input reduced to sufficient statistics (:mod:`.sufficient`). One module is not numpy:
:mod:`.sufficient_sql` builds the SQL that fills those statistics inside an engine and reads
its rows back."""
