"""The verdicts: :func:`.decide.apply_gate` turns each metric's bounds and p-values into
PASS, FAIL, INCONCLUSIVE or NO_SIGNAL under :class:`.config.GateConfig`; :mod:`.results` holds
what an evaluation returns (:class:`~.results.MetricResult`, :class:`~.results.Evaluation`,
:class:`~.results.Verdict`)."""
