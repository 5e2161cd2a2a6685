"""Stage 3, gating: two run results → a verdict (``spanguard check``).

:func:`.gate.compare` is the entry point: :mod:`.runfile` reads and validates the run files,
:mod:`.rules` holds one :class:`~.rules.Rule` per aggregate figure, :mod:`.noise` the
run-to-run noise model, and :mod:`.diff` pairs the two runs' evidence of each flipped case.
"""
