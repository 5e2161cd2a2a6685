"""Regression cases from production traces: trace2eval-compatible ``build``, ``run``, ``check``.

Scalable (exact Jaccard dedup with prefix filtering) and process-aware (expectations on the
tools, escalation, plan, friction and retrieval of agent traces). See ``docs/regression.md``.
"""
