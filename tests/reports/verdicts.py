"""Evaluations built directly from MetricResults, one per outcome: PASS, FAIL, INCONCLUSIVE
and NO_SIGNAL (the gate decides verdicts elsewhere; these tests check how each one reads)."""

from __future__ import annotations

import math
from dataclasses import replace

from spanguard_processor.fairness import GateConfig
from spanguard_processor.fairness.gate.results import Evaluation, MetricResult, Verdict


def result(
    metric: str,
    verdict: Verdict,
    *,
    score: float = 0.02,
    ci: tuple[float, float] | None = (0.0, 0.06),
    threshold: float = 0.1,
    **fields: object,
) -> MetricResult:
    base = MetricResult(
        metric=metric,
        score=score,
        threshold=threshold,
        direction="lower",
        category="Agent",
        records=40,
        confidence_interval=ci,
        p_value=0.5,
        details={},
        groups_with_data=2,
        seeds=20,
        p_method="permutation",
        mde=0.08,
        passed=verdict == Verdict.PASS,
        verdict=verdict,
        p_holm=0.5,
        signal="escalations",
        signal_records=40,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


PASSING = result(
    "escalation_parity",
    Verdict.PASS,
    reason="shown_within_threshold",
    reason_text="within threshold, shown: upper bound < 0.1",
)
FAILING = result(
    "tool_use_parity",
    Verdict.FAIL,
    score=0.9,
    ci=(0.7, 1.0),
    p_holm=0.001,
    reason="beyond_threshold",
    reason_text="beyond threshold: interval above 0.1, Holm p = 0.001",
    warnings=(
        "underpowered: with 80% power this suite catches only gaps of "
        "0.5 or more, over twice the threshold 0.1; add seeds.",
        "a warning that stays",
    ),
)
UNDECIDED = result(
    "friction_point_gap",
    Verdict.INCONCLUSIVE,
    score=0.2,
    ci=(0.0, math.inf),
    threshold=1.0,
    seeds_needed=64,
    reason="not_shown_within_threshold",
    reason_text="inconclusive: the data cannot show the gap within the threshold "
    "(upper bound inf ≥ 1, Holm p = 0.5)",
)
DIAGNOSIS = (
    "no output text in 40 record(s); 24 span(s) named answer with llm.completion: not "
    "read; see docs/attributes.md#foreign-conventions-the-processor-reads."
)
SILENT = result(
    "refusal_gap",
    Verdict.NO_SIGNAL,
    score=0.0,
    ci=None,
    signal="output text",
    signal_records=0,
    reason="no_signal",
    reason_text="no signal: no record carries output text; " + DIAGNOSIS,
    diagnosis=DIAGNOSIS,
)


def evaluation(*results: MetricResult, allow_inconclusive: bool = False) -> Evaluation:
    config = GateConfig(
        bootstrap_samples=100, permutation_samples=99, allow_inconclusive=allow_inconclusive
    )
    return Evaluation(
        generated_at="2027-01-15T08:00:00+00:00",
        variant_count=40,
        results=tuple(results),
        observations=(),
        config=config,
        seeds=20,
    )
