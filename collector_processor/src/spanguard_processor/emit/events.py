"""Evaluation results as GenAI ``gen_ai.evaluation.result`` events (pure: results in, events out).

The event and its attributes follow the OpenTelemetry GenAI semantic conventions
(``gen_ai.evaluation.name`` required; ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label``, ``gen_ai.evaluation.explanation``, ``gen_ai.response.id``),
parented to the evaluated trace's root span where spanguard knows it:

* a fairness metric: one summary event (name = the metric, value = its gap, label = its
  verdict, explanation = the reason), not tied to one trace; then the same verdict once in
  each evaluated trace that came from spans, on its root span (``spanguard.seed_id`` and
  ``spanguard.variant_id`` say which record), so a backend keeps it with the trace;
* each counterfactual pair of a metric's evidence: one event for each side whose trace id is
  known (name = the metric, value = that variant's value of the metric), on that trace's root
  span;
* a case of ``cases run`` / ``check``: one event (name ``spanguard.case``, value 1 for pass and
  0 for fail, label ``pass`` / ``fail`` / ``missing``) in the trace the case's record came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from spanguard import semconv

from ..ingest.spans import valid_span_id, valid_trace_id

if TYPE_CHECKING:
    from ..fairness.gate.results import Evaluation
    from ..regression.run.results import CaseOutcome

__all__ = [
    "CASE_EVALUATION",
    "EVENT_NAME",
    "EvaluationEvent",
    "case_events",
    "fairness_events",
]

EVENT_NAME: Final = semconv.EVENT_EVALUATION_RESULT
EVALUATION_NAME: Final = semconv.GEN_AI_EVALUATION_NAME
SCORE_VALUE: Final = semconv.GEN_AI_EVALUATION_SCORE_VALUE
SCORE_LABEL: Final = semconv.GEN_AI_EVALUATION_SCORE_LABEL
EXPLANATION: Final = semconv.GEN_AI_EVALUATION_EXPLANATION
RESPONSE_ID: Final = semconv.GEN_AI_RESPONSE_ID
#: the evaluation name of a case's pass/fail in ``cases run`` and ``check``
CASE_EVALUATION: Final = "spanguard.case"
CASE_ID: Final = "spanguard.case.id"
SEED_ID: Final = semconv.SEED_ID  # the spans' key (was "spanguard.seed.id")
VARIANT_ID: Final = semconv.VARIANT_ID  # the spans' key (was "spanguard.variant.id")
GROUP: Final = "spanguard.group"
PAIR_SIDE: Final = "spanguard.evaluation.pair_side"

Scalar = str | float | int | bool


@dataclass(frozen=True)
class EvaluationEvent:
    """One ``gen_ai.evaluation.result``: the attributes, and the span it belongs to (hex ids;
    ``span_id`` None when only the trace is known, both None when it is no trace's)."""

    name: str
    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    response_id: str | None = None
    extra: Mapping[str, Scalar] = field(default_factory=dict)

    def attributes(self) -> dict[str, Scalar]:
        """The log record's attributes, in a fixed order; absent values are left out."""
        found: dict[str, Scalar | None] = {
            EVALUATION_NAME: self.name,
            SCORE_VALUE: self.score,
            SCORE_LABEL: self.label,
            EXPLANATION: self.explanation or None,
            RESPONSE_ID: self.response_id,
        }
        found.update(sorted(self.extra.items()))
        return {key: value for key, value in found.items() if value is not None}


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


def _hex(value: object, valid: Callable[[str], bool]) -> str | None:
    """``value`` in lowercase when it is a valid id (``valid``: a trace or span id), else None."""
    if not isinstance(value, str):
        return None
    value = value.lower()
    return value if valid(value) else None


def _evaluated(evaluation: Evaluation) -> list[tuple[str, str | None, str, str]]:
    """The evaluated traces: (trace id, root span id, seed id, variant id), in record order,
    each trace once; records that came from no trace are left out."""
    found: dict[str, tuple[str, str | None, str, str]] = {}
    for o in evaluation.observations:
        trace_id = _hex(o.trace_id, valid_trace_id)
        if trace_id is not None and trace_id not in found:
            span_id = _hex(o.span_id, valid_span_id)
            found[trace_id] = (trace_id, span_id, o.seed_id, o.variant_id)
    return list(found.values())


def fairness_events(evaluation: Evaluation) -> list[EvaluationEvent]:
    """One summary event per metric (no trace), then one per metric in each evaluated trace
    (on its root span), then one per side of each counterfactual pair with a trace."""
    events: list[EvaluationEvent] = []
    traces = _evaluated(evaluation)
    spans = {trace_id: span_id for trace_id, span_id, _, _ in traces}
    for result in evaluation.results:
        events.append(
            EvaluationEvent(
                name=result.metric,
                score=_finite(result.score),
                label=str(result.verdict),
                explanation=result.reason_text or result.reason or None,
            )
        )
    for result in evaluation.results:
        for trace_id, span_id, seed_id, variant_id in traces:
            events.append(
                EvaluationEvent(
                    name=result.metric,
                    score=_finite(result.score),
                    label=str(result.verdict),
                    explanation=result.reason_text or result.reason or None,
                    trace_id=trace_id,
                    span_id=span_id,
                    extra={SEED_ID: seed_id, VARIANT_ID: variant_id},
                )
            )
    for result in evaluation.results:
        for pair in result.evidence:
            for side, variant in (("high", pair.high), ("low", pair.low)):
                evaluated = _hex(variant.trace_id, valid_trace_id)
                if evaluated is None:
                    continue
                events.append(
                    EvaluationEvent(
                        name=result.metric,
                        score=_finite(variant.value),
                        label=str(result.verdict),
                        explanation=pair.headline,
                        trace_id=evaluated,
                        span_id=spans.get(evaluated),
                        extra={
                            SEED_ID: pair.seed_id,
                            VARIANT_ID: variant.variant_id,
                            GROUP: variant.group,
                            PAIR_SIDE: side,
                        },
                    )
                )
    return events


_SCORES = {"pass": 1.0, "fail": 0.0}


def case_events(
    outcomes: Iterable[CaseOutcome], regressed: frozenset[str] = frozenset()
) -> list[EvaluationEvent]:
    """One event per case, in the trace its record came from (when the record names one);
    ``regressed`` names the cases ``check`` found passing in the baseline and failing now."""
    events = []
    for outcome in outcomes:
        evidence = outcome.evidence
        why = "; ".join(outcome.details) or ", ".join(outcome.failed_checks)
        if outcome.case_id in regressed:
            why = "passed in the baseline, fails now" + (f": {why}" if why else "")
        elif outcome.outcome == "missing":
            why = why or "no record matched the case"
        events.append(
            EvaluationEvent(
                name=CASE_EVALUATION,
                score=_SCORES.get(outcome.outcome),
                label=outcome.outcome,
                explanation=why or None,
                trace_id=_hex(evidence.trace_id if evidence else None, valid_trace_id),
                span_id=_hex(evidence.span_id if evidence else None, valid_span_id),
                response_id=evidence.response_id if evidence else None,
                extra={CASE_ID: outcome.case_id},
            )
        )
    return events
