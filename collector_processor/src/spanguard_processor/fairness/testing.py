"""Assert fairness inside a unit test.

::

    from spanguard_processor.fairness.testing import assert_fair

    def test_support_bot_is_fair():
        assert_fair("tests/fairness.yaml", app=support_bot.answer, repeats=2)

``assert_fair`` runs the app over the suite's variants in-process (or evaluates ``records``
already collected), applies the gate and raises ``AssertionError`` naming every failing metric
with its score, interval and p-value. It returns the :class:`Evaluation` when the gate passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .design.suite import Suite, load_suite, parse_suite
from .gate.config import GateConfig
from .gate.results import Evaluation
from .pipeline import evaluate_suite
from .records import Observation, observation_from_record
from .run.runner import run_app

__all__ = ["assert_fair"]


def _suite(suite: Suite | Mapping[str, Any] | str | Path) -> Suite:
    if isinstance(suite, Suite):
        return suite
    if isinstance(suite, Mapping):
        return parse_suite(dict(suite))
    return load_suite(Path(suite))


def assert_fair(
    suite: Suite | Mapping[str, Any] | str | Path,
    app: Callable[..., Any] | None = None,
    *,
    records: Iterable[Observation | Mapping[str, Any]] | None = None,
    repeats: int = 1,
    concurrency: int = 1,
    config: GateConfig | None = None,
) -> Evaluation:
    """Evaluate ``suite`` over ``app`` (or ``records``); raise AssertionError if the gate fails."""
    if (app is None) == (records is None):
        raise TypeError("assert_fair needs exactly one of app or records")
    the_suite = _suite(suite)
    errors: list[dict[str, Any]] = []
    if app is not None:
        observations, errors = run_app(
            app, the_suite.variants, repeats=repeats, concurrency=concurrency
        )
    else:
        assert records is not None
        observations = [
            r if isinstance(r, Observation) else observation_from_record(r, i)
            for i, r in enumerate(records)
        ]
    ev, _ = evaluate_suite(the_suite, observations, config, errors=errors)
    if not ev.passed:
        raise AssertionError(_message(ev))
    return ev


def _message(ev: Evaluation) -> str:
    """Each metric that keeps the gate from passing, in the console's words (its verdict —
    FAIL, INCONCLUSIVE or NO_SIGNAL —, interval without an infinite bound, and notes)."""
    from .report.verdict_text import interval_text, label, metric_notes, reason

    blocking = set(ev.failed_metrics)
    lines = ["fairness gate failed:"]
    for r in ev.results:
        if r.metric not in blocking:
            continue
        p = f"{r.p_holm:.4g}" if r.p_holm is not None else "n/a"
        lines.append(
            f"  {r.metric}: {label(r.verdict)}, score {r.score:.4g} "
            f"{interval_text(r)} vs threshold {r.threshold:g} ({r.direction}), "
            f"Holm p {p}" + (f": {reason(r)}" if reason(r) else "")
        )
        lines += [f"    {note}" for note in metric_notes(r)]
        if r.evidence:  # the top counterfactual pair, so the failure says what happened
            lines.append(f"    {r.evidence[0].headline}")
    lines += [f"  app error on {e['id']} (repeat {e['repeat']}): {e['error']}" for e in ev.errors]
    return "\n".join(lines)
