"""Verdicts out as OpenTelemetry: ``gen_ai.evaluation.result`` log records over OTLP.

:mod:`.events` turns an evaluation (fairness metrics and their counterfactual pairs) or a case
run's outcomes into :class:`~.events.EvaluationEvent` s (pure); :mod:`.otlp` sends them through
the OpenTelemetry Logs SDK and its OTLP/HTTP or OTLP/gRPC log exporter.
"""
