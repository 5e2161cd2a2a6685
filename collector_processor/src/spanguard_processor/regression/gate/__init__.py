"""Stage 3, gating: two run results → a verdict (``spanguard check``).

Two rule sets. From every case's repeats (the default): :func:`.verdict.decide` gives each
metric of :mod:`.measures` PASS, FAIL, INCONCLUSIVE or NO_SIGNAL with the paired statistics of
:mod:`.paired`, and :mod:`.evidence` writes the cases that moved; :mod:`.plan` sizes a replay
before it runs. trace2eval's rules: :func:`.gate.compare`, with :mod:`.rules` (one
:class:`~.rules.Rule` per aggregate figure), :mod:`.noise` (run-to-run noise) and :mod:`.diff`
(the two runs' evidence of each flipped case). :mod:`.runfile` reads and validates run files.
"""
