"""Verdicts an evaluator sent back into a trace: ``gen_ai.evaluation.result`` events.

An evaluator (``--emit-otlp``, or any other that follows the GenAI conventions) sends its
verdicts as log records parented to the evaluated span; a receiver or a file reader joins them
to that span as span events (:mod:`spanguard_processor.ingest.otlp_logs`; one naming its trace
only sits on the root). :func:`evaluations_of` reads them off a trace's spans, and the agent
trace carries them as ``evaluations`` (:class:`EvaluationResult`), in time order. Pure: span
records in, results out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spanguard import semconv

from ..ingest.otlp_logs import LOG_BODY, LOG_SEVERITY_NUMBER, LOG_SEVERITY_TEXT
from ..ingest.spans import AttrValue, SpanRecord
from ._validate import (
    JSONScalar,
    mapping,
    opt_number,
    opt_str,
    reject_unknown,
    scalar,
    string,
)

__all__ = ["EvaluationResult", "evaluations_of"]

_KEYS = ("name", "score", "label", "explanation", "response_id", "span_id", "attributes")
_NAMED = {
    semconv.GEN_AI_EVALUATION_NAME,
    semconv.GEN_AI_EVALUATION_SCORE_VALUE,
    semconv.GEN_AI_EVALUATION_SCORE_LABEL,
    semconv.GEN_AI_EVALUATION_EXPLANATION,
    semconv.GEN_AI_RESPONSE_ID,
    LOG_BODY,
    LOG_SEVERITY_TEXT,  # the record's, not the verdict's
    LOG_SEVERITY_NUMBER,
}


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """One ``gen_ai.evaluation.result``: the evaluation's name, score (value and label),
    explanation and the evaluated response's id, the span it was parented to, and its other
    scalar attributes (e.g. ``spanguard.case.id``, ``spanguard.seed_id``)."""

    name: str
    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    response_id: str | None = None
    span_id: str | None = None
    attributes: Mapping[str, JSONScalar] = field(default_factory=dict)

    @property
    def seed_id(self) -> str | None:
        """The evaluated record's seed id: ``spanguard.seed_id`` (the spans' key), or the key
        evaluation events carried before issue 51 (``spanguard.seed.id``)."""
        for key in (semconv.SEED_ID, semconv.EVENT_SEED_ID_BEFORE_51):
            value = self.attributes.get(key)
            if value is not None:
                return str(value)
        return None

    @property
    def variant_id(self) -> str | None:
        """The evaluated record's variant id: ``spanguard.variant_id`` (the spans' key), or the
        key evaluation events carried before issue 51 (``spanguard.variant.id``)."""
        for key in (semconv.VARIANT_ID, semconv.EVENT_VARIANT_ID_BEFORE_51):
            value = self.attributes.get(key)
            if value is not None:
                return str(value)
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with a fixed key order."""
        return {
            "name": self.name,
            "score": self.score,
            "label": self.label,
            "explanation": self.explanation,
            "response_id": self.response_id,
            "span_id": self.span_id,
            "attributes": dict(sorted(self.attributes.items())),
        }

    @classmethod
    def from_dict(cls, data: object, path: str) -> EvaluationResult:
        """Validate and build; :class:`TraceFormatError` names the field under ``path``."""
        obj = mapping(data, path)
        reject_unknown(obj, _KEYS, path)
        attributes = mapping(obj.get("attributes", {}), f"{path}.attributes")
        return cls(
            name=string(obj.get("name"), f"{path}.name"),
            score=opt_number(obj.get("score"), f"{path}.score"),
            label=opt_str(obj.get("label"), f"{path}.label"),
            explanation=opt_str(obj.get("explanation"), f"{path}.explanation"),
            response_id=opt_str(obj.get("response_id"), f"{path}.response_id"),
            span_id=opt_str(obj.get("span_id"), f"{path}.span_id"),
            attributes={
                key: scalar(value, f"{path}.attributes.{key}")
                for key, value in sorted(attributes.items())
            },
        )


def _text(value: AttrValue) -> str | None:
    return None if value is None or isinstance(value, Mapping | tuple | list) else str(value)


def _score(value: AttrValue) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        score = float(value)
    except ValueError:
        return None
    return score if score == score and abs(score) != float("inf") else None


def _scalar(value: AttrValue) -> JSONScalar:
    return value if isinstance(value, str | int | float | bool) else _text(value)


def evaluations_of(spans: Sequence[SpanRecord]) -> tuple[EvaluationResult, ...]:
    """The evaluation results on ``spans``' events, by time (then name and span), once each
    (a result re-sent is one)."""
    found: dict[tuple[Any, ...], EvaluationResult] = {}
    for span in spans:
        for event in span.events:
            attrs = event.attributes
            name = _text(attrs.get(semconv.GEN_AI_EVALUATION_NAME))
            if event.name != semconv.EVENT_EVALUATION_RESULT or not name:
                continue
            result = EvaluationResult(
                name=name,
                score=_score(attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)),
                label=_text(attrs.get(semconv.GEN_AI_EVALUATION_SCORE_LABEL)),
                explanation=_text(attrs.get(semconv.GEN_AI_EVALUATION_EXPLANATION)),
                response_id=_text(attrs.get(semconv.GEN_AI_RESPONSE_ID)),
                span_id=span.span_id or None,
                attributes={
                    key: _scalar(value) for key, value in sorted(attrs.items()) if key not in _NAMED
                },
            )
            key = (event.time_ns, name, span.span_id, repr(result))
            found.setdefault(key, result)
    return tuple(found[key] for key in sorted(found))
